"""Review verdicts on a run's episodes: ``reviews.jsonl`` in the run folder.

One JSON object per line, appended and flushed (and fsynced) per verdict::

    {"type": "review", "schema_version": 1, "episode": "task-a",
     "verdict": "accept" | "reject" | "needs-work", "note": "...",
     "reviewer": "...", "time": "2026-01-01T00:00:00+00:00"}

``episode`` is the episode's folder name inside the run folder (a saved
session's trajectory file name). ``reviewer`` is the name the person gave
(``dgym-tui RUN_DIR --reviewer NAME``, ``$DGYM_REVIEWER``, or asked once by
the run browser), never the system's user name: "" when none was given. The file is
never rewritten: a later verdict on the same episode replaces the earlier one
when read (:func:`read_reviews`). Reading skips a half-written last line and
lines it cannot understand (a newer schema version, corrupt JSON).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

REVIEWS_FILE = "reviews.jsonl"
REVIEW_SCHEMA_VERSION = 1
VERDICTS = ("accept", "reject", "needs-work")


def append_review(run: str | os.PathLike[str], episode: str, verdict: str,
                  note: str = "", reviewer: str = "") -> dict[str, Any]:
    """Append one verdict to ``run/reviews.jsonl`` (created if missing).

    Args:
        run: the run folder.
        episode: the episode's folder name inside ``run``.
        verdict: one of :data:`VERDICTS`.
        note: free text.
        reviewer: who reviews (a name the person chose; "" when unknown).

    Returns:
        The record written.

    Raises:
        ValueError: unknown verdict, or an episode name that is not a plain folder name.
        OSError: the file cannot be written.
    """
    if verdict not in VERDICTS:
        raise ValueError(f"unknown verdict {verdict!r}; use one of {', '.join(VERDICTS)}")
    if not episode or "/" in episode or episode in (".", ".."):
        raise ValueError(f"bad episode name {episode!r}")
    record = {"type": "review", "schema_version": REVIEW_SCHEMA_VERSION, "episode": episode,
              "verdict": verdict, "note": note, "reviewer": reviewer.strip(),
              "time": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    path = Path(run) / REVIEWS_FILE
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(record, ensure_ascii=False) + "\n")
        f.flush()
        os.fsync(f.fileno())
    return record


def reviewer_name(given: str | None = None) -> str:
    """The reviewer's name: ``given`` (``--reviewer``), else ``$DGYM_REVIEWER``, else ""
    (then the run browser asks)."""
    return (given or os.environ.get("DGYM_REVIEWER") or "").strip()


def read_reviews(run: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """The latest verdict per episode of ``run/reviews.jsonl``; never raises.

    Returns:
        ``{episode: record}`` ({} when the file is missing or unreadable).
    """
    try:
        data = (Path(run) / REVIEWS_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    latest: dict[str, dict[str, Any]] = {}
    for line in data.split("\n")[:-1]:  # after the last newline: still being written
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if (isinstance(record, dict) and record.get("type") == "review"
                and record.get("schema_version") == REVIEW_SCHEMA_VERSION
                and record.get("verdict") in VERDICTS and isinstance(record.get("episode"), str)):
            latest[record["episode"]] = record
    return latest
