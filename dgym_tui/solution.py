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

This module also holds the small unified-diff reader that this policy and the
SWE-bench loader share (:func:`parse_patch`, :func:`apply_patch`); it needs no
``git`` on the host.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dgym_tui.core.types import ToolCall
from dgym_tui.records import EpisodeInfo, Proposal, Turn

_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class SolutionError(ValueError):
    """The task carries no usable reference solution (the message says why)."""


class PatchError(SolutionError):
    """A patch cannot be read or does not apply; the message says where."""


@dataclass
class Hunk:
    """One ``@@`` block of a unified diff.

    Attributes:
        old_start: first line of the old range (1-based; the line *after which*
            to insert when ``old_len`` is 0).
        old_len: number of old lines replaced.
        lines: the hunk body as ``(kind, text)`` pairs, kind ``" "``, ``"-"`` or
            ``"+"``; ``text`` keeps its ``"\\n"`` unless the diff said
            "No newline at end of file".
    """

    old_start: int
    old_len: int
    lines: list[tuple[str, str]] = field(default_factory=list)

    @property
    def old_lines(self) -> list[str]:
        """Lines the hunk expects (context and removed)."""
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new_lines(self) -> list[str]:
        """Lines the hunk leaves (context and added)."""
        return [text for kind, text in self.lines if kind != "-"]


@dataclass
class FilePatch:
    """The changes to one file.

    Attributes:
        old_path: path before the change (None for a created file).
        new_path: path after the change (None for a deleted file).
        hunks: the ``@@`` blocks, in file order.
    """

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The file's path (the new one unless the file is deleted)."""
        return self.new_path or self.old_path or ""


def _strip_prefix(name: str) -> str | None:
    name = name.split("\t", 1)[0].strip()
    if name == "/dev/null":
        return None
    if name[:2] in ("a/", "b/"):
        name = name[2:]
    return name


def parse_patch(text: str) -> list[FilePatch]:
    """Read a unified diff (``git diff`` output) into per-file changes.

    Args:
        text: the patch; ``diff --git`` headers are optional, ``---``/``+++``
            lines are required for each file.

    Returns:
        One :class:`FilePatch` per file, in patch order.

    Raises:
        PatchError: binary patches, renames without content, or a malformed hunk.
    """
    files: list[FilePatch] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(("GIT binary patch", "Binary files ")):
            raise PatchError("binary patches are not supported")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            current = FilePatch(_strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:]))
            files.append(current)
            i += 2
            while i < len(lines) and (m := _HUNK_RE.match(lines[i])):
                hunk = Hunk(int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1))
                want_old = hunk.old_len
                want_new = int(m.group(4) if m.group(4) is not None else 1)
                i += 1
                while i < len(lines) and (want_old > 0 or want_new > 0
                                          or lines[i].startswith("\\")):
                    body = lines[i]
                    if body.startswith("\\"):  # "\ No newline at end of file"
                        if hunk.lines:
                            kind, prev = hunk.lines[-1]
                            hunk.lines[-1] = (kind, prev.removesuffix("\n"))
                        i += 1
                        continue
                    kind = body[:1] or " "
                    if kind not in " +-":
                        raise PatchError(f"malformed hunk in {current.path}: {body[:60]!r}")
                    hunk.lines.append((kind, body[1:] + "\n"))
                    want_old -= kind != "+"
                    want_new -= kind != "-"
                    i += 1
                current.hunks.append(hunk)
            continue
        i += 1
    return files


def _find(lines: list[str], block: list[str], expected: int) -> int:
    """Index where ``block`` occurs in ``lines``, the closest to ``expected``; -1 if nowhere."""
    n = len(block)
    for delta in range(len(lines) + 1):
        for pos in (expected - delta, expected + delta):
            if 0 <= pos <= len(lines) - n and lines[pos:pos + n] == block:
                return pos
        if expected - delta < 0 and expected + delta > len(lines) - n:
            break
    return -1


def locate_hunks(file_patch: FilePatch, old_text: str) -> list[tuple[int, Hunk]]:
    """Return ``(0-based index in the old text, hunk)`` for each hunk, checking its context.

    Raises:
        PatchError: a hunk's old lines are not found in ``old_text``.
    """
    lines = old_text.splitlines(keepends=True)
    placed = []
    offset = 0
    for hunk in file_patch.hunks:
        start = hunk.old_start - 1 if hunk.old_len else hunk.old_start
        pos = _find(lines, hunk.old_lines, start + offset) if hunk.old_lines else start
        if pos < 0:
            raise PatchError(f"hunk @@ -{hunk.old_start},{hunk.old_len} @@ does not apply "
                             f"to {file_patch.path}")
        offset = pos - start
        placed.append((pos, hunk))
    return placed


def patched_text(file_patch: FilePatch, old_text: str | None) -> str | None:
    """Return the file's text after the patch (None when the patch deletes it).

    Raises:
        PatchError: a hunk does not apply.
    """
    if file_patch.new_path is None:
        return None
    lines = (old_text or "").splitlines(keepends=True)
    for pos, hunk in reversed(locate_hunks(file_patch, old_text or "")):
        lines[pos:pos + len(hunk.old_lines)] = hunk.new_lines
    return "".join(lines)


def apply_patch(patch: str, root: str | Path) -> list[str]:
    """Apply a unified diff to the files under ``root`` (in place).

    Every hunk is checked before any file is written, so a patch that does not
    apply leaves ``root`` unchanged.

    Args:
        patch: the unified diff text.
        root: folder the patch's paths are relative to.

    Returns:
        The relative paths written or deleted, in patch order.

    Raises:
        PatchError: the patch is malformed or does not apply.
    """
    root = Path(root)
    results = []
    for fp in parse_patch(patch):
        source = root / (fp.old_path or fp.path)
        old = source.read_text(encoding="utf-8") if fp.old_path and source.is_file() else None
        if fp.old_path and old is None:
            raise PatchError(f"{fp.old_path} does not exist under {root}")
        results.append((fp, patched_text(fp, old)))
    for fp, new in results:
        target = root / fp.path
        if new is None:
            target.unlink()
            continue
        if fp.old_path and fp.old_path != fp.new_path:
            (root / fp.old_path).unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(new, encoding="utf-8")
    return [fp.path for fp, _ in results]


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


def solution_files(task: Any) -> dict[str, str]:
    """Return ``{relative path: new content}`` of ``task``'s reference solution.

    Args:
        task: a :class:`dgym_tui.benchmarks.Task`.

    Raises:
        SolutionError: the task's meta holds no solution, or its patch does not apply.
    """
    meta = getattr(task, "meta", None) or {}
    if isinstance(meta.get("solution_files"), dict):
        return {str(k): str(v) for k, v in meta["solution_files"].items()}
    if meta.get("example") and meta.get("stub"):
        return {str(meta["stub"]): Path(meta["example"]).read_text(encoding="utf-8")}
    patch = _task_patch(task)
    if patch:
        source = Path(task.path)
        out = {}
        for fp in parse_patch(patch):
            old = source / fp.old_path if fp.old_path else None
            text = old.read_text(encoding="utf-8") if old is not None and old.is_file() else None
            new = patched_text(fp, text)
            if new is not None:
                out[fp.path] = new
        return out
    raise SolutionError(f"task {getattr(task, 'name', '?')!r} has no reference solution "
                        "(meta solution_files, example + stub, or gold_patch)")


def _task_patch(task: Any) -> str | None:
    meta = getattr(task, "meta", None) or {}
    patch = meta.get("gold_patch") or meta.get("patch")
    return patch if isinstance(patch, str) and patch.strip() else None


class SolutionPolicy:
    """A :class:`~dgym_tui.policy.Policy` that writes a reference solution, then submits.

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
    def for_task(cls, task: Any) -> SolutionPolicy:
        """Build the policy from a task's meta (see the module docstring).

        Raises:
            SolutionError: no usable solution (PatchError: the patch does not apply).
        """
        meta = getattr(task, "meta", None) or {}
        patch = _task_patch(task)
        if patch and not isinstance(meta.get("solution_files"), dict) and not (
                meta.get("example") and meta.get("stub")):
            return cls.from_patch(patch, task.path)
        return cls(solution_files(task))

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


__all__ = [
    "FilePatch",
    "Hunk",
    "PatchError",
    "SolutionError",
    "SolutionPolicy",
    "apply_patch",
    "parse_patch",
    "patch_actions",
    "patched_text",
    "solution_files",
]
