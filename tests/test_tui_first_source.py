"""The entrypoint's script in the app's first frame (issue 26, the first screen): read from
the original repository before the working copy exists, replaced by the working copy's
view when the copy is ready; never a file the working copy would hide or show otherwise.

The Pilot tests hold the reset (a gate before ``RepoEnv.reset``, the real one after it)
so that the view is read while no working copy exists."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest
from tui_helpers import CALC, SIZE, TESTS, screen_text, settle

from dgym_tui.core.env import RepoEnv
from dgym_tui.episode import entry_source
from dgym_tui.episode.entry_source import MAX_BYTES, entry_script, read_entry_script
from dgym_tui.episode.session import Session
from dgym_tui.tui.app import DgymApp

RUN = "import calc\n\nprint(calc.average([2, 4]))\n"


@pytest.mark.parametrize(("entrypoint", "script"), [
    ("python run_tests.py", "run_tests.py"),
    ("python3 -u -W ignore ./tools/run.py --fast", "tools/run.py"),
    ("PYTHONHASHSEED=0 /usr/bin/python3.11 -X dev run.py", "run.py"),
    ("python -m pytest -q", None),
    ("python -c 'print(1)'", None),
    ("pytest run_tests.py", None),
    ("cd sub && python run.py", None),
    ("python ../outside.py", None),
    ("python /etc/x.py", None),
    ("python data.txt", None),
    ("python __pycache__/x.py", None),
    ("python 'unclosed", None),
    ("python", None),
])
def test_entry_script_of_a_command(entrypoint, script):
    assert entry_script(entrypoint) == script


def test_the_script_is_read_as_the_working_copy_reads_it(make_repo):
    repo = make_repo({"run.py": "print('é')\n\x1b[31m\n", "pkg/main.py": "x = 1\n"})
    (repo / "bad.py").write_bytes(b"x = '\xff'\n")
    # the text as it is (the view strips the controls): data
    assert read_entry_script(str(repo), "python run.py", []) == ("run.py", "print('é')\n\x1b[31m\n")
    assert read_entry_script(str(repo), "python pkg/main.py", []) == ("pkg/main.py", "x = 1\n")
    assert read_entry_script(str(repo), "python bad.py", []) == ("bad.py", "x = '\ufffd'\n")


def test_nothing_the_working_copy_would_hide_or_show_otherwise(make_repo):
    repo = make_repo({"run.py": RUN, "secret/run.py": RUN, "big.py": "#" * (MAX_BYTES + 1),
                      "nul.py": "x\0y", "real/run.py": RUN})
    os.symlink("run.py", repo / "link.py")
    os.symlink("real", repo / "linked")
    os.mkfifo(repo / "fifo.py")
    root = str(repo)
    for entrypoint in ("python missing.py", "python link.py", "python linked/run.py",
                       "python big.py", "python nul.py", "python fifo.py", "python real"):
        assert read_entry_script(root, entrypoint, []) is None, entrypoint
    assert read_entry_script(root, "python run.py", None) is None  # rules unknown
    assert read_entry_script(root, "python run.py", ["run.py"]) is None
    assert read_entry_script(root, "python secret/run.py", ["secret/"]) is None
    (repo / ".debugignore").write_text("# hidden\nsecret\n")
    assert read_entry_script(root, "python secret/run.py", []) is None
    assert read_entry_script(root, "python run.py", []) is not None
    (repo / ".debugignore").write_text("*.py\n!/run.py\n")
    assert read_entry_script(root, "python real/run.py", []) is None
    assert read_entry_script(root, "python run.py", []) is not None
    os.remove(repo / ".debugignore")
    os.symlink("elsewhere", repo / ".debugignore")  # rules the copy reads through a link
    assert read_entry_script(root, "python run.py", []) is None


@pytest.mark.parametrize("rules", ["secret\n", "*.py\n!/run.py\n", "*.py\n!run.py\n",
                                   "/run.py\n", "real/\n!real/run.py\n", "**/run.py\n"])
def test_hidden_as_the_working_copy_hides(make_repo, rules):
    """The same answer as the working copy's own rules, file by file."""
    from dgym_tui.core.fs.workspace import Workspace

    files = ("run.py", "secret/run.py", "real/run.py", "real/deep/run.py")
    repo = make_repo({**dict.fromkeys(files, RUN), ".debugignore": rules})
    workspace = Workspace(repo)
    try:
        for rel in files:
            shown = read_entry_script(str(repo), f"python {rel}", []) is not None
            assert shown == (not workspace.is_ignored(rel)), (rules, rel)
    finally:
        workspace.cleanup()


def _gated_session(repo, tmp_path, entrypoint: str, name: str = "t") -> tuple[Session, threading.Event]:
    """A session whose reset waits for the returned event (then runs for real)."""
    env = RepoEnv(repo, entrypoint=entrypoint, task="Find the wrong division.")
    gate = threading.Event()
    reset = env.reset

    def gated_reset(on_copy=None):
        gate.wait(60)
        return reset(on_copy=on_copy)

    env.reset = gated_reset
    return Session(env, trajectory_path=tmp_path / f"{name}.jsonl", task_name="calc"), gate


@contextlib.asynccontextmanager
async def _running(session: Session, gate: threading.Event):
    """``(app, pilot)`` of the app on ``session``, its reset held until ``gate`` is set;
    the gate is set on the way out (a failed test too: the reset returns before the app
    closes the session, and nothing it started is left behind)."""
    app = DgymApp(session=session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            try:
                await pilot.pause()
                yield app, pilot
            finally:
                gate.set()
                await settle(app, pilot)
    finally:
        app.close_session()


async def _first_and_last(session: Session, gate: threading.Event) -> tuple:
    """((path, lines, title) shown before the reset, (path, screen text) once settled)."""
    from dgym_tui.tui.widgets.file_tree import FileTree

    async with _running(session, gate) as (app, pilot):
        view = app.source_view
        assert app.query_one(FileTree)._files == [] and not app.started  # no copy yet
        first = (view.path, list(view.lines), str(view.border_title or ""))
        gate.set()
        await settle(app, pilot)
        assert app.started
        return first, (view.path, screen_text(app))


async def test_the_first_frame_shows_the_entrypoints_script_then_the_working_copys_view(
        make_repo, tmp_path, monkeypatch):
    """Before the working copy exists the source view shows run_tests.py, read from the
    original; once the episode started the screen is the one the app showed without it
    (the working copy's first file, calc.py)."""
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS, "run_tests.py": RUN})
    first, last = await _first_and_last(*_gated_session(repo, tmp_path, "python run_tests.py"))
    assert first == ("run_tests.py", RUN.splitlines(), "run_tests.py")
    monkeypatch.setattr(entry_source, "entry_script", lambda entrypoint: None)
    before, last_without = await _first_and_last(
        *_gated_session(repo, tmp_path, "python run_tests.py", "u"))
    assert before == (None, [], "")  # as the app showed it until now
    assert last == last_without and last[0] == "calc.py"


async def test_a_hidden_script_is_not_shown_before_the_working_copy(make_repo, tmp_path):
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS, "run_tests.py": RUN,
                      ".debugignore": "run_tests.py\n"})
    first, _ = await _first_and_last(*_gated_session(repo, tmp_path, "python run_tests.py"))
    assert first == (None, [], "")


async def test_a_breakpoint_set_on_the_early_view_waits_and_runs_in_order(make_repo, tmp_path):
    """``b`` on the script shown before the copy: the command waits for the start and
    runs then, against the working copy's file of the same text."""
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS, "run_tests.py": RUN})
    session, gate = _gated_session(repo, tmp_path, "python run_tests.py")
    async with _running(session, gate) as (app, pilot):
        assert app.source_view.path == "run_tests.py"
        app.source_view.focus()
        await pilot.press("down", "down", "b")
        gate.set()
        await settle(app, pilot)
        assert ("run_tests.py", 3) in [(p, int(n)) for p, n in session.last.breakpoints]
