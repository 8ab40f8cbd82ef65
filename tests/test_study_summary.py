"""``dgym study summary``: counts per condition and task against generated run folders."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from dgym_tui.cli.main import main
from dgym_tui.episode.trajectory import TrajectoryWriter
from dgym_tui.runs.runner import STATUS_FILE, TRAJECTORY_FILE, TaskStatus
from dgym_tui.study.summary import load_study_episodes, summarize


def write_human(run: Path, participant: str, condition: str, task: str, reason: str,
                resolved: bool, actions: list[str], wall: float) -> None:
    folder = run / task
    writer = TrajectoryWriter(folder / TRAJECTORY_FILE, fsync=False)
    writer.write_header({
        "task": {"name": f"mini/{task}", "benchmark": "mini"},
        "config": {"policy": "human", "mode": "human", "participant": participant,
                   "condition": condition},
        "tools": [], "environment": {}, "started_at": "2026-01-01T00:00:00Z",
        "initial": {"observation": "tests fail"}})
    for n, name in enumerate(actions, 1):
        action = {"name": name, "arguments": {}}
        writer.write_step({"step": n, "actor": "human", "decision": "manual", "proposed": action,
                           "action": action, "observation": "ok"})
    writer.write_footer({"resolved": resolved, "score": int(resolved), "max_score": 1,
                         "steps": len(actions), "reason": reason, "patch": ""})
    writer.close()
    status = TaskStatus(task=task, resolved=resolved, steps=len(actions), reason=reason,
                        wall_time=wall)
    (folder / STATUS_FILE).write_text(json.dumps(status.to_dict()))


def make_results(root: Path) -> None:
    # condition "all": P1 solves a with pdb, gives up b; P2 solves a without pdb, times out b
    write_human(root / "all" / "P1", "P1", "all", "a", "submitted", True,
                ["pdb", "pdb", "rewrite", "submit"], 100)
    write_human(root / "all" / "P1", "P1", "all", "b", "gave up", False, ["view", "pdb"], 50)
    write_human(root / "all" / "P2", "P2", "all", "a", "submitted", True, ["rewrite", "submit"], 300)
    write_human(root / "all" / "P2", "P2", "all", "b", "timed out", False, ["view"], 600)
    # condition without-pdb: one submitted but wrong
    write_human(root / "nopdb" / "P3", "P3", "without-pdb", "a", "submitted", False,
                ["view", "rewrite", "submit"], 200)
    (root / "all" / "P2" / "c").mkdir()  # an unfinished task: not counted
    (root / "all" / "P2" / "c" / STATUS_FILE).write_text(json.dumps(
        TaskStatus(task="c", state="interrupted").to_dict()))


def test_counts_match_the_trajectories(tmp_path):
    make_results(tmp_path)
    rows = summarize(load_study_episodes([tmp_path / "all", tmp_path / "nopdb"]))
    by = {(r["condition"], r["task"]): r for r in rows}
    assert set(by) == {("all", "a"), ("all", "b"), ("all", "(all)"),
                       ("without-pdb", "a"), ("without-pdb", "(all)")}
    a = by[("all", "a")]
    assert (a["episodes"], a["solved"], a["solved_rate"], a["median_time_s"], a["median_steps"],
            a["used_pdb"], a["pdb_calls"]) == (2, 2, 1.0, 200.0, 3, 1, 2)
    b = by[("all", "b")]
    assert (b["solved"], b["gave_up"], b["timed_out"], b["used_pdb"]) == (0, 1, 1, 1)
    total = by[("all", "(all)")]
    assert (total["episodes"], total["solved"], total["solved_rate"], total["pdb_calls"]) == (
        4, 2, 0.5, 3)
    nopdb = by[("without-pdb", "a")]
    assert (nopdb["solved"], nopdb["used_pdb"], nopdb["gave_up"]) == (0, 0, 0)


def test_cli_markdown_csv_and_bad_folder(tmp_path, capsys):
    make_results(tmp_path)
    assert main(["study", "summary", str(tmp_path / "all"), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["task"], r["solved"]) for r in rows] == [("a", "2"), ("b", "0"), ("(all)", "2")]
    assert main(["study", "summary", str(tmp_path / "all"), str(tmp_path / "nopdb")]) == 0
    out = capsys.readouterr().out
    assert "| without-pdb | a | 1 | 0 |" in out and "| all | (all) | 4 | 2 | 0.5 |" in out
    assert main(["study", "summary", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "no run folder" in err and len(err.strip().splitlines()) == 1


def test_a_finished_task_without_its_trajectory_is_counted(tmp_path):
    """A task finished without a readable trajectory (a give-up during the episode's start
    wrote none before) is counted from its status, in its study's condition."""
    make_results(tmp_path)
    (tmp_path / "all" / "study.json").write_text(json.dumps({"id": "s", "condition": "all"}))
    (tmp_path / "all" / "P1" / "b" / TRAJECTORY_FILE).unlink()
    episodes = load_study_episodes([tmp_path / "all"])
    given_up = [e for e in episodes if e.participant == "P1" and e.task == "b"]
    assert [(e.condition, e.outcome, e.time, e.steps, e.pdb_calls) for e in given_up] == [
        ("all", "gave up", 50, 2, 0)]
    assert len(episodes) == 4
