"""What a recorded trajectory looked like at step N (UI-free helper for the replay view).

Breakpoints, the frame, the eval summary and the observation come straight
from the recorded ``StepResult`` of each step. File contents are NOT recorded
in trajectories, so the source at step N is re-derived: the original
repository (the header's ``task.path``) is copied once into a scratch working
copy and the successful recorded ``rewrite`` actions are re-applied in order
with the real rewrite tool, lazily (only up to the step shown so far); the
text of each rewritten file is kept per step. A benchmark task whose scratch
folder is gone is loaded again from its benchmark.
Changes made by other means (e.g. a pdb ``!open(...).write``) are not
re-derived; when the original repository is missing the source is reported
as not available rather than guessed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dgym_tui.core.types import StepResult
from dgym_tui.records import Turn


class LazyTurns(Sequence):
    """The step records of a trajectory as session ``Turn`` objects, converted on access.

    Opening a long trajectory therefore converts only the turns that are
    shown (a slice converts only its own items); each is converted once.

    Args:
        records: the trajectory's step records (dicts), oldest first.
        start: first record of this view (0-based).
        stop: end of this view (exclusive); None: all records.
        cache: shared conversion cache (index -> Turn) of the full sequence.
    """

    def __init__(self, records: list[dict[str, Any]], start: int = 0, stop: int | None = None,
                 cache: dict[int, Any] | None = None) -> None:
        self._records = records
        self._start = start
        self._stop = len(records) if stop is None else min(stop, len(records))
        self._cache: dict[int, Any] = {} if cache is None else cache

    def __len__(self) -> int:
        return max(0, self._stop - self._start)

    def _turn(self, index: int) -> Turn:
        turn = self._cache.get(index)
        if turn is None:
            turn = Turn.from_record(self._records[index])
            self._cache[index] = turn
        return turn

    def __getitem__(self, key: int | slice) -> Any:
        """A Turn (int key, negative allowed) or a lazy view (slice with step 1)."""
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            return LazyTurns(self._records, self._start + start, self._start + max(start, stop),
                             self._cache)
        index = key + len(self) if key < 0 else key
        if not 0 <= index < len(self):
            raise IndexError(f"turn {key} out of range (0..{len(self) - 1})")
        return self._turn(self._start + index)

    def record(self, index: int) -> dict[str, Any]:
        """The raw step record at 0-based ``index`` of this view (nothing converted)."""
        return self._records[self._start + index]


class ReplayModel:
    """Step-indexed view of a :class:`dgym_tui.trajectory.Trajectory`.

    Step 0 is the state after ``reset``; step N (1-based) the state after the
    N-th recorded turn.

    Args:
        trajectory: the trajectory read by ``read_trajectory``.

    Attributes:
        turns: the recorded turns (``dgym_tui.records.Turn``), oldest first, as a
            :class:`LazyTurns` sequence (each converted from its record when first used).
        source_root: the original repository folder, or None when it is gone.
    """

    def __init__(self, trajectory: Any) -> None:
        self.trajectory = trajectory
        self.turns = LazyTurns(trajectory.steps)
        self.initial: StepResult = trajectory.initial
        task = trajectory.header.get("task") or {}
        root = task.get("path")
        self.source_root: Path | None = Path(root) if root and Path(root).is_dir() else None
        self._results: dict[int, StepResult] = {0: self.initial}  # step -> result, lazily
        self._workspace = None
        self._tool: Any = None
        self._task: Any = None
        self._applied = 0  # turns whose rewrites were re-applied
        self._versions: dict[str, tuple[list[int], list[str]]] | None = None

    def __len__(self) -> int:
        return len(self.turns)

    @property
    def task_name(self) -> str:
        """The task's name from the header (``name`` or the source folder's name)."""
        task = self.trajectory.header.get("task") or {}
        return str(task.get("name") or Path(str(task.get("path", "replay"))).name)

    def result_at(self, step: int) -> StepResult:
        """StepResult in effect after ``step`` (0 = reset; a rejected turn keeps the previous)."""
        step = max(0, min(step, len(self.turns)))
        walked = []
        while step not in self._results:  # back to the last turn with a result
            if self.turns.record(step - 1).get("result"):
                self._results[step] = self.turns[step - 1].result
                break
            walked.append(step)
            step -= 1
        result = self._results[step]
        for rejected in walked:
            self._results[rejected] = result
        return result

    def turns_until(self, step: int) -> Sequence[Any]:
        """Turns 1..``step`` (a lazy sequence: only the turns read are converted)."""
        return self.turns[:max(0, step)]

    # -- files -----------------------------------------------------------------
    def _find_source(self) -> Path | None:
        """The recorded source folder, or the benchmark task's folder loaded again.

        Benchmark tasks (e.g. ``mini``) run on a scratch copy that is gone
        after the episode; the header names the benchmark and task, so the
        task is loaded again (a fresh copy of the same files).
        """
        if self.source_root is not None:
            return self.source_root
        task = self.trajectory.header.get("task") or {}
        bench, name = task.get("benchmark"), task.get("task_name")
        if not (bench and name):
            return None
        try:
            from dgym_tui.benchmarks import get_benchmark

            loaded = get_benchmark(bench, **(task.get("benchmark_options") or {})).load(name)
        except Exception:  # noqa: BLE001  no such task here any more: source not available
            return None
        path = Path(loaded.path)
        self._task = loaded  # keeps a scratch copy alive while the model lives
        self.source_root = path if path.is_dir() else None
        return self.source_root

    def _ensure_workspace(self) -> bool:
        """Create the scratch working copy once (rewrites are re-applied lazily)."""
        if self._versions is not None:
            return self._workspace is not None
        self._versions = {}
        root = self._find_source()
        if root is None:
            return False
        from dgym_tui.core.tools.rewrite import RewriteTool
        from dgym_tui.core.workspace import Workspace

        task = self.trajectory.header.get("task") or {}
        ws = Workspace(root, ignore=task.get("ignore") or (),
                       readonly=task.get("readonly") or ())
        self._workspace = ws
        self._tool = RewriteTool(SimpleNamespace(workspace=ws))
        return True

    def _apply_until(self, step: int) -> None:
        """Re-apply the recorded successful rewrites of turns 1..``step`` not applied yet.

        Opening a long trajectory therefore costs nothing for its rewrites;
        moving forward applies only the new ones, and every version of a
        rewritten file is kept, so moving back costs nothing either.
        """
        ws = self._workspace
        while self._applied < min(step, len(self.turns)):
            index = self._applied
            self._applied += 1
            recorded = self.turns.record(index).get("action") or {}
            if not isinstance(recorded, dict) or recorded.get("name") != "rewrite":
                continue  # not a rewrite: no need to convert the record
            turn = self.turns[index]
            action = turn.action
            if (action is None or action.name != "rewrite" or turn.result is None
                    or turn.result.error or not isinstance(action.arguments, dict)):
                continue
            try:
                out = self._tool.run(**action.arguments)
            except Exception:  # noqa: BLE001, S112  the recorded step failed the same way
                continue
            rel = (getattr(out, "data", None) or {}).get("path") or action.arguments.get("path")
            try:
                text = ws.read_text(rel)
            except Exception:  # noqa: BLE001, S112  file deleted / hidden later: skip it
                continue
            steps, texts = self._versions.setdefault(rel, ([], []))
            steps.append(turn.index)
            texts.append(text)

    def files(self) -> list[str]:
        """Visible files of the original repository (plus files created by the
        rewrites re-applied so far)."""
        if not self._ensure_workspace():
            changed = set(self.initial.changed_files)
            for record in self.trajectory.steps:
                changed.update((record.get("result") or {}).get("changed_files") or ())
            return sorted(changed)
        return self._workspace.files()

    def is_readonly(self, rel: str) -> bool:
        """True when ``rel`` is read-only in the recorded task."""
        return bool(self._workspace is not None and self._workspace.is_readonly(rel))

    def source_at(self, rel: str, step: int) -> str | None:
        """Text of ``rel`` after ``step``, or None when it cannot be re-derived honestly."""
        if not self._ensure_workspace():
            return None
        self._apply_until(step)
        steps, texts = self._versions.get(rel, ([], []))
        i = bisect_right(steps, step)
        if i:
            return texts[i - 1]
        original = self.source_root / rel  # never rewritten up to ``step``
        try:
            return original.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def close(self) -> None:
        """Delete the scratch working copy."""
        if self._workspace is not None:
            self._workspace.cleanup()
            self._workspace = None
