"""The live-terminal registry: closes at exit and on SIGTERM / SIGHUP, chains handlers."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

import pytest

from dgym_tui.core.terminals import cleanup


class Recorder:
    """A closable that records the order in which it was closed."""

    def __init__(self, name: str, log: list[str], fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    def close(self) -> None:
        self.log.append(self.name)
        if self.fail:
            raise RuntimeError(f"{self.name} refuses to close")


@pytest.fixture
def clean_registry():
    before = cleanup.live()
    for t in before:
        cleanup.unregister(t)
    yield
    for t in cleanup.live():
        cleanup.unregister(t)
    for t in before:
        cleanup.register(t)


def test_close_all_closes_newest_first_and_survives_errors(clean_registry, capsys):
    log: list[str] = []
    a, b, c = Recorder("a", log), Recorder("b", log, fail=True), Recorder("c", log)
    for t in (a, b, c):
        cleanup.register(t)
    cleanup.unregister(a)
    cleanup.register(a)  # registered again: now the newest, and not duplicated
    assert len(cleanup.live()) == 3
    cleanup.close_all()
    assert log == ["a", "c", "b"]  # newest first; b's error did not stop the others
    assert cleanup.live() == []
    assert "b refuses to close" in capsys.readouterr().err


def test_handlers_installed_from_main_thread(clean_registry):
    cleanup.register(Recorder("x", []))
    for signum in cleanup.HANDLED_SIGNALS:
        assert signal.getsignal(signum) is cleanup._on_signal


def _run_child(body: str, timeout: float = 30) -> subprocess.Popen:
    code = textwrap.dedent("""
        import os, signal, sys, time
        from dgym_tui.core.terminals import cleanup

        class Marker:
            def __init__(self, path): self.path = path
            def close(self):
                with open(self.path, "a") as f: f.write("closed\\n")
    """) + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_sigterm_closes_then_terminates_with_default_action(tmp_path):
    marker = tmp_path / "marker"
    proc = _run_child(f"""
        cleanup.register(Marker({str(marker)!r}))
        print("ready", flush=True)
        time.sleep(60)
    """)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    assert proc.returncode == -signal.SIGTERM
    assert marker.read_text() == "closed\n"  # closed once: the atexit hook found nothing left


def test_sigterm_chains_to_previous_python_handler(tmp_path):
    marker = tmp_path / "marker"
    proc = _run_child(f"""
        def previous(signum, frame):
            print("previous handler ran", flush=True)
            sys.exit(3)
        signal.signal(signal.SIGTERM, previous)
        cleanup.register(Marker({str(marker)!r}))
        print("ready", flush=True)
        time.sleep(60)
    """)
    assert proc.stdout.readline().strip() == "ready"
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 3
    assert "previous handler ran" in out
    assert marker.read_text() == "closed\n"


def test_normal_exit_closes_leftovers(tmp_path):
    marker = tmp_path / "marker"
    proc = _run_child(f"""
        cleanup.register(Marker({str(marker)!r}))
        keep = Marker({str(tmp_path / 'other')!r})
        cleanup.register(keep)
        cleanup.unregister(keep)
    """)
    proc.communicate(timeout=20)
    assert proc.returncode == 0
    assert marker.read_text() == "closed\n"
    assert not (tmp_path / "other").exists()


def test_register_from_worker_thread_keeps_atexit(tmp_path):
    marker = tmp_path / "marker"
    proc = _run_child(f"""
        import threading
        t = threading.Thread(target=cleanup.register, args=(Marker({str(marker)!r}),))
        t.start(); t.join()
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    """)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert marker.read_text() == "closed\n"


def test_sigterm_deletes_the_working_copy_and_stops_pdb(tmp_path):
    """A SIGTERM mid-episode leaves neither the working copy nor a pdb process."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "prog.py").write_text("x = 1\nprint(x)\n")
    proc = _run_child(f"""
        from dgym_tui import RepoEnv, ToolCall
        env = RepoEnv({str(repo)!r}, entrypoint="python prog.py")
        env.reset()
        r = env.step(ToolCall("pdb", {{"command": "n"}}))
        pdb_pid = env.tools["pdb"].session.child.pid
        print(env.workspace.folder, pdb_pid, flush=True)
        time.sleep(60)
    """)
    root, pdb_pid = proc.stdout.readline().split()
    import os
    from pathlib import Path

    assert Path(root).is_dir()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=20)
    assert not Path(root).exists()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pdb_pid), 0)
