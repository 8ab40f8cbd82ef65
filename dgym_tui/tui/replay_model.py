"""What a recorded trajectory looked like at step N (UI-free helper for the replay view).

Breakpoints, the frame, the eval summary and the observation come straight
from the recorded ``StepResult`` of each step. File contents are NOT recorded
in trajectories, so the source at step N is re-derived: the original
repository (the header's ``task.path``) is copied once into a scratch working
copy and every successful recorded ``rewrite`` action is re-applied in order
with the real rewrite tool; the text of each rewritten file is kept per step.
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
    def _ensure_workspace(self) -> bool:
        if self._versions is not None:
            return self._workspace is not None
        self._versions = {}
        if self.source_root is None:
            return False
        from dgym_tui.core.tools.rewrite import RewriteTool
        from dgym_tui.core.workspace import Workspace

        task = self.trajectory.header.get("task") or {}
        ws = Workspace(self.source_root, ignore=task.get("ignore") or (),
                       readonly=task.get("readonly") or ())
        self._workspace = ws
        tool = RewriteTool(SimpleNamespace(workspace=ws))
        for turn in self.turns:
            action = turn.action
            if (action is None or action.name != "rewrite" or turn.result is None
                    or turn.result.error or not isinstance(action.arguments, dict)):
                continue
            try:
                out = tool.run(**action.arguments)
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
        return True

    def files(self) -> list[str]:
        """Visible files of the original repository (plus files created by rewrites)."""
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
        steps, texts = self._versions.get(rel, ([], []))
        i = bisect_right(steps, step)
        if i:
            return texts[i - 1]
        original = self.source_root / rel
        try:
            return original.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def close(self) -> None:
        """Delete the scratch working copy."""
        if self._workspace is not None:
            self._workspace.cleanup()
            self._workspace = None
