"""Reviewed episodes as training data: preference pairs and the accepted episodes.

``dgym export --format preferences RUN_DIR...`` pairs, per task, every
accepted episode with every rejected one (verdicts from each run folder's
``reviews.jsonl``, :mod:`dgym_tui.runs.reviews`) and writes one JSON line per pair
in the conversational shape preference trainers read (e.g. TRL's DPO)::

    {"prompt": [messages both episodes start with],
     "chosen": [the accepted episode's messages after the prompt],
     "rejected": [the rejected episode's messages after the prompt],
     "tools": [schemas of the chosen episode],
     "meta": {"task", "chosen": {"run", "episode", "resolved", "patch", "note"},
              "rejected": {...}}}

Messages are those of the SFT export (:func:`dgym_tui.training.export.to_sft`): what the
agent saw and answered. Episodes marked ``needs-work`` or not reviewed are left out.
"""

from __future__ import annotations

import json
import os
from itertools import product
from typing import Any

from dgym_tui.episode.trajectory import TrajectoryError, read_trajectory
from dgym_tui.runs.apply import episode_patch
from dgym_tui.runs.index import EpisodeRow, index_runs
from dgym_tui.training.export import to_sft


def reviewed(paths: list[str | os.PathLike[str]], verdict: str) -> list[EpisodeRow]:
    """The episodes of run folders ``paths`` whose latest verdict is ``verdict``."""
    return [row for row in index_runs(paths) if row.verdict == verdict]


def _side(row: EpisodeRow) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    traj = read_trajectory(row.trajectory)
    conversation = to_sft(traj)
    try:
        patch = episode_patch(row.folder)[0]
    except TrajectoryError:
        patch = ""
    meta = {"run": str(row.run), "episode": row.episode, "resolved": row.resolved,
            "patch": patch, "note": row.note}
    return conversation["messages"], conversation.get("tools") or [], meta


def preference_pairs(paths: list[str | os.PathLike[str]]) -> list[dict[str, Any]]:
    """Chosen / rejected pairs per task from the reviews of run folders ``paths``.

    Returns:
        One dict per (accepted, rejected) pair of the same task, in the shape
        of the module docstring, by task name.

    Raises:
        TrajectoryError: a reviewed episode's trajectory cannot be read (the
            message names file and line).
    """
    rows = index_runs(paths)
    pairs = []
    tasks = sorted({row.task for row in rows})
    for task in tasks:
        chosen = [r for r in rows if r.task == task and r.verdict == "accept"]
        rejected = [r for r in rows if r.task == task and r.verdict == "reject"]
        for good, bad in product(chosen, rejected):
            good_messages, tools, good_meta = _side(good)
            bad_messages, _, bad_meta = _side(bad)
            shared = 0
            while (shared < min(len(good_messages), len(bad_messages)) - 1
                   and good_messages[shared] == bad_messages[shared]):
                shared += 1
            pairs.append({"prompt": good_messages[:shared], "chosen": good_messages[shared:],
                          "rejected": bad_messages[shared:], "tools": tools,
                          "meta": {"task": task, "chosen": good_meta, "rejected": bad_meta}})
    return pairs


def write_preferences(paths: list[str | os.PathLike[str]],
                      output: str | os.PathLike[str] | None = None) -> tuple[str, int]:
    """Export :func:`preference_pairs` as JSON lines.

    Returns:
        ``(text, pairs)``; the text is also written to ``output`` when given.

    Raises:
        TrajectoryError: as :func:`preference_pairs`.
        OSError: ``output`` cannot be written.
    """
    pairs = preference_pairs(paths)
    text = "".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs)
    if output is not None:
        with open(output, "w", encoding="utf-8") as f:
            f.write(text)
    return text, len(pairs)
