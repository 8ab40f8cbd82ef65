"""LocalTerminal: real subprocesses, timeouts, bounded output, pexpect sessions, cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc

import pytest
from process_helpers import alive, wait_dead

from dgym_tui.core.terminals import TerminalError, cleanup
from dgym_tui.core.terminals.local import LocalTerminal


@pytest.fixture
def term(tmp_path):
    (tmp_path / "app.py").write_text("def add(a, b):\n    return a - b\n")
    t = LocalTerminal()
    t.start(str(tmp_path))
    yield t
    t.close()


def test_run_output_exit_code_cwd_env(term, tmp_path):
    res = term.run("pwd; echo out; echo err >&2; echo $GREETING; exit 3", env={"GREETING": "hi"})
    assert res.exit_code == 3 and not res.timed_out
    assert res.output.splitlines() == [os.path.realpath(tmp_path), "out", "err", "hi"]
    assert term.to_relative(os.path.join(term.workdir, "app.py")) == "app.py"
    assert term.to_relative("/elsewhere/app.py") is None


def test_commands_get_the_allow_listed_environment(term, monkeypatch):
    """local keeps the sandbox's allow-list plus where the host user's files are: no API key,
    no ``CI`` (it changes pytest's output), the host's ``HOME``."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("LC_TIME", "C")
    out = term.run("env").output
    names = {line.split("=", 1)[0] for line in out.splitlines()}
    assert "sk-host-secret" not in out and "CI" not in names
    assert f"HOME={os.environ['HOME']}" in out.splitlines() and "LC_TIME" in names


def test_not_started_and_missing_folder(tmp_path):
    t = LocalTerminal()
    with pytest.raises(TerminalError, match="not started"):
        t.run("true")
    with pytest.raises(TerminalError, match="does not exist"):
        t.start(str(tmp_path / "missing"))


def test_a_closed_terminal_starts_nothing_until_started_again(term, tmp_path):
    """close() may come from another thread (Ctrl-C in dgym run) just before a step runs
    its command: that command must not start (it would outlive the stop)."""
    term.close()
    marker = tmp_path / "ran"
    with pytest.raises(TerminalError, match="closed"):
        term.run(f"touch {marker}")
    with pytest.raises(TerminalError, match="closed"):
        term.spawn(f"touch {marker}")
    time.sleep(0.2)
    assert not marker.exists()
    term.start(str(tmp_path))
    assert term.run("echo again").output == "again\n"


def test_timeout_kills_children_too(term, tmp_path):
    pidfile = tmp_path / "bg.pid"
    start = time.monotonic()
    res = term.run(f"sleep 300 & echo $! > {pidfile}; sleep 301", timeout=0.5)
    assert res.timed_out and res.exit_code is None
    assert time.monotonic() - start < 5
    assert wait_dead(int(pidfile.read_text()))


def test_large_output_is_truncated_with_bounded_memory(term):
    tracemalloc.start()
    try:
        res = term.run("head -c 10000000 /dev/zero | tr '\\0' x; echo; echo THE-END",
                       max_output=65536)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.exit_code == 0
    assert res.truncated_bytes == 10_000_000 + len("\nTHE-END\n") - 65536
    assert res.output.rstrip().endswith("THE-END") and "output truncated" in res.output
    assert peak < 4 * 1024 * 1024


def test_spawn_pdb_round_trip_and_close(term):
    child = term.spawn(f"{sys.executable} -m pdb app.py")
    child.expect(r"\(Pdb\) ", timeout=20)
    child.sendline("b add")
    child.expect(r"\(Pdb\) ")
    assert "Breakpoint 1 at" in child.before and "app.py:1" in child.before
    child.sendline("p 6 * 7")
    child.expect(r"\(Pdb\) ")
    assert child.before.strip() == "42"
    pid = child.pid
    child.close(force=True)
    assert not child.isalive()
    assert wait_dead(pid)


def test_close_kills_spawned_and_unregisters(term):
    assert term in cleanup.live()
    child = term.spawn("sleep 300")
    pid = child.pid
    assert child.isalive()
    term.close()
    assert wait_dead(pid)
    assert term not in cleanup.live()


def _owner_script(tmp_path, extra: str = "") -> str:
    return textwrap.dedent(f"""
        import time
        from dgym_tui.core.terminals.local import LocalTerminal
        t = LocalTerminal()
        t.start({str(tmp_path)!r})
        child = t.spawn("trap '' HUP; echo armed; sleep 300")  # outlives the pty's hangup
        child.expect("armed", timeout=20)
        {extra}
        print(child.pid, flush=True)
        time.sleep(120)
    """)


def _sigterm_owner(script: str, tmp_path) -> tuple[int, int]:
    """Start an owner process, SIGTERM it; return (its exit status, its child's pid).
    Its temporary folders go to ``tmp_path / "tmp"`` (an owner that cleans nothing up
    leaves them there, not in /tmp)."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})
    try:
        pid = int(proc.stdout.readline())
        assert alive(pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    finally:
        proc.kill()
    return proc.returncode, pid


def test_sigterm_to_owner_kills_its_processes(tmp_path):
    code, pid = _sigterm_owner(_owner_script(tmp_path), tmp_path)
    assert code == -signal.SIGTERM
    assert wait_dead(pid)
    assert os.listdir(tmp_path / "tmp") == []  # its scratch and plugin folders went too


def test_without_registration_the_process_would_leak(tmp_path):
    """Control for the test above: the same child survives when nothing cleans up."""
    code, pid = _sigterm_owner(_owner_script(
        tmp_path, "from dgym_tui.core.terminals import cleanup; cleanup.unregister(t)"), tmp_path)
    try:
        assert code == -signal.SIGTERM
        assert not wait_dead(pid, seconds=1.0)
    finally:
        os.killpg(pid, signal.SIGKILL)


def test_close_from_another_thread_ends_a_running_command(tmp_path):
    """close() while run() waits (e.g. the app quitting mid-eval) ends the command;
    run() returns normally instead of raising."""
    import threading

    from dgym_tui.core.terminals.local import LocalTerminal

    terminal = LocalTerminal()
    terminal.start(str(tmp_path))
    results = []
    worker = threading.Thread(target=lambda: results.append(terminal.run("sleep 30", timeout=60)))
    worker.start()
    import time

    deadline = time.monotonic() + 10
    while not terminal._children and time.monotonic() < deadline:
        time.sleep(0.01)
    terminal.close()
    worker.join(timeout=20)
    assert not worker.is_alive()
    assert results and results[0].exit_code != 0
