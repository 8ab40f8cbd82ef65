"""BwrapTerminal: the LocalTerminal contract inside bubblewrap, plus what the sandbox forbids.

Skips only when bwrap is missing or unusable on this machine (fails under
CI=true, where scripts/setup_system.sh installs it).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from process_helpers import alive, wait_dead

from dgym_tui.core.terminals import TerminalError, cleanup
from dgym_tui.core.terminals.bwrap import BwrapTerminal


@pytest.fixture
def repo(tmp_path, bwrap_ready):
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "secret").mkdir()
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_app.py").write_text(
        "from app import add\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    (root / "secret" / "answer.txt").write_text("the gold patch\n")
    (root / "hidden.txt").write_text("hidden text\n")
    return root


@pytest.fixture
def term(repo):
    t = BwrapTerminal(readonly=["tests/test_app.py"], ignored=["secret", "hidden.txt"])
    t.start(str(repo))
    yield t
    t.close()


def test_run_output_exit_code_cwd_env(term, repo):
    res = term.run("pwd; echo out; echo err >&2; echo $GREETING; exit 3", env={"GREETING": "hi"})
    assert res.exit_code == 3 and not res.timed_out
    assert res.output.splitlines() == [os.path.realpath(repo), "out", "err", "hi"]
    assert term.to_relative(os.path.join(term.workdir, "app.py")) == "app.py"


def test_not_started_and_missing_folder(tmp_path, bwrap_ready):
    t = BwrapTerminal()
    with pytest.raises(TerminalError, match="not started"):
        t.run("true")
    with pytest.raises(TerminalError, match="does not exist"):
        t.start(str(tmp_path / "missing"))


def test_pytest_runs_and_the_working_copy_is_writable(term, repo):
    res = term.run(f"{sys.executable} -m pytest -q -p no:cacheprovider tests")
    assert res.exit_code == 1 and "1 failed" in res.output
    assert term.run("echo new > notes.txt && mkdir -p sub && echo x > sub/y").exit_code == 0
    assert (repo / "notes.txt").read_text() == "new\n"


def test_readonly_files_cannot_be_changed(term, repo):
    original = (repo / "tests" / "test_app.py").read_text()
    for cmd in ("echo hacked > tests/test_app.py", "rm tests/test_app.py",
                "mv tests/test_app.py tests/moved.py",
                f"{sys.executable} -c \"import os; os.truncate('tests/test_app.py', 0)\""):
        res = term.run(cmd)
        assert res.exit_code != 0, f"{cmd!r} succeeded: {res.output}"
    assert (repo / "tests" / "test_app.py").read_text() == original
    assert term.run("echo ok > tests/notes.txt").exit_code == 0


def test_ignored_paths_are_masked(term, repo):
    res = term.run("cat hidden.txt; cat secret/answer.txt; echo END")
    assert "hidden text" not in res.output and "gold patch" not in res.output
    assert res.output.rstrip().endswith("END")
    assert term.run("ls -A secret").output == ""  # an empty folder
    assert term.run("echo x > hidden.txt").exit_code != 0
    assert (repo / "hidden.txt").read_text() == "hidden text\n"  # the host copy is intact


def test_hidden_host_paths_are_masked(repo, monkeypatch):
    """A folder the sandbox shows (here a PATH entry) must not show the hidden paths inside it
    (e.g. the original repository's ignored files next to a virtualenv); a folder it does not
    show stays invisible as a whole."""
    import shutil
    import tempfile

    outside = tempfile.mkdtemp(dir="/var/tmp", prefix="dgym-orig-")  # not under /tmp's tmpfs
    unseen = tempfile.mkdtemp(dir="/var/tmp", prefix="dgym-unseen-")
    try:
        with open(os.path.join(outside, "gold.patch"), "w") as f:
            f.write("the fix\n")
        os.mkdir(os.path.join(outside, "private"))
        with open(os.path.join(outside, "private", "key"), "w") as f:
            f.write("secret key\n")
        with open(os.path.join(unseen, "other.txt"), "w") as f:
            f.write("unseen text\n")
        for path in (outside, unseen):
            os.chmod(path, 0o755)
        monkeypatch.setenv("PATH", f"{outside}{os.pathsep}{os.environ['PATH']}")
        t = BwrapTerminal(hidden=[os.path.join(outside, "gold.patch"),
                                  os.path.join(outside, "private")])
        t.start(str(repo))
        try:
            res = t.run(f"cat {outside}/gold.patch {outside}/private/key; ls {outside}")
            unseen_res = t.run(f"cat {unseen}/other.txt")
        finally:
            t.close()
        assert "the fix" not in res.output and "secret key" not in res.output
        assert "gold.patch\nprivate" in res.output  # masked, not removed
        assert unseen_res.exit_code != 0 and "unseen text" not in unseen_res.output
    finally:
        shutil.rmtree(outside)
        shutil.rmtree(unseen)


def test_system_is_read_only_no_network_no_devices(term):
    for cmd in ("touch /usr/dgym-probe", "touch /etc/dgym-probe",
                f"{sys.executable} -c \"import os, stat; "
                "os.mknod('blk', 0o644 | stat.S_IFBLK, os.makedev(7, 0))\"",
                f"{sys.executable} -c \"import socket; "
                "socket.create_connection(('1.1.1.1', 80), timeout=2)\"",
                "mount -t tmpfs none /mnt"):
        res = term.run(cmd)
        assert res.exit_code != 0, f"{cmd!r} succeeded: {res.output}"
    assert not os.path.exists("/usr/dgym-probe")
    assert term.run("ls /run; ls /var/run/docker.sock").exit_code != 0  # no daemon socket


def test_own_pid_namespace_and_private_tmp(term):
    import tempfile

    with tempfile.NamedTemporaryFile(dir="/tmp", prefix="dgym-probe-") as host_file:
        res = term.run(f"echo $$; ls /proc | grep -c '^[0-9]'; ls -A {host_file.name}")
    lines = res.output.split()
    assert int(lines[0]) < 10 and int(lines[1]) < 10  # only the sandbox's processes
    assert "No such file" in res.output  # the host's /tmp is not visible


def test_timeout_kills_children_too(term, repo):
    res = term.run("sleep 300 & echo $! > bg.pid; sleep 301", timeout=0.5)
    assert res.timed_out and res.exit_code is None
    # bg.pid holds the pid inside the sandbox; no host process may carry on sleeping.
    assert not _sleepers(term.tag)


def _sleepers(tag: str) -> list[int]:
    from dgym_tui.core.terminals import procs

    time.sleep(0.2)
    return [p.pid for p in procs.tagged_processes(tag)]


def test_spawn_pdb_round_trip_and_close(term):
    child = term.spawn(f"{sys.executable} -m pdb app.py")
    child.expect(r"\(Pdb\) ", timeout=20)
    child.sendline("b add")
    child.expect(r"\(Pdb\) ")
    assert "Breakpoint 1 at" in child.before and "app.py:1" in child.before
    child.sendline("p 6 * 7")
    child.expect(r"\(Pdb\) ")
    assert child.before.strip() == "42"
    child.sendline("!open('hidden.txt').read()")
    child.expect(r"\(Pdb\) ")
    assert "hidden text" not in child.before
    pid = child.pid
    child.close(force=True)
    assert not child.isalive()
    assert wait_dead(pid)


def test_spawn_from_a_short_lived_thread_survives_the_thread(term):
    """--die-with-parent follows the starting thread: starting from a worker thread that
    ends must not kill the session."""
    box = []
    worker = threading.Thread(target=lambda: box.append(term.spawn("cat")))
    worker.start()
    worker.join()
    child = box[0]
    time.sleep(0.3)
    child.sendline("still here")
    child.expect("still here", timeout=10)
    assert child.isalive()


def test_close_kills_spawned_and_daemons_and_unregisters(term):
    assert term in cleanup.live()
    child = term.spawn("setsid sleep 301 & sleep 300")
    time.sleep(0.3)
    pids = _sleepers(term.tag)
    assert len(pids) >= 2
    term.close()
    for pid in pids + [child.pid]:
        assert wait_dead(pid)
    assert term not in cleanup.live()
    assert term.scratch == ""


def test_sigterm_to_owner_kills_the_sandbox(repo):
    script = textwrap.dedent(f"""
        import time
        from dgym_tui.core.terminals.bwrap import BwrapTerminal
        t = BwrapTerminal()
        t.start({str(repo)!r})
        child = t.spawn("trap '' HUP; echo armed; sleep 300")
        child.expect("armed", timeout=20)
        print(child.pid, flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        assert alive(pid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert wait_dead(pid)


def test_sigkill_of_owner_ends_the_sandbox_too(repo):
    """No handler runs on SIGKILL: --die-with-parent and the PID namespace end everything."""
    script = textwrap.dedent(f"""
        import time
        from dgym_tui.core.terminals.bwrap import BwrapTerminal
        t = BwrapTerminal()
        t.start({str(repo)!r})
        child = t.spawn("setsid sh -c 'sleep 302' & echo armed; sleep 300")
        child.expect("armed", timeout=20)
        print(t.tag, flush=True)
        time.sleep(120)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        tag = proc.stdout.readline().strip()
        time.sleep(0.3)
        assert _sleepers(tag)
        proc.kill()
        proc.wait(timeout=20)
    finally:
        proc.kill()
    deadline = time.monotonic() + 5
    while _sleepers(tag) and time.monotonic() < deadline:
        pass
    assert not _sleepers(tag)


def test_repo_env_on_bwrap_eval_pdb_and_masked_ignored_file(make_repo, make_env, fast_pytest,
                                                            bwrap_ready):
    from dgym_tui.core.types import ToolCall

    repo = make_repo({
        "app.py": "def add(a, b):\n    return a - b\n",
        "test_app.py": "from app import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
        "gold.patch": "the fix\n",
        ".debugignore": "gold.patch\n",
        ".debugreadonly": "test_app.py\n",
    })
    env = make_env(repo, terminal="bwrap", entrypoint=f"{fast_pytest} test_app.py")
    first = env.reset()
    assert first.max_score == 1 and first.score == 0
    r = env.step(ToolCall("pdb", {"command": "b app.py:2"}))
    assert not r.error and ("app.py", 2) in r.breakpoints
    r = env.step(ToolCall("pdb", {"command": "c"}))
    assert r.frame == ("app.py", 2)
    r = env.step(ToolCall("pdb", {"command": "!print(repr(open('gold.patch').read()))"}))
    # ignored files are not copied into the working copy at all
    assert "the fix" not in r.observation and "No such file" in r.observation
    r = env.step(ToolCall("pdb", {"command": "!open('test_app.py', 'w').write('')"}))
    assert "Read-only file system" in r.observation
    assert (env.workspace.root / "test_app.py").read_text().startswith("from app")
    r = env.step(ToolCall("rewrite", {"path": "app.py", "start": 2, "end": 2,
                                      "new_code": "    return a + b"}))
    r = env.step(ToolCall("eval", {}))
    assert r.resolved and r.score == 1


def test_dgym_run_with_terminal_bwrap(tmp_path, bwrap_ready):
    """`-p terminal=bwrap` runs a benchmark task in the sandbox to its end."""
    import json

    from dgym_tui.cli.main import main as dgym

    out = tmp_path / "out"
    assert dgym(["run", "mini_solution", "-p", "tasks=[bank_account]", "-p", "terminal=bwrap",
                 "--no-progress", "--output", str(out)]) == 0
    [task] = json.loads((out / "summary.json").read_text())
    assert task["resolved"] is True and task["error"] == ""
    header = json.loads(next((out).rglob("*.jsonl")).read_text().splitlines()[0])
    assert "bwrap" in json.dumps(header)


def test_path_entries_under_tmp_stay_visible_read_only(repo, tmp_path, monkeypatch):
    """A virtualenv or checkout under /tmp (its interpreter, a PATH entry) still runs the
    tests inside the sandbox, read-only; the rest of the host's /tmp stays hidden."""
    tools = tmp_path / "venv" / "bin"
    tools.mkdir(parents=True)
    (tools / "dgym-probe-tool").write_text("#!/bin/sh\necho probe-tool-ran\n")
    (tools / "dgym-probe-tool").chmod(0o755)
    (tmp_path / "other.txt").write_text("host file")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    t = BwrapTerminal()
    t.start(str(repo))
    try:
        res = t.run(f"dgym-probe-tool; ls -A {tmp_path / 'other.txt'}; touch {tools}/x")
    finally:
        t.close()
    assert "probe-tool-ran" in res.output
    assert "No such file" in res.output  # only the PATH entry came back, not its parent
    assert "Read-only file system" in res.output


def test_activated_virtualenv_runs_the_tests(make_repo, make_env, monkeypatch, bwrap_ready):
    """Issue 26 bug 5: a virtualenv activated in the user's shell, kept in the repository and
    ignored there, is the Python inside the sandbox (its interpreter and site-packages), as
    with the local terminal; nothing else of the repository shows."""
    import venv

    repo = make_repo({"app.py": "x = 1\n", ".debugignore": ".venv/\n", "notes.txt": "original\n"})
    venv.create(repo / ".venv", with_pip=False, symlinks=True)
    [site] = (repo / ".venv" / "lib").glob("python3*/site-packages")
    (site / "venvprobe.py").write_text("WHERE = 'the virtualenv'\n")
    monkeypatch.setenv("VIRTUAL_ENV", str(repo / ".venv"))
    monkeypatch.setenv("PATH", f"{repo / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    env = make_env(repo, terminal="bwrap", entrypoint="true")
    env.reset()
    res = env.terminal.run("python -c 'import sys, venvprobe; print(sys.prefix, venvprobe.WHERE)';"
                           f" cat {repo}/notes.txt; echo $VIRTUAL_ENV")
    lines = res.output.splitlines()
    assert lines[0] == f"{os.path.realpath(repo / '.venv')} the virtualenv", res.output
    assert "original" not in res.output  # the original repository itself stays hidden
    assert lines[-1] == str(repo / ".venv")


def test_allow_list_shows_exact_python_folders_never_home_or_the_repository(tmp_path):
    """PATH folders are shown as they are, never the top-level home folder holding them
    (siblings stay hidden); a top-level home folder is shown only when it is a Python prefix
    (a virtualenv); nothing inside the original repository but a virtualenv."""
    from dgym_tui.core.terminals.allowlist import python_folders

    home = tmp_path / "home"
    tools = home / "src" / "tools" / "bin"
    scripts = home / "bin"
    venv = home / ".venv"
    repo = tmp_path / "repo"
    repo_bin = repo / "node_modules" / ".bin"
    repo_venv = repo / ".venv"
    for folder in (tools, scripts, venv / "bin", repo_bin, repo_venv / "bin"):
        folder.mkdir(parents=True)
    for v in (venv, repo_venv):
        (v / "pyvenv.cfg").write_text("home = /usr/bin\n")
    path = os.pathsep.join(map(str, (tools, scripts, venv / "bin", repo_bin, repo_venv / "bin",
                                     "relative/bin")))
    shown = python_folders({"PATH": path}, str(home), excluded=[str(repo)])
    assert str(tools) in shown and str(home / "src") not in shown and str(home) not in shown
    assert str(scripts) not in shown  # a top-level home folder that is no Python prefix
    assert str(venv) in shown and str(repo_venv) in shown
    assert str(repo_bin) not in shown and str(repo) not in shown
    assert not any(p.startswith("relative") for p in shown)


def test_allow_list_lists_an_unchanged_path_folder_once_and_sees_a_new_python(
        tmp_path, monkeypatch):
    """Each terminal start asks for the Python folders: a PATH folder's names are listed
    once while the folder stays unchanged (listing /usr/bin at every start cost ~3 ms),
    and a python added to it later is found at the next start."""
    import glob

    from dgym_tui.core.terminals import allowlist

    home, tools, prefix = tmp_path / "home", tmp_path / "tools" / "bin", tmp_path / "py"
    for folder in (home, tools, prefix / "bin", prefix / "lib" / "python3.99"):
        folder.mkdir(parents=True)
    long_ago = time.time() - 60
    os.utime(tools, (long_ago, long_ago))  # settled: its names may be kept
    listed = []
    real_glob = glob.glob

    def counting(pattern, *args, **kwargs):
        listed.append(pattern)
        return real_glob(pattern, *args, **kwargs)

    monkeypatch.setattr(glob, "glob", counting)
    environ = {"PATH": str(tools)}
    first = allowlist.python_folders(environ, str(home))
    assert str(tools) in first and str(prefix) not in first
    assert allowlist.python_folders(environ, str(home)) == first
    assert listed.count(os.path.join(str(tools), "python*")) == 1
    (tools / "python3").symlink_to(prefix / "bin" / "python3.99")
    (prefix / "bin" / "python3.99").write_text("")
    assert allowlist.python_folders(environ, str(home)) == sorted([*first, str(prefix)])
    assert listed.count(os.path.join(str(tools), "python*")) == 2


def test_without_a_host_view_bwrap_still_runs(repo, monkeypatch):
    """Where a user and mount namespace of our own cannot be made (Ubuntu's AppArmor lets only
    bwrap make user namespaces), commands still run, without the read-only view of the host."""
    from dgym_tui.core.terminals import bwrap, hostview

    def refuse(*args, **kwargs):
        raise OSError(1, "unshare(CLONE_NEWUSER) failed")

    monkeypatch.setattr(hostview, "read_only_host", refuse)
    bwrap.host_view_works.cache_clear()
    try:
        assert bwrap.host_view_works() is False
        t = BwrapTerminal()
        t.start(str(repo))
        try:
            assert t.run("echo ran").output == "ran\n"
        finally:
            t.close()
    finally:
        monkeypatch.undo()
        bwrap.host_view_works.cache_clear()
    assert bwrap.host_view_works() is True


def test_a_probe_that_hangs_is_killed_with_its_children(tmp_path, monkeypatch, bwrap_ready):
    """A probe sandbox past its time is killed with everything it started: ``subprocess.run``
    killed bwrap alone, and a child of a bwrap killed as it starts waits forever for it
    (here a stand-in for bwrap that starts a child and hangs)."""
    from dgym_tui.core.terminals import bwrap

    child = tmp_path / "child.pid"
    fake = tmp_path / "bwrap"
    fake.write_text(f"#!/bin/sh\nsleep 300 &\necho $! > {child}\nwait\n")
    fake.chmod(0o755)
    monkeypatch.setattr(bwrap.shutil, "which", lambda name: str(fake))
    monkeypatch.setattr(bwrap, "PROBE_TIMEOUT", 1.0)
    bwrap.bwrap_problem.cache_clear()
    try:
        assert bwrap.bwrap_problem().startswith("bwrap does not start: ")
    finally:
        monkeypatch.undo()
        bwrap.bwrap_problem.cache_clear()
    pid = int(child.read_text())
    assert wait_dead(pid, 5.0), "the probe's child outlived it"


def test_the_probe_ends_on_its_own_without_the_parent_death_signal(bwrap_ready):
    """The probe (``true``) does not ask for bwrap's parent-death signal: with it, this
    process killed while bwrap starts left bwrap's child waiting forever for its parent
    (bubblewrap's open issue #633); without it bwrap finishes the probe by itself."""
    from dgym_tui.core.terminals import bwrap

    argv = bwrap._probe_argv("bwrap", None)
    assert "--die-with-parent" not in argv and argv[-1] == "true"
    assert "--die-with-parent" in bwrap.isolation(None)  # a real sandbox's still has it
