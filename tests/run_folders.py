"""Write ``dgym run`` output folders for tests and benches, with the real trajectory writer.

``write_episode`` writes what :func:`dgym_tui.runs.runner.run_task` leaves in an episode
folder (header, steps, footer, ``patch.diff``, ``status.json``); ``write_run``
writes many of them plus ``summary.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from dgym_tui.episode.trajectory import TrajectoryWriter
from dgym_tui.runs.runner import PATCH_FILE, STATUS_FILE, TRAJECTORY_FILE, TaskStatus

BUGGY = "def add(a, b):\n    return a - b\n"


def patch_for(task: str, fixed: bool = True) -> str:
    """A git-style diff of ``calc.py`` (BUGGY -> a fix, or -> another wrong line)."""
    new = "    return a + b" if fixed else f"    return a * b  # {task}"
    return ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n"
            f"@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+{new}\n")


def write_episode(run: Path, task: str, *, resolved: bool = True, steps: int = 3,
                  agent: str = "debug_agent", llm: str = "stub", benchmark: str = "tiny",
                  finished: bool = True, status: bool = True, fixed: bool | None = None,
                  episode: str | None = None) -> Path:
    """Write one episode folder ``run/<episode or task>``; return it.

    ``finished=False`` leaves the trajectory without a footer and no status
    (an episode still running); ``status=False`` leaves out ``status.json`` only.
    """
    folder = run / (episode or task)
    writer = TrajectoryWriter(folder / TRAJECTORY_FILE, fsync=False)
    writer.write_header({
        "task": {"name": task, "description": f"fix {task}", "benchmark": benchmark},
        "config": {"benchmark": {"name": benchmark}, "policy": "agent", "agent": agent,
                   "llm": llm, "mode": "auto", "max_steps": 10},
        "tools": [], "environment": {"terminal": "local"}, "started_at": "2026-01-01T00:00:00Z",
        "initial": {"observation": f"task {task}: the tests fail"},
        "prompt": {"system": "You debug Python.", "task": f"Fix {task}: add() subtracts."},
        "files": {f"f{i}.py": "0" * 40 for i in range(20)}})
    patch = patch_for(task, resolved if fixed is None else fixed)
    for n in range(1, steps + 1):
        action = {"name": "submit" if n == steps else "view",
                  "arguments": {} if n == steps else {"path": "calc.py"}}
        writer.write_step({"step": n, "actor": "agent", "decision": "auto", "proposed": action,
                           "action": action, "observation": f"observation {n}",
                           "reasoning": f"thinking {n}",
                           "result": {"observation": f"observation {n}"},
                           "usage": {"prompt_tokens": 100, "completion_tokens": 10,
                                     "cost": 0.001},
                           **({"patch": patch, "originals": {"calc.py": BUGGY}} if n == 1 else {})})
    if not finished:
        writer.close()
        return folder
    footer = {"resolved": resolved, "score": int(resolved), "max_score": 1, "steps": steps,
              "patch": patch, "reason": "submitted", "ended_at": "2026-01-01T00:01:00Z",
              "usage": {"prompt_tokens": 100 * steps, "completion_tokens": 10 * steps,
                        "cost": 0.001 * steps}, "wall_time": 1.5}
    writer.write_footer(footer)
    (folder / PATCH_FILE).write_text(patch, encoding="utf-8")
    if status:
        st = TaskStatus(task=task, resolved=resolved, score=int(resolved), max_score=1,
                        steps=steps, reason="submitted", prompt_tokens=100 * steps,
                        completion_tokens=10 * steps, cost=0.001 * steps, wall_time=1.5)
        (folder / STATUS_FILE).write_text(json.dumps(st.to_dict()), encoding="utf-8")
    return folder


def write_run(run: Path, count: int, **kwargs) -> Path:
    """Write ``count`` finished episodes ``t0000``.. (every third unresolved) and summary.json."""
    run.mkdir(parents=True, exist_ok=True)
    statuses = []
    for i in range(count):
        name = f"t{i:04d}"
        write_episode(run, name, resolved=i % 3 != 2, steps=2 + i % 5, **kwargs)
        statuses.append(json.loads((run / name / STATUS_FILE).read_text()))
    (run / "summary.json").write_text(json.dumps(statuses), encoding="utf-8")
    return run


def write_bad_episodes(run: Path) -> Path:
    """Add the bad input of a run folder to ``run``: ``live`` (running, its last line cut
    off), ``corrupt`` (line 3 is not JSON), ``newer`` / ``older`` (schema version 99 / 0,
    good status), ``junk`` (unreadable status, no trajectory), ``empty`` (empty trajectory); return ``run``."""
    # a run still writing: no status, the last line cut off mid-write
    live = write_episode(run, "live", finished=False, steps=2)
    with open(live / "trajectory.jsonl", "a") as f:
        f.write('{"type": "step", "step": 3, "act')
    # a corrupt file among good ones
    bad = write_episode(run, "corrupt", status=False)
    lines = (bad / "trajectory.jsonl").read_text().splitlines(keepends=True)
    lines[2] = "{not json\n"
    (bad / "trajectory.jsonl").write_text("".join(lines))
    # a newer and an older schema version than this dgym-tui reads, with a good status
    for name, version in (("newer", 99), ("older", 0)):
        folder = write_episode(run, name)
        text = (folder / "trajectory.jsonl").read_text().replace(
            '"schema_version": 2', f'"schema_version": {version}', 1)
        (folder / "trajectory.jsonl").write_text(text)
    # garbage status, no trajectory
    (run / "junk").mkdir()
    (run / "junk" / "status.json").write_text("[1, 2")
    # empty trajectory
    (run / "empty").mkdir()
    (run / "empty" / "trajectory.jsonl").write_text("")
    return run
