"""``dgym study summary``: per condition and per task, how people (and agents) did.

Reads run folders (a study's results folder holds one per participant; an
agent's ``dgym run`` folder works too) and counts every finished episode
(status ``done``): solved rate, gave up / timed out, median time and steps,
and how often ``pdb`` was used. The condition is the header's
``config.condition`` (a study writes it); an agent's episodes are labelled
with their policy and agent.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dgym_tui.core.errors import first_line
from dgym_tui.episode.trajectory import TrajectoryError, read_trajectory
from dgym_tui.launch.open import UsageError
from dgym_tui.runs.index import episode_labels, find_runs
from dgym_tui.runs.report import markdown_table
from dgym_tui.runs.runner import STATUS_FILE, TRAJECTORY_FILE, read_status
from dgym_tui.study.plan import STUDY_FILE, outcome

log = logging.getLogger(__name__)
FORMATS = ("markdown", "csv")
ALL_TASKS = "(all)"
COLUMNS = ("condition", "task", "episodes", "solved", "solved_rate", "gave_up", "timed_out",
           "median_time_s", "median_steps", "used_pdb", "pdb_calls")


@dataclass(frozen=True)
class StudyEpisode:
    """One finished episode: its condition, participant, task and what happened."""

    condition: str
    participant: str
    task: str
    outcome: str
    time: float
    steps: int
    pdb_calls: int


def load_study_episodes(paths: list[str | Path]) -> list[StudyEpisode]:
    """Read the finished episodes of the run folders in ``paths``.

    Args:
        paths: results folders of studies or run folders of ``dgym run``.

    Returns:
        One :class:`StudyEpisode` per episode whose status is ``done``; one whose
        trajectory is missing or unreadable is counted from its status (no pdb
        calls; the condition from the results folder's ``study.json``).

    Raises:
        UsageError: a path holds no run folder.
    """
    episodes = []
    for path in map(Path, paths):
        runs = find_runs([path])
        if not runs:
            raise UsageError(f"{path}: no run folder (no */{STATUS_FILE}); give a study's "
                             "results folder or a dgym run folder")
        for run in runs:
            for folder in sorted(p.parent for p in run.glob(f"*/{STATUS_FILE}")):
                status = read_status(folder)
                if status is None or status.state != "done":
                    continue
                try:
                    traj = read_trajectory(folder / TRAJECTORY_FILE)
                except TrajectoryError as exc:
                    # finished all the same (e.g. given up during the start, which wrote
                    # no trajectory before): counted from its status
                    log.warning("counted from its status only: %s", first_line(exc))
                    episodes.append(StudyEpisode(study_condition(run), run.name, status.task,
                                                 outcome(status), status.wall_time,
                                                 status.steps, 0))
                    continue
                config = traj.header.get("config") or {}
                agent, model, _ = episode_labels(traj.header)
                condition = str(config.get("condition") or
                                (agent if model == "-" else f"{agent} × {model}"))
                pdb = sum(1 for step in traj.steps
                          if (step.get("action") or {}).get("name") == "pdb")
                episodes.append(StudyEpisode(condition, str(config.get("participant") or run.name),
                                             status.task, outcome(status), status.wall_time,
                                             status.steps, pdb))
    return episodes


def study_condition(run: Path) -> str:
    """The condition of a study's run folder from its results folder's ``study.json``
    (``"unknown"`` when there is none or it cannot be read)."""
    try:
        held = json.loads((run.parent / STUDY_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return "unknown"
    return str(held.get("condition") or "unknown") if isinstance(held, dict) else "unknown"


def summarize(episodes: list[StudyEpisode]) -> list[dict[str, Any]]:
    """Rows of :data:`COLUMNS`: per condition one row per task, then an ``(all)`` row."""
    rows = []
    for condition in sorted({e.condition for e in episodes}):
        mine = [e for e in episodes if e.condition == condition]
        for task in [*sorted({e.task for e in mine}), ALL_TASKS]:
            group = [e for e in mine if task in (ALL_TASKS, e.task)]
            solved = sum(e.outcome == "solved" for e in group)
            rows.append({
                "condition": condition, "task": task, "episodes": len(group), "solved": solved,
                "solved_rate": round(solved / len(group), 4),
                "gave_up": sum(e.outcome == "gave up" for e in group),
                "timed_out": sum(e.outcome == "timed out" for e in group),
                "median_time_s": round(statistics.median(e.time for e in group), 1),
                "median_steps": statistics.median(e.steps for e in group),
                "used_pdb": sum(e.pdb_calls > 0 for e in group),
                "pdb_calls": sum(e.pdb_calls for e in group)})
    return rows


def render_summary(rows: list[dict[str, Any]], fmt: str = "markdown") -> str:
    """The rows as a markdown table or CSV.

    Raises:
        UsageError: unknown format.
    """
    if fmt == "markdown":
        return markdown_table("study summary", list(COLUMNS),
                         [[str(row[c]) for c in COLUMNS] for row in rows]) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()
    raise UsageError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def participant_episodes(study: Any, participant: str) -> list[StudyEpisode]:
    """The participant's finished episodes of ``study``, in their queue order.

    Args:
        study: the :class:`~dgym_tui.study.plan.Study`.
        participant: the pseudonymous id.

    Returns:
        One :class:`StudyEpisode` per finished task (none before the first).
    """
    from dgym_tui.study.plan import run_folder, task_queue

    run = run_folder(study, participant)
    if not any(run.glob(f"*/{STATUS_FILE}")):
        return []
    found = {e.task: e for e in load_study_episodes([run])}
    return [found[name] for name in task_queue(study, participant) if name in found]
