"""SolutionPolicy: writes a task's reference solution through the tools, then submits.

Used by ``dgym run`` with ``policy: solution`` to check that every task of a
benchmark is solvable in the environment (the gold solution must resolve it),
and as a scripted baseline. The solution comes from the task's ``meta``
(never shown to agents), first match wins:

- ``solution_files``: ``{relative path: full new content}``;
- ``example`` + ``stub``: an Exercism-style reference file (path) and the
  stub it replaces (relative path);
- ``gold_patch`` or ``patch``: a unified diff (git style), applied with
  ``git apply`` to copies of the files it touches.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from dgym_tui.core.types import ToolCall
from dgym_tui.policy import EpisodeInfo, Proposal


class SolutionError(ValueError):
    """The task carries no usable reference solution."""


def _patched_files(source: Path, patch: str) -> dict[str, str]:
    """Apply ``patch`` to copies of the files it touches; return their new contents."""
    paths = set(re.findall(r"^\+\+\+ b/(\S+)", patch, flags=re.M))
    paths |= set(re.findall(r"^--- a/(\S+)", patch, flags=re.M))
    git = shutil.which("git")
    if git is None:
        raise SolutionError("applying a gold patch needs git on PATH")
    with tempfile.TemporaryDirectory(prefix="dgym-solution-") as tmp:
        root = Path(tmp)
        for rel in paths:
            original = source / rel
            if original.is_file():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(original, root / rel)
        done = subprocess.run([git, "apply", "--whitespace=nowarn", "-"], input=patch,
                              text=True, cwd=root, capture_output=True)
        if done.returncode != 0:
            raise SolutionError(f"the gold patch does not apply: {done.stderr.strip()[:300]}")
        added = set(re.findall(r"^\+\+\+ b/(\S+)", patch, flags=re.M))
        return {rel: (root / rel).read_text(encoding="utf-8") for rel in sorted(added)
                if (root / rel).is_file()}


def solution_files(task: Any) -> dict[str, str]:
    """Return ``{relative path: new content}`` of ``task``'s reference solution.

    Args:
        task: a :class:`dgym_tui.benchmarks.Task`.

    Raises:
        SolutionError: the task's meta holds no solution (or it cannot be applied).
    """
    meta = getattr(task, "meta", None) or {}
    if isinstance(meta.get("solution_files"), dict):
        return {str(k): str(v) for k, v in meta["solution_files"].items()}
    if meta.get("example") and meta.get("stub"):
        return {str(meta["stub"]): Path(meta["example"]).read_text(encoding="utf-8")}
    patch = meta.get("gold_patch") or meta.get("patch")
    if isinstance(patch, str) and patch.strip():
        return _patched_files(Path(task.path), patch)
    raise SolutionError(f"task {getattr(task, 'name', '?')!r} has no reference solution "
                        "(meta solution_files, example + stub, or gold_patch)")


class SolutionPolicy:
    """Proposes one whole-file ``rewrite`` per solution file, then ``submit``.

    Args:
        files: ``{relative path: full new content}``.

    Attributes:
        name: ``"solution"``. actor: ``"agent"`` (a scripted stand-in for one).
    """

    name = "solution"
    actor = "agent"

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)
        self._plan: list[ToolCall] = []

    @classmethod
    def for_task(cls, task: Any) -> "SolutionPolicy":
        """Build the policy from a task's meta (see :func:`solution_files`).

        Raises:
            SolutionError: no usable solution.
        """
        return cls(solution_files(task))

    def reset(self, info: EpisodeInfo) -> None:
        """Plan the episode: the rewrites, then submit."""
        self._plan = [ToolCall("rewrite", {"path": rel, "new_code": text})
                      for rel, text in self.files.items()]
        self._plan.append(ToolCall("submit", {}))

    def propose(self, turns: list) -> Proposal:
        """Return the next planned call; an error proposal once the plan is used up."""
        if not self._plan:
            return Proposal(None, error="the solution plan is used up")
        call = self._plan.pop(0)
        return Proposal(ToolCall(call.name, dict(call.arguments)),
                        reasoning=f"apply the reference solution: {call.name}")
