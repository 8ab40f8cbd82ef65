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
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from dgym_tui.core.types import StepResult


class ReplayModel:
    """Step-indexed view of a :class:`dgym_tui.trajectory.Trajectory`.

    Step 0 is the state after ``reset``; step N (1-based) the state after the
    N-th recorded turn.

    Args:
        trajectory: the trajectory read by ``read_trajectory``.

    Attributes:
        turns: the recorded turns (``dgym_tui.session.Turn``), oldest first.
        source_root: the original repository folder, or None when it is gone.
    """

    def __init__(self, trajectory: Any) -> None:
        self.trajectory = trajectory
        self.turns = trajectory.turns()
        self.initial: StepResult = trajectory.initial
        task = trajectory.header.get("task") or {}
        root = task.get("path")
        self.source_root: Path | None = Path(root) if root and Path(root).is_dir() else None
        self._results: list[StepResult] = [self.initial]
        for turn in self.turns:
            self._results.append(turn.result if turn.result is not None else self._results[-1])
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
        return self._results[max(0, min(step, len(self.turns)))]

    def turns_until(self, step: int) -> list[Any]:
        """Turns 1..``step``."""
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
            turn = self.turns[self._applied]
            self._applied += 1
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
            return sorted({p for r in self._results for p in r.changed_files})
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
