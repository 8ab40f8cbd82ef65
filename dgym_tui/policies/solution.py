"""The ``solution`` policy: write a task's reference solution through the tools.

Used by ``dgym run`` with ``policy: solution`` to check a benchmark, not an
agent: every task should go from failing to resolved when its reference
solution is applied. Every action goes through ``env.step`` like any other,
so the episode is recorded in the trajectory as usual. The solution comes
from the task's ``meta`` (never shown to agents), first match wins:

- ``solution_files``: ``{relative path: full new content}`` -> one whole-file
  ``rewrite`` per file;
- ``example`` + ``stub``: an Exercism-style reference file (host path) and the
  stub it replaces (relative path) -> one whole-file ``rewrite``;
- ``gold_patch`` or ``patch``: a unified diff (git style) -> one ``rewrite``
  per hunk (bottom-up within a file), a whole-file ``rewrite`` per created file.

The plan ends with ``submit``, whose final eval is the check (a separate
``eval`` step would only run the tests twice).

Patches are read and applied by :mod:`dgym_tui.core.fs.patches` (no ``git``
needed on the host).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgym_tui.core.fs.patches import PatchError, locate_hunks, parse_patch, patched_text
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.policy import Policy
from dgym_tui.episode.records import EpisodeInfo, Proposal, Turn

if TYPE_CHECKING:
    from dgym_tui.benchmarks.base import Task


class SolutionError(ValueError):
    """The task carries no usable reference solution (the message says why)."""


def patch_actions(patch: str, source: str | Path) -> list[ToolCall]:
    """Turn a patch into ``rewrite`` tool calls against the repository at ``source``.

    One ``rewrite`` per hunk, replacing the hunk's old lines (context included)
    by its new lines; hunks of one file are emitted bottom-up so the line
    numbers of the ones still to come stay valid. A created file is one
    whole-file ``rewrite``. A deleted file becomes a whole-file ``rewrite``
    with empty content (the tool set has no delete).

    Args:
        patch: unified diff.
        source: host folder holding the files as the episode starts.

    Returns:
        The ``rewrite`` calls, in order.

    Raises:
        PatchError: the patch is malformed or does not apply to ``source``.
    """
    source = Path(source)
    actions = []
    for fp in parse_patch(patch):
        old_file = source / fp.old_path if fp.old_path else None
        if old_file is None or not old_file.is_file():
            if fp.old_path:
                raise PatchError(f"{fp.old_path} does not exist under {source}")
            actions.append(ToolCall("rewrite", {"path": fp.path,
                                                "new_code": patched_text(fp, None) or ""}))
            continue
        if fp.new_path is None or fp.new_path != fp.old_path:
            raise PatchError(f"{fp.path}: deleting or renaming files is not supported")
        old = old_file.read_text(encoding="utf-8")
        for pos, hunk in reversed(locate_hunks(fp, old)):
            start = pos + 1
            actions.append(ToolCall("rewrite", {
                "path": fp.path, "start": start, "end": start + len(hunk.old_lines) - 1,
                "new_code": "".join(hunk.new_lines)}))
    return actions


class SolutionPolicy(Policy):
    """A :class:`~dgym_tui.episode.policy.Policy` that writes a reference solution, then submits.

    Args:
        files: ``{relative path: full new content}``, one whole-file ``rewrite``
            each. Use :meth:`for_task` or :meth:`from_patch` for per-hunk rewrites.

    Attributes:
        name: ``"solution"``. actor: ``"agent"`` (a scripted stand-in for one).
    """

    name = "solution"
    actor = "agent"

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files = dict(files or {})
        self._rewrites: list[ToolCall] | None = None
        self._plan: list[ToolCall] = []

    @classmethod
    def from_patch(cls, patch: str, source: str | Path) -> SolutionPolicy:
        """Build the policy from a unified diff against the repository at ``source``.

        Args:
            patch: the gold patch.
            source: host folder holding the files as the episode starts.

        Raises:
            PatchError: the patch is malformed or does not apply to ``source``.
        """
        policy = cls()
        policy._rewrites = patch_actions(patch, source)
        return policy

    @classmethod
    def for_task(cls, task: Task) -> SolutionPolicy:
        """Build the policy from a task's meta (see the module docstring).

        Raises:
            SolutionError: no usable solution, or its patch does not apply.
        """
        meta = task.meta
        if isinstance(meta.get("solution_files"), dict):
            return cls({str(k): str(v) for k, v in meta["solution_files"].items()})
        if meta.get("example") and meta.get("stub"):
            return cls({str(meta["stub"]): Path(meta["example"]).read_text(encoding="utf-8")})
        patch = meta.get("gold_patch") or meta.get("patch")
        if not (isinstance(patch, str) and patch.strip()):
            raise SolutionError(f"task {task.name!r} has no reference solution "
                                "(meta solution_files, example + stub, or gold_patch)")
        try:
            return cls.from_patch(patch, task.path)
        except PatchError as exc:
            raise SolutionError(str(exc)) from None

    def reset(self, info: EpisodeInfo) -> None:
        """Plan the episode: the rewrites, then ``submit`` (which runs the final eval)."""
        rewrites = self._rewrites
        if rewrites is None:
            rewrites = [ToolCall("rewrite", {"path": rel, "new_code": text})
                        for rel, text in self.files.items()]
        self._plan = [*rewrites, ToolCall("submit", {})]

    def plan(self) -> list[dict[str, Any]]:
        """Return the actions still planned, as dicts (for display and tests)."""
        return [c.to_dict() for c in self._plan]

    def propose(self, turns: list[Turn]) -> Proposal:
        """Return the next planned call; an error proposal once the plan is used up."""
        if not self._plan:
            return Proposal(None, error="the solution plan is used up")
        call = self._plan.pop(0)
        # a fresh id per proposal, so a repeated action stays a distinct tool call
        return Proposal(ToolCall(call.name, dict(call.arguments)),
                        reasoning=f"apply the reference solution: {call.name}")


__all__ = ["SolutionError", "SolutionPolicy", "patch_actions"]
