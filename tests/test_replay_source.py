"""Replay rebuilds the source at every step from the trajectory alone (issue 10 item 2)."""

from __future__ import annotations

import json

from dgym_tui.core.types import ToolCall
from dgym_tui.episode.trajectory import SCHEMA_VERSION, read_trajectory
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.replay_model import ReplayModel

CODE = "def mean(xs):\n    total = sum(xs)\n    return total / len(xs[1:])\n"
FIXED = "def mean(xs):\n    total = sum(xs)\n    return total / len(xs)\n"
TESTS = "from code import mean\n\n\ndef test_mean():\n    assert mean([1, 3]) == 2\n"
NOTES = "first\n"
ENTRYPOINT = "python -m pytest -q -p no:cacheprovider test_code.py"


def _record(open_repo, repo, path):
    """Fix code.py with rewrite, change notes.txt from code run under pdb, apply the fix
    to the original (`w` in the app), then end the episode."""
    session = open_repo(repo, trajectory=path, name="mean", max_steps=10, entrypoint=ENTRYPOINT,
                        tools=("view", "rewrite", "pdb", "eval"))
    with session.env as env:
        session.start()
        session.act(ToolCall("view", {"path": "code.py"}))
        session.act(ToolCall("rewrite", {"path": "code.py", "start": 3,
                                         "new_code": "    return total / len(xs)\n"}))
        session.act(ToolCall("pdb", {"command": "!open('notes.txt', 'a').write('second\\n')"}))
        session.act(ToolCall("rewrite", {"path": "new.py", "new_code": "x = 1\n"}))
        assert sorted(env.apply_to_source()) == ["code.py", "new.py", "notes.txt"]
        session.finish("quit")


def test_replay_after_apply_shows_the_recorded_code(make_repo, open_repo, tmp_path):
    repo = make_repo({"code.py": CODE, "test_code.py": TESTS, "notes.txt": NOTES})
    path = tmp_path / "t.jsonl"
    _record(open_repo, repo, path)
    assert (repo / "code.py").read_text() == FIXED  # the original holds the fix now
    traj = read_trajectory(path)
    assert traj.header["schema_version"] == SCHEMA_VERSION == 2
    assert "patch" not in traj.steps[0] and traj.steps[1]["originals"] == {"code.py": CODE}
    assert traj.steps[2]["originals"] == {"notes.txt": NOTES}  # changed under pdb
    assert traj.steps[3]["originals"] == {"new.py": None}
    model = ReplayModel(traj)
    assert model.unavailable == ""
    assert [model.source_at("code.py", n) for n in range(5)] == [CODE, CODE, FIXED, FIXED, FIXED]
    assert [model.source_at("notes.txt", n) for n in range(5)] == [NOTES] * 3 + [
        NOTES + "second\n"] * 2
    assert [model.source_at("new.py", n) for n in (0, 3, 4)] == [None, None, "x = 1\n"]
    assert model.source_at("test_code.py", 4) == TESTS  # never changed: the original, checked
    assert model.files() == ["code.py", "new.py", "notes.txt", "test_code.py"]
    # an unchanged file edited after the recording is refused, not shown as recorded
    (repo / "test_code.py").write_text(TESTS + "# edited later\n")
    assert model.source_at("test_code.py", 0) is None
    # a changed file never needs the original: it may be gone altogether
    (repo / "code.py").unlink()
    assert model.source_at("code.py", 1) == CODE and model.source_at("code.py", 2) == FIXED


async def test_old_schema_trajectory_is_read_but_its_source_is_refused(make_repo, open_repo, tmp_path):
    repo = make_repo({"code.py": CODE, "test_code.py": TESTS, "notes.txt": NOTES})
    path = tmp_path / "t.jsonl"
    _record(open_repo, repo, path)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    header = {k: v for k, v in records[0].items() if k not in ("files", "readonly_files")}
    steps = [{k: v for k, v in r.items() if k not in ("patch", "originals")} for r in records[1:]]
    old = tmp_path / "v1.jsonl"
    old.write_text("".join(json.dumps(r) + "\n" for r in [dict(header, schema_version=1), *steps]))
    model = ReplayModel(read_trajectory(old))
    assert len(model) == 4 and model.source_at("code.py", 2) is None
    assert "schema version 1" in model.unavailable
    assert "code.py" in model.files()  # the changed files are still listed
    app = DgymApp(replay=model)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("dollar_sign")
        await pilot.pause()
        assert "recorded without file contents" in str(app.source_view.placeholder)
    app.close_session()


def test_changes_applied_mid_session_move_the_start(make_repo, open_repo, tmp_path):
    """`w` in the middle of an episode: later patches are against the applied version."""
    repo = make_repo({"code.py": CODE, "test_code.py": TESTS})
    path = tmp_path / "t.jsonl"
    done = FIXED + "# done\n"
    session = open_repo(repo, trajectory=path, name="mean", max_steps=10, entrypoint=ENTRYPOINT,
                        tools=("view", "rewrite", "eval"))
    with session.env as env:
        session.start()
        session.act(ToolCall("rewrite", {"path": "code.py", "start": 3,
                                         "new_code": "    return total / len(xs)\n"}))
        assert env.apply_to_source() == ["code.py"] and env.patch() == ""
        session.act(ToolCall("rewrite", {"path": "code.py", "start": 4, "end": 3,
                                         "new_code": "# done\n"}))
        session.act(ToolCall("view", {"path": "code.py"}))
        session.finish("quit")
    traj = read_trajectory(path)
    assert [s.get("originals") for s in traj.steps] == [{"code.py": CODE},
                                                       {"code.py": FIXED}, None]
    model = ReplayModel(traj)
    assert [model.source_at("code.py", n) for n in range(4)] == [CODE, FIXED, done, done]
