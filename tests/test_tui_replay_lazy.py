"""Replay converts only the turns it shows (opening a long trajectory stays fast)."""

from __future__ import annotations

import json

from test_tui_app import CALC, ENTRYPOINT, TESTS

from dgym_tui.core.types import ToolCall
from dgym_tui.trajectory import read_trajectory
from dgym_tui.tui.replay_model import LazyTurns, ReplayModel
from dgym_tui.tui.widgets.transcript import MAX_SHOWN


def _long_trajectory(make_repo, open_repo, tmp_path, steps: int = 200):
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS})
    short = tmp_path / "short.jsonl"
    session = open_repo(repo, trajectory=short, name="calc", max_steps=10, entrypoint=ENTRYPOINT,
                        tools=("view", "rewrite", "eval"))
    with session.env:
        session.start()
        session.act(ToolCall("view", {"path": "calc.py"}))
        session.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5,
                                         "new_code": "    return total / len(xs)"}))
        session.finish("quit")
    lines = [json.loads(line) for line in short.read_text().splitlines()]
    header, body, footer = lines[0], lines[1:-1], lines[-1]
    rejected = dict(body[0], decision="rejected", action=None, result=None, note="no")
    out = tmp_path / "long.jsonl"
    with out.open("w") as fh:
        fh.write(json.dumps(header) + "\n")
        for i in range(steps):
            record = [body[0], rejected][i % 2] if i else body[1]  # step 1 is the rewrite
            fh.write(json.dumps(dict(record, step=i + 1)) + "\n")
        fh.write(json.dumps(dict(footer, steps=steps)) + "\n")
    return read_trajectory(out)


def test_replay_model_converts_lazily(make_repo, open_repo, tmp_path):
    traj = _long_trajectory(make_repo, open_repo, tmp_path)
    model = ReplayModel(traj)
    try:
        turns = model.turns
        assert isinstance(turns, LazyTurns) and len(turns) == 200 and turns._cache == {}
        # The last step is a rejected turn: the result in effect is the previous step's.
        assert model.result_at(200) is turns[198].result
        assert model.result_at(200).observation == traj.result(199).observation
        assert len(turns._cache) <= 3
        shown = model.turns_until(200)[-MAX_SHOWN:]
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
