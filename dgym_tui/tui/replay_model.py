"""What a recorded trajectory looked like at step N (UI-free helper for the replay view).

Breakpoints, the frame, the eval summary and the observation come straight
from the recorded ``StepResult`` of each step. The source at step N is
rebuilt from the trajectory alone (schema version 2): every step that changed
a file recorded the whole patch against the starting files plus the starting
text of the files it changed first (``originals``), so a changed file at step
N is the latest patch up to N applied to its starting text. This covers every
way a file changes (``rewrite``, code run under pdb, an editor between steps)
and never reads the original repository, which may hold the fix by now.

A file the episode never changed is read from the original repository (the
header's ``task.path``, or the benchmark task loaded again when its scratch
copy is gone) only when its git blob id still equals the one the header
recorded at the start; otherwise it is reported as not available.
Trajectories of schema version 1 recorded no patches: their source is not
available (:attr:`ReplayModel.unavailable` says why).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dgym_tui.core.fs.gitpatch import blob_id
from dgym_tui.core.fs.patches import FilePatch, PatchError, parse_patch, patched_text
from dgym_tui.core.types import StepResult
from dgym_tui.episode.records import Turn


def applied_notes(footer: Any, step: int | None = None) -> list[str]:
    """What a trajectory's footer says about applying the changes to the original
    repository (the app's ``w``): one line per apply (``"applied to the original after step
    4: calc.py"``), only those made after ``step`` when it is given. Malformed entries (the
    file is data) are left out; never raises."""
    entries = footer.get("applied_to_source") if isinstance(footer, dict) else None
    notes = []
    for entry in entries if isinstance(entries, list) else []:
        after = entry.get("after_step") if isinstance(entry, dict) else None
        files = entry.get("files") if isinstance(entry, dict) else None
        if not isinstance(after, int) or not isinstance(files, list) \
                or (step is not None and after != step):
            continue
        names = ", ".join(str(f) for f in files)
        notes.append(f"applied to the original repository after step {after} (w): {names}")
    return notes


class LazyTurns(Sequence):
    """The step records of a trajectory as session ``Turn`` objects, converted on access.

    Opening a long trajectory therefore converts only the turns that are
    shown (a slice is a view of the same records: it converts only its own
    items); each record is converted once.

    Args:
        records: the trajectory's step records (dicts), oldest first.
        cache: conversion cache (``id(record)`` -> Turn) shared by a sequence's slices.
    """

    def __init__(self, records: list[dict[str, Any]],
                 cache: dict[int, Turn] | None = None) -> None:
        self._records = records
        self._cache: dict[int, Turn] = {} if cache is None else cache

    def __len__(self) -> int:
        return len(self._records)

    def __getitem__(self, key: int | slice) -> Any:
        """A Turn (int key, negative allowed) or a lazy view (slice)."""
        if isinstance(key, slice):
            return LazyTurns(self._records[key], self._cache)
        record = self._records[key]
        turn = self._cache.get(id(record))
        if turn is None:
            turn = self._cache[id(record)] = Turn.from_record(record)
        return turn

    def record(self, index: int) -> dict[str, Any]:
        """The raw step record at 0-based ``index`` of this view (nothing converted)."""
        return self._records[index]


class ReplayModel:
    """Step-indexed view of a :class:`dgym_tui.episode.trajectory.Trajectory`.

    Step 0 is the state after ``reset``; step N (1-based) the state after the
    N-th recorded turn.

    Args:
        trajectory: the trajectory read by ``read_trajectory``.

    Attributes:
        turns: the recorded turns (``dgym_tui.episode.records.Turn``), oldest first, as a
            :class:`LazyTurns` sequence (each converted from its record when first used).
        source_root: the original repository folder, or None when it is gone.
        unavailable: why no source can be shown at all ("" when it can).
    """

    def __init__(self, trajectory: Any) -> None:
        self.trajectory = trajectory
        self.turns = LazyTurns(trajectory.steps)
        self.initial: StepResult = trajectory.initial
        header = trajectory.header
        task = header.get("task") or {}
        root = task.get("path")
        self.source_root: Path | None = Path(root) if root and Path(root).is_dir() else None
        self._task: Any = None
        self._searched = False
        self._start_ids: dict[str, str] = dict(header.get("files") or {})
        self._readonly = set(header.get("readonly_files") or ())
        self.unavailable = "" if "files" in header else (
            "this trajectory was recorded without file contents (schema version "
            f"{header.get('schema_version')}); record it again to replay its source")
        # steps whose record holds a patch (ascending), and the starting texts of changed files
        self._patch_steps = [i + 1 for i, r in enumerate(trajectory.steps) if "patch" in r]
        # path -> [(step, starting text)]: a start moves when the changes were applied
        self._originals: dict[str, list[tuple[int, str | None]]] = {}
        for number, record in enumerate(trajectory.steps, start=1):
            for rel, text in (record.get("originals") or {}).items():
                self._originals.setdefault(rel, []).append((number, text))
        self._patches: dict[int, dict[str, FilePatch] | None] = {}  # step -> parsed, lazily

    def __len__(self) -> int:
        return len(self.turns)

    @property
    def task_name(self) -> str:
        """The task's name from the header (``name`` or the source folder's name)."""
        task = self.trajectory.header.get("task") or {}
        return str(task.get("name") or Path(str(task.get("path", "replay"))).name)

    def result_at(self, step: int) -> StepResult:
        """StepResult in effect after ``step`` (0 = reset; a rejected turn keeps the previous)."""
        for number in range(min(step, len(self.turns)), 0, -1):  # back to a turn with a result
            if self.turns.record(number - 1).get("result"):
                return self.turns[number - 1].result
        return self.initial

    # -- files -----------------------------------------------------------------
    def _find_source(self) -> Path | None:
        """The recorded source folder, or the benchmark task's folder loaded again.

        Benchmark tasks (e.g. ``mini``) run on a scratch copy that is gone
        after the episode; the header names the benchmark and task, so the
        task is loaded again (a fresh copy of the same files).
        """
        if self.source_root is not None or self._searched:
            return self.source_root
        self._searched = True
        from dgym_tui.launch.open import task_from_header

        try:
            task, _ = task_from_header(self.trajectory.header)
        except Exception:  # noqa: BLE001  no such task here any more: source not available
            return None
        self._task = task  # keeps a scratch copy alive while the model lives
        self.source_root = task.path if task.path.is_dir() else None
        return self.source_root

    def _patch_at(self, step: int) -> dict[str, FilePatch] | None:
        """The files of the latest recorded patch at or before ``step`` (None: none yet)."""
        found = bisect_right(self._patch_steps, step)
        if not found:
            return None
        i = self._patch_steps[found - 1]
        if i not in self._patches:
            text = self.trajectory.steps[i - 1].get("patch") or ""
            try:
                self._patches[i] = {fp.path: fp for fp in parse_patch(text, skip_binary=True)}
            except PatchError:
                self._patches[i] = {}
        return self._patches[i]

    def files(self) -> list[str]:
        """Visible files at the start plus every file the episode created."""
        if self.unavailable:
            changed = set(self.initial.changed_files)
            for record in self.trajectory.steps:
                changed.update((record.get("result") or {}).get("changed_files") or ())
            return sorted(changed)
        return sorted(set(self._start_ids) | set(self._originals))

    def is_readonly(self, rel: str) -> bool:
        """True when ``rel`` was read-only in the recorded task."""
        return rel in self._readonly

    def source_at(self, rel: str, step: int) -> str | None:
        """Text of ``rel`` after ``step``, or None when it cannot be rebuilt honestly
        (the file does not exist then, is binary, or its original changed since)."""
        if self.unavailable:
            return None
        patch = self._patch_at(step)
        starts = self._originals.get(rel)
        if not starts:
            return None if patch is not None and rel in patch else self._unchanged(rel)
        # the start in effect: the latest recorded up to ``step`` (the first one when
        # the file changes only later)
        known = [text for number, text in starts if number <= step]
        start = known[-1] if known else starts[0][1]
        if patch is None or rel not in patch:
            return start  # unchanged up to ``step``, or changed back
        try:
            return patched_text(patch[rel], start)
        except PatchError:
            return None

    def _unchanged(self, rel: str) -> str | None:
        """A file the episode never changed, from the original if it is still the same."""
        expected = self._start_ids.get(rel)
        root = self._find_source()
        if expected is None or root is None:
            return None
        try:
            data = (root / rel).read_bytes()
        except OSError:
            return None
        if blob_id(data) != expected:
            return None  # changed since the recording: showing it would be a guess
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        """Release the benchmark task loaded again (its scratch copy), if any."""
        self._task = None
