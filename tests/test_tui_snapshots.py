"""Snapshot tests (pytest-textual-snapshot) of the main screen, the approve panel and replay.

Deterministic by construction: fixed terminal size, a real pytest run whose
timing text is stripped by the entrypoint, no temporary paths on screen, and
the spinner hidden because every worker has finished before the snapshot.
Regenerate with ``pytest tests/test_tui_snapshots.py --snapshot-update``.
"""

from __future__ import annotations

import pytest
from tui_helpers import CALC, FIX, TESTS, settle, stop_at, stub_agent

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.session import Session
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.replay_model import ReplayModel

SIZE = (160, 48)
# Runs pytest for real and pins the "in 0.12s" timing so the screen is stable. CI and
# BUILD_NUMBER are dropped: under them pytest stops truncating assertion explanations,
# which would make the screen differ between CI and a developer's terminal.
RUN_TESTS = """\
import os, re, subprocess, sys
env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}
p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
                   capture_output=True, text=True, env=env)
print(re.sub(r" in [0-9.]+s", " in 0.01s", p.stdout).rstrip())
sys.exit(p.returncode)
"""


@pytest.fixture
def snap_repo(make_repo):
    return make_repo({"calc.py": CALC, "test_calc.py": TESTS, "run_tests.py": RUN_TESTS,
                      ".debugreadonly": "run_tests.py\n"}, name="calc")


def _env(repo):
    return RepoEnv(repo, entrypoint="python run_tests.py", task="Make the tests pass.")


async def _settled(pilot):
    await settle(pilot.app, pilot)


def test_snapshot_main_screen(snap_compare, snap_repo, tmp_path):
    app = DgymApp(session=Session(_env(snap_repo), trajectory_path=tmp_path / "t.jsonl",
                                  task_name="calc"))
    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=_settled)
    finally:
        app.close_session()


def test_snapshot_main_screen_80x24(snap_compare, snap_repo, tmp_path):
    """80x24: the tree and the side column are hidden; source, console, status, footer."""
    app = DgymApp(session=Session(_env(snap_repo), trajectory_path=tmp_path / "t.jsonl",
                                  task_name="calc"))
    try:
        assert snap_compare(app, terminal_size=(80, 24), run_before=_settled)
    finally:
        app.close_session()


def test_snapshot_approve_panel(snap_compare, snap_repo, tmp_path, llm_server):
    llm_server.script([{"content": "The division looks wrong; stop there.",
                        "usage": {"prompt_tokens": 1200, "completion_tokens": 35},
                        "tool_calls": [{"name": "pdb", "id": "call_1",
                                        "arguments": {"command": "b calc.py:5"}}]}])
    session = Session(_env(snap_repo), stub_agent(llm_server), mode="approve",
                      trajectory_path=tmp_path / "t.jsonl", task_name="calc")
    app = DgymApp(session=session)
    try:
        assert snap_compare(app, terminal_size=SIZE, run_before=_settled)
    finally:
        app.close_session()


def test_snapshot_replay_view(snap_compare, snap_repo, tmp_path, open_repo):
    out = tmp_path / "recorded.jsonl"
    session = open_repo(snap_repo, trajectory=out, name="calc", entrypoint="python run_tests.py",
                        description="Make the tests pass.")
    env = session.env
    session.start()
    session.act(ToolCall("view", {"path": "calc.py"}))
    session.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
    session.act(ToolCall("eval", {}))
    session.finish("submitted")
    env.close()
    app = DgymApp(replay=ReplayModel(read_trajectory(out)))
    try:
        assert snap_compare(app, terminal_size=SIZE, press=["l", "l"])
    finally:
        app.close_session()


# A call chain deeper than the stack pane is tall: the pane shows only the repository's
# frames (the interpreter's own frames, whose paths differ between machines, are below).
DEEP = CALC + """\


def nested(xs, depth):
    if depth == 0:
        return average(xs)
    return nested(xs, depth - 1)


if __name__ == "__main__":
    print(nested([4, 8], 10))
"""


async def _stopped(pilot):
    """b calc.py:4, c: pdb stops in average() under ten nested() frames."""
    await stop_at(pilot.app, pilot, "calc.py:4")


@pytest.fixture
def deep_app(make_repo, tmp_path):
    repo = make_repo({"calc.py": DEEP}, name="deep")
    env = RepoEnv(repo, entrypoint="python calc.py", task="Find the wrong division.")
    app = DgymApp(session=Session(env, trajectory_path=tmp_path / "t.jsonl", task_name="deep"))
    yield app
    app.close_session()


class TestDebugPanesSnapshots:
    def test_stopped_160x48(self, snap_compare, deep_app):
        """Stopped at calc.py:4: ● and ▶ in the gutter; the Debug tab shows the locals
        (xs, total, x), the stack (average innermost, then the nested() calls) and the
        breakpoint with its hit count."""
        assert snap_compare(deep_app, terminal_size=SIZE, run_before=_stopped)

    def test_stopped_80x24(self, snap_compare, deep_app):
        """The same stop at 80x24 with the side column shown (]): the panes stay readable
        next to a narrower source view."""

        async def run_before(pilot):
            await _stopped(pilot)
            await pilot.press("right_square_bracket")
            await pilot.pause()

        assert snap_compare(deep_app, terminal_size=(80, 24), run_before=run_before)


def _preview_app(snap_repo, tmp_path, llm_server):
    """Approve mode; the agent proposes to rewrite calc.py line 5 into two lines."""
    llm_server.script([{"content": "Divide by the real length, guarding the empty list.",
                        "usage": {"prompt_tokens": 1200, "completion_tokens": 35},
                        "tool_calls": [{"name": "rewrite", "id": "call_1", "arguments": {
                            "path": "calc.py", "start": 5, "end": 5,
                            "new_code": "    if not xs:\n        return 0\n" + FIX + "\n"}}]}])
    session = Session(_env(snap_repo), stub_agent(llm_server), mode="approve",
                      trajectory_path=tmp_path / "t.jsonl", task_name="calc")
    return DgymApp(session=session)


class TestProposalPreviewSnapshots:
    def test_rewrite_preview_160x48(self, snap_compare, snap_repo, tmp_path, llm_server):
        """The proposed rewrite in the source pane: line 5 marked -, the three new lines +
        below it without numbers; the approve panel under it."""
        app = _preview_app(snap_repo, tmp_path, llm_server)
        try:
            assert snap_compare(app, terminal_size=SIZE, run_before=_settled)
        finally:
            app.close_session()

    def test_rewrite_preview_80x24(self, snap_compare, snap_repo, tmp_path, llm_server):
        """The same preview at 80x24."""
        app = _preview_app(snap_repo, tmp_path, llm_server)
        try:
            assert snap_compare(app, terminal_size=(80, 24), run_before=_settled)
        finally:
            app.close_session()
