"""Replay mode: the model converts turns lazily, the app renders few of them, a
benchmark task whose scratch copy is gone still shows its source."""

from __future__ import annotations

import json
from pathlib import Path

from tui_helpers import ENTRYPOINT, FIX, records

from dgym_tui.core.types import ToolCall
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.replay_model import LazyTurns, ReplayModel
from dgym_tui.tui.widgets.transcript import MAX_SHOWN, Transcript


def _long_trajectory(open_repo, repo, tmp_path, pattern: str) -> Path:
    """A trajectory with one step per letter of ``pattern``: a copy of a recorded
    ``v``iew of calc.py, a ``w``rite (the rewrite that fixes it) or a ``r``ejected turn."""
    short = tmp_path / "short.jsonl"
    session = open_repo(repo, trajectory=short, name="calc", max_steps=10, entrypoint=ENTRYPOINT,
                        tools=("view", "rewrite", "eval"))
    session.start()
    session.act(ToolCall("view", {"path": "calc.py"}))
    session.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
    session.finish("quit")
    session.env.close()
    header, view, write, footer = records(short)
    kinds = {"v": view, "w": write,
             "r": dict(view, decision="rejected", action=None, result=None, note="no")}
    out = tmp_path / "long.jsonl"
    with out.open("w") as fh:
        fh.write(json.dumps(header) + "\n")
        for i, kind in enumerate(pattern):
            fh.write(json.dumps(dict(kinds[kind], step=i + 1)) + "\n")
        fh.write(json.dumps(dict(footer, steps=len(pattern))) + "\n")
    return out


def test_replay_model_converts_lazily(calc_repo, open_repo, tmp_path):
    traj = read_trajectory(_long_trajectory(open_repo, calc_repo, tmp_path, "w" + "rv" * 99 + "r"))
    model = ReplayModel(traj)
    try:
        turns = model.turns
        assert isinstance(turns, LazyTurns) and len(turns) == 200 and turns._cache == {}
        # The last step is a rejected turn: the result in effect is the previous step's.
        assert model.result_at(200) is turns[198].result
        assert model.result_at(200).observation == traj.result(199).observation
        assert len(turns._cache) <= 3
        shown = model.turns[:200][-MAX_SHOWN:]
        assert [t.index for t in shown] == list(range(176, 201))
        assert len(turns._cache) <= 3 + MAX_SHOWN
        assert turns[-1] is turns[199] and turns[5:7][0] is turns[5]
        # Re-applying rewrites up to the last step converts only the rewrite turn.
        assert "len(xs)\n" in model.source_at("calc.py", 200)
        assert "len(xs[1:])" in model.source_at("calc.py", 0)
        assert len(turns._cache) <= 4 + MAX_SHOWN
        assert [t.index for t in turns[:3]] == [1, 2, 3]
    finally:
        model.close()


async def test_long_replay_renders_few_turns_and_rewrites_lazily(calc_repo, open_repo, tmp_path):
    traj = _long_trajectory(open_repo, calc_repo, tmp_path, "vw" * 200)
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
        assert app.episode_screen.step_index == 399 and "#400 " not in transcript.text
    app.close_session()


async def test_transcript_folds_long_observations_and_expands_on_click(calc_repo, open_repo,
                                                                      tmp_path):
    traj = _long_trajectory(open_repo, calc_repo, tmp_path, "vw")
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
    from dgym_tui.launch.open import load_task, open_session

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
