"""The run index: rows from run folders, bad input marked not raised, reviews, refresh."""

from __future__ import annotations

import json

import pytest
from run_folders import write_bad_episodes, write_episode, write_run

from dgym_tui.runs.index import RunIndex, find_runs, index_runs, is_run_folder, summarize
from dgym_tui.runs.reviews import REVIEWS_FILE, append_review, read_reviews


def test_rows_of_a_finished_run(tmp_path):
    run = write_run(tmp_path / "run", 3)
    rows = index_runs([run])
    assert [(r.task, r.resolved, r.steps, r.tokens) for r in rows] == [
        ("t0000", True, 2, 220), ("t0001", True, 3, 330), ("t0002", False, 4, 440)]
    row = rows[0]
    assert (row.benchmark, row.agent, row.model, row.state, row.reason, row.problem) == (
        "tiny", "debug_agent", "stub", "done", "submitted", "")
    assert row.cell("score") == "1/1" and row.cell("cost") == "0.0020"
    totals = summarize(rows)
    assert totals["episodes"] == 3 and totals["resolved"] == 2
    assert totals["success_rate"] == pytest.approx(2 / 3) and totals["mean_steps"] == 3


def test_folder_of_runs_and_empty_folders(tmp_path):
    write_run(tmp_path / "all" / "a", 2)
    write_run(tmp_path / "all" / "b", 1, agent="other")
    (tmp_path / "empty").mkdir()
    assert find_runs([tmp_path / "all"]) == [tmp_path / "all" / "a", tmp_path / "all" / "b"]
    rows = index_runs([tmp_path / "all", tmp_path / "empty", tmp_path / "missing"])
    assert [(r.run.name, r.agent) for r in rows] == [("a", "debug_agent"), ("a", "debug_agent"),
                                                     ("b", "other")]
    assert index_runs([tmp_path / "empty"]) == []
    assert not is_run_folder(tmp_path / "empty") and is_run_folder(tmp_path / "all")


def test_bad_input_is_marked_never_raised(tmp_path):
    run = write_bad_episodes(write_run(tmp_path / "run", 2))
    rows = {r.episode: r for r in index_runs([run])}
    assert len(rows) == 8
    assert (rows["live"].state, rows["live"].steps, rows["live"].tokens, rows["live"].problem) == (
        "running", 2, 220, "")
    assert rows["corrupt"].problem == "corrupt line 3"
    assert rows["newer"].problem.startswith("schema version 99")
    assert (rows["newer"].resolved, rows["newer"].steps) == (True, 3)  # from status.json
    assert rows["older"].problem == "schema version 0 (this dgym-tui reads 1-2)"
    assert rows["junk"].state == "unreadable" and "status.json unreadable" in rows["junk"].problem
    assert rows["empty"].problem == "empty trajectory"
    assert "corrupt line 3" in rows["corrupt"].cell("reason")
    assert summarize(list(rows.values()))["problems"] == 5


def test_reviews_append_and_latest_wins(tmp_path):
    run = write_run(tmp_path / "run", 2)
    append_review(run, "t0000", "reject", "wrong fix")
    append_review(run, "t0000", "accept", "ok after all")
    append_review(run, "t0001", "needs-work")
    with open(run / REVIEWS_FILE, "a") as f:
        f.write('{"type": "review", "schema_version": 1, "episode": "t0001", "verd')
    lines = [json.loads(x) for x in (run / REVIEWS_FILE).read_text().splitlines()[:3]]
    assert [x["verdict"] for x in lines] == ["reject", "accept", "needs-work"]
    assert lines[0]["schema_version"] == 1 and lines[0]["time"]
    reviews = read_reviews(run)
    assert reviews["t0000"]["note"] == "ok after all" and reviews["t0001"]["verdict"] == "needs-work"
    rows = index_runs([run])
    assert [(r.verdict, r.note) for r in rows] == [("accept", "ok after all"), ("needs-work", "")]
    with pytest.raises(ValueError, match="unknown verdict"):
        append_review(run, "t0000", "maybe")
    with pytest.raises(ValueError, match="bad episode"):
        append_review(run, "../x", "accept")


def test_refresh_rereads_only_changed_episodes(tmp_path, monkeypatch):
    run = write_run(tmp_path / "run", 3)
    index = RunIndex([run])
    assert index.refresh() is True
    import dgym_tui.runs.index as runs

    read = []
    real = runs.read_episode
    monkeypatch.setattr(runs, "read_episode", lambda r, e, **kw: read.append(e) or real(r, e, **kw))
    assert index.refresh() is False and read == []
    live = write_episode(run, "live", finished=False, steps=1)
    assert index.refresh() is True and read == ["live"]
    assert index.rows[0].steps == 1
    with open(live / "trajectory.jsonl", "a") as f:
        f.write(json.dumps({"type": "step", "step": 2, "actor": "agent", "decision": "auto",
                            "proposed": None, "action": None, "observation": "x"}) + "\n")
    assert index.refresh() is True and read == ["live", "live"] and index.rows[0].steps == 2
    append_review(run, "t0001", "accept")
    assert index.refresh() is True and read == ["live", "live"]
    assert index.rows[2].verdict == "accept"
