"""Regression tests for problems found by using the app in a real terminal.

Each test failed before its fix: quitting waited for a running step's
timeout, a benchmark task offered to "apply" its patch to a scratch copy,
the side columns squeezed the source view to 14 columns at 100x30, a
replayed benchmark episode showed no source, the help did not say how to
rewrite code, unknown themes were silently ignored, a file given as the
repository was reported as missing, and the console kept the focus (so
``q`` typed a letter) after the episode ended.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from test_tui_app import ENTRYPOINT, settle

from dgym_tui.benchmarks.local import folder_task
from dgym_tui.core.env import RepoEnv
from dgym_tui.core.types import ToolCall
from dgym_tui.session import Session
from dgym_tui.trajectory import read_trajectory
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.cli import build_app, build_parser, main
from dgym_tui.tui.replay_model import ReplayModel
from dgym_tui.tui.widgets.transcript import MAX_SHOWN, Transcript

CALC = "def average(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs[1:])\n"
TESTS = "from calc import average\n\n\ndef test_single():\n    assert average([4]) == 4\n"


@pytest.fixture
def calc_repo(make_repo) -> Path:
    return make_repo({"calc.py": CALC, "test_calc.py": TESTS})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is gone for our purposes
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


async def test_quit_while_a_step_runs_is_prompt(calc_repo, tmp_path):
    out = tmp_path / "t.jsonl"
    env = RepoEnv(calc_repo, entrypoint=ENTRYPOINT, pdb_timeout=60)
    session = Session(env, trajectory_path=out, task_name="calc")
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.act(ToolCall("pdb", {"command": "p 6*7"}))
        await settle(app, pilot)
        pdb_tool = env.tools["pdb"]
        app.act(ToolCall("pdb", {"command": "p __import__('time').sleep(50)"}))
        await pilot.pause(1.0)
        assert app.busy
        pids = [p.pid for p in _pdb_children(pdb_tool)]
        assert pids
        start = time.monotonic()
        await pilot.press("q")
        for _ in range(400):  # the quit action closes the session, then exits the app
            if app._exit:
                break
            await pilot.pause(0.05)
        elapsed = time.monotonic() - start
    assert elapsed < 8, f"quit took {elapsed:.1f} s"
    assert env.workspace is None and env.terminal is None
    assert not any(_alive(pid) for pid in pids if pid)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    kinds = [r["type"] for r in lines]
    assert kinds[0] == "header" and kinds[-1] == "footer" and kinds.count("footer") == 1
    steps = [r for r in lines if r["type"] == "step"]
    assert steps[0]["action"]["arguments"] == {"command": "p 6*7"} and "42" in steps[0]["observation"]
    assert lines[-1]["reason"] == "quit"


def _pdb_children(pdb_tool) -> list:
    """The pexpect child of the pdb tool's session (the pdb process)."""
    session = getattr(pdb_tool, "session", None)
    child = getattr(session, "child", None)
    return [child] if child is not None else []


def test_benchmark_task_has_nothing_to_apply(tmp_path):
    app = build_app(build_parser().parse_args(["--task", "pagination", "--trajectory",
                                               str(tmp_path / "t.jsonl")]))
    try:
        assert app.can_apply is False
        assert app.action_available("apply_patch") is False
    finally:
        app.close_session()
    repo = tmp_path / "r"
    repo.mkdir()
    app = build_app(build_parser().parse_args([str(repo), "--trajectory",
                                               str(tmp_path / "u.jsonl")]))
    try:
        assert app.can_apply is True
    finally:
        app.close_session()


def test_main_usage_errors_found_in_the_terminal(tmp_path, capsys):
    afile = tmp_path / "afile.py"
    afile.write_text("x = 1\n")
    assert main([str(afile)]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and len(err.strip().splitlines()) == 1
    repo = tmp_path / "r"
    repo.mkdir()
    assert main([str(repo), "--theme", "no-such-theme"]) == 2
    err = capsys.readouterr().err
    assert "unknown theme 'no-such-theme'" in err and "dgym-dark" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.docker
def test_missing_docker_image_is_one_line_before_the_app(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    assert main([str(repo), "--terminal", "docker", "--image", "dgym-tui/no-such:image",
                 "--trajectory", str(tmp_path / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "Docker image dgym-tui/no-such:image not found" in err
    assert len(err.strip().splitlines()) == 1


async def test_narrow_terminal_keeps_the_source_view_usable(calc_repo, tmp_path):
    session = Session(RepoEnv(calc_repo, entrypoint=ENTRYPOINT),
                      trajectory_path=tmp_path / "t.jsonl")
    app = DgymApp(session=session)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.source_view.size.width >= 40
        assert app.query_one("#tree").size.width >= 16
    app.close_session()


async def test_help_shows_console_syntax_and_only_live_keys(calc_repo, tmp_path):
    session = Session(RepoEnv(calc_repo, entrypoint=ENTRYPOINT),
                      trajectory_path=tmp_path / "t.jsonl")
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        screen = app.screen
        assert type(screen).__name__ == "HelpScreen"
        rows = {key: text for _, section in screen.sections for key, text in section}
        assert any(k.startswith("rewrite path=") and "new_code=" in k for k in rows)
        assert "f" not in rows and "h" not in rows  # replay keys only in replay
        assert "rewrite path=" in app.pdb_console.input.placeholder
    app.close_session()


async def test_console_gives_focus_back_when_the_episode_ends(calc_repo, tmp_path):
    out = tmp_path / "t.jsonl"
    session = Session(RepoEnv(calc_repo, entrypoint=ENTRYPOINT), trajectory_path=out)
    app = DgymApp(session=session, ask_apply=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#console-input")
        box.focus()
        box.value = "submit"
        await pilot.press("enter")
        await settle(app, pilot)
        assert session.done
        assert app.focused is app.source_view
        await pilot.press("q")
        await pilot.pause()
    assert read_trajectory(out).footer["reason"] == "submitted"


async def test_entrypoint_that_cannot_run_is_reported(calc_repo, tmp_path):
    session = Session(RepoEnv(calc_repo, entrypoint="no_such_command_xyz --x"),
                      trajectory_path=tmp_path / "t.jsonl")
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        texts = [str(n.message) for n in app._notifications]
        assert any("entrypoint could not run" in t for t in texts), texts
    app.close_session()


def _long_trajectory(calc_repo: Path, tmp_path: Path, steps: int) -> Path:
    from dgym_tui.episode import open_session

    short = tmp_path / "short.jsonl"
    session = open_session(folder_task(calc_repo, entrypoint=ENTRYPOINT, name="calc"),
                           max_steps=10, trajectory=short)
    env = session.env
    session.start()
    session.act(ToolCall("view", {"path": "calc.py"}))
    session.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5,
                                     "new_code": "    return total / len(xs)"}))
    session.finish("quit")
    env.close()
    lines = [json.loads(line) for line in short.read_text().splitlines()]
    body = [r for r in lines if r["type"] == "step"]
    out = tmp_path / "long.jsonl"
    with out.open("w") as fh:
        fh.write(json.dumps(lines[0]) + "\n")
        for i in range(steps):
            fh.write(json.dumps(dict(body[i % len(body)], step=i + 1)) + "\n")
        fh.write(json.dumps(dict(lines[-1], steps=steps)) + "\n")
    return out


async def test_long_replay_renders_few_turns_and_rewrites_lazily(calc_repo, tmp_path):
    traj = _long_trajectory(calc_repo, tmp_path, 400)
    model = ReplayModel(read_trajectory(traj))
    app = DgymApp(replay=model)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        assert model._patches == {}  # no recorded patch read to show step 0
        await pilot.press("l", "l")
        assert list(model._patches) == [2] and app.source_view.lines[4] == "    return total / len(xs)"
        await pilot.press("dollar_sign")
        await pilot.pause()
        transcript = app.query_one(Transcript)
        # one Static draws the shown turns: no widget per step
        assert len(list(transcript.query("*"))) == 2
        assert len(transcript.shown) == MAX_SHOWN
        assert "#400 " in transcript.text and "#375 " not in transcript.text
        await pilot.press("h")
        assert app.step_index == 399 and "#400 " not in transcript.text
    app.close_session()


async def test_transcript_folds_long_observations_and_expands_on_click(calc_repo, tmp_path):
    traj = _long_trajectory(calc_repo, tmp_path, 2)
    app = DgymApp(replay=ReplayModel(read_trajectory(traj)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("dollar_sign")
        await pilot.pause()
        transcript = app.query_one(Transcript)
        assert "more lines (click)" in transcript.text
        transcript.toggle(2)
        await pilot.pause()
        assert "▼ fold" in transcript.text
    app.close_session()


def test_replay_of_a_benchmark_task_whose_copy_is_gone(tmp_path):
    from dgym_tui.episode import load_task, open_session

    out = tmp_path / "t.jsonl"
    session = open_session(load_task("mini/pagination"), trajectory=out)
    session.start()
    session.finish("quit")
    session.env.close()
    traj = read_trajectory(out)
    header = dict(traj.header)
    header["task"] = dict(header["task"], path=str(tmp_path / "gone"))
    traj.header = header
    model = ReplayModel(traj)
    try:
        assert model.source_at("paging.py", 0) is not None
        assert "test_pagination.py" in model.files()
        assert model.is_readonly("test_pagination.py")
    finally:
        model.close()
