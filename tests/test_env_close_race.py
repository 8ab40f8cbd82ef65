"""``RepoEnv.close()`` from another thread while ``reset()`` starts the episode.

The app does this when a person gives up during the start. The contract: the reset
returns or raises :class:`TerminalError` (nothing else), in bounded time, and what the
start made (working copy, scratch and support folders, processes) is gone afterwards.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time

import psutil
import pytest

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.terminals.base import TerminalError

#: Seconds a reset may take to end after close() (its eval is a tiny pytest).
JOIN = 60.0


def _reset_in_thread(env: RepoEnv) -> tuple[threading.Thread, dict]:
    box: dict = {}

    def run() -> None:
        try:
            env.reset()
            box["outcome"] = "returned"
        except Exception as exc:  # noqa: BLE001  the type is what is checked
            box["outcome"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


def _signal_copying(env: RepoEnv) -> threading.Event:
    """An event set when ``env``'s reset starts making its working copy."""
    copying = threading.Event()
    new_workspace = env._new_workspace

    def make():
        copying.set()
        return new_workspace()

    env._new_workspace = make
    return copying


def _left_behind(folder: str, me: psutil.Process) -> tuple[list[str], list[str]]:
    """Entries in the test's temporary folder and processes below this one, after a grace."""
    deadline = time.monotonic() + 5
    while True:
        files = sorted(os.listdir(folder))
        procs = [" ".join(p.cmdline())[:100] for p in me.children(recursive=True)
                 if p.status() != psutil.STATUS_ZOMBIE]
        if (not files and not procs) or time.monotonic() > deadline:
            return files, procs
        time.sleep(0.1)


@pytest.fixture
def own_tmp(tmp_path, monkeypatch) -> str:
    """Every temporary folder dgym makes in this process goes to an empty folder of the test's."""
    folder = tmp_path / "tmp"
    folder.mkdir(mode=0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return str(folder)


@pytest.mark.parametrize("kind", ["local", "bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def test_close_at_any_moment_of_the_start_raises_terminal_error_and_leaves_nothing(
        kind, make_repo, own_tmp, fast_pytest, request):
    """Close lands while the working copy is made, before, during and after the terminal's
    start, and during the first eval.

    Before the fix this raised FileNotFoundError / ValueError (close had removed the
    scratch folder under the start), and on bwrap the start looped for ever on a
    mount path close had emptied.
    """
    options = {}
    if kind == "bwrap":
        request.getfixturevalue("bwrap_ready")
    if kind == "docker":
        options["image"] = request.getfixturevalue("docker_ready")
    repo = make_repo({f"m{i}.py": "x = 1\n" for i in range(200)}
                     | {"test_a.py": "def test_a():\n    assert 1\n"})
    me = psutil.Process()
    outcomes = []
    for delay in (0.0, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2, 0.3, 0.45, 0.6):
        env = RepoEnv(repo, terminal=kind, entrypoint=f"{fast_pytest} test_a.py", **options)
        copying = _signal_copying(env)  # delays count from the working copy's start
        thread, box = _reset_in_thread(env)
        assert copying.wait(JOIN)
        time.sleep(delay)
        env.close()
        thread.join(JOIN)
        assert not thread.is_alive(), f"reset still running {JOIN} s after close (delay {delay})"
        outcome = box["outcome"]
        outcomes.append(outcome)
        assert outcome == "returned" or isinstance(outcome, TerminalError), (delay, outcome)
        assert env.workspace is None and env.terminal is None, delay
        assert _left_behind(own_tmp, me) == ([], []), delay
    # the delays reach into the start: most resets were cut off
    assert sum(isinstance(o, TerminalError) for o in outcomes) >= 5, outcomes


def test_close_in_the_middle_of_a_bwrap_start_waits_for_it(make_repo, own_tmp, fast_pytest,
                                                          bwrap_ready):
    """close() from another thread while bwrap builds its mounts: it waits for the start to
    end, then removes everything; the reset raises TerminalError. (Before, close emptied
    the terminal's paths under the start, which then looped on ``""``.)"""
    repo = make_repo({"test_a.py": "def test_a():\n    assert 1\n"})
    env = RepoEnv(repo, terminal="bwrap", entrypoint=f"{fast_pytest} test_a.py")
    made = env._make_terminal
    closer: list[threading.Thread] = []

    def make(workspace):
        terminal = made(workspace)
        build = terminal._static_args

        def static_args():
            closer.append(threading.Thread(target=env.close, daemon=True))
            closer[0].start()
            closer[0].join(1.0)  # with the fix it waits for the start: still alive here
            return build()

        terminal._static_args = static_args
        return terminal

    env._make_terminal = make
    thread, box = _reset_in_thread(env)
    thread.join(JOIN)
    assert not thread.is_alive(), "the start did not end"
    assert isinstance(box["outcome"], TerminalError), box
    closer[0].join(JOIN)
    assert not closer[0].is_alive()
    assert _left_behind(own_tmp, psutil.Process()) == ([], [])
