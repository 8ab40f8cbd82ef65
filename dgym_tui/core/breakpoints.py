"""The breakpoint store: breakpoints that outlive pdb sessions and follow edited code.

Breakpoints are kept by workspace-relative POSIX path and 1-based line, with
an optional condition, an enabled flag and a "temporary" flag (``tbreak``).
They survive eval, rewrite and pdb restarts: after a restart the pdb tool
re-issues :meth:`BreakpointStore.pdb_commands`.

Remapping after ANY change of a file (rewrite, a shell edit, a test writing
files, ...): the store keeps a snapshot of the text of every file that has
breakpoints. :meth:`BreakpointStore.remap_changed` diffs each snapshot against
the file's current text with :class:`difflib.SequenceMatcher` on lines and moves
each breakpoint by this rule (see :func:`remap_lines`):

1. A line that survived unchanged (inside an "equal" block) moves with its
   block: its breakpoint follows it to its new line number.
2. A line inside a replaced block maps to the line at the same offset in the
   replacement (clamped to the replacement's last line): the breakpoint stays
   on the code that now stands where the old code stood.
3. A line inside a deleted block moves to the nearest surviving line: the line
   that now follows the deleted block, or, when the block ran to the end of the
   file, the line that now precedes it.
4. A breakpoint moved by rule 2 or 3 that lands on a blank or comment-only line
   slides forward to the next line with code; if there is none it is dropped.
   A breakpoint whose file was deleted (or emptied) is dropped.
5. When two breakpoints land on the same line, the one whose line survived
   (rule 1) wins; otherwise the first in line order.
"""

from __future__ import annotations

import builtins
import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any


@dataclass(frozen=True)
class Breakpoint:
    """One breakpoint.

    Attributes:
        path: workspace-relative POSIX path of the file.
        line: 1-based line number.
        condition: a Python expression; pdb stops only when it is true. None: always.
        enabled: False after pdb's ``disable``; it is kept but does not stop.
        temporary: set by ``tbreak``; removed when pdb first stops on it.
    """

    path: str
    line: int
    condition: str | None = None
    enabled: bool = True
    temporary: bool = False

    @property
    def key(self) -> str:
        """``"path:line"``, the form used in observations and ``conditions()``."""
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Move:
    """A change made by :meth:`BreakpointStore.remap_changed`.

    Attributes:
        path: the file (workspace-relative).
        old_line: the line before the change.
        new_line: the line after the change; None when the breakpoint was dropped.
    """

    path: str
    old_line: int
    new_line: int | None


def _is_code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def remap_lines(old_text: str, new_text: str,
                lines: list[int]) -> dict[int, tuple[int | None, bool]]:
    """Map 1-based line numbers of ``old_text`` to line numbers in ``new_text``.

    Follows the rule in the module docstring (difflib on lines).

    Args:
        old_text: the file's text when the breakpoints were set.
        new_text: the file's current text.
        lines: 1-based line numbers in ``old_text``.

    Returns:
        ``{old_line: (new_line or None, survived unchanged)}``; None means the
        breakpoint is dropped; "survived" is rule 1 (it wins a collision).
    """
    old = old_text.splitlines()
    new = new_text.splitlines()
    if not new:
        return {ln: (None, False) for ln in lines}
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    result: dict[int, tuple[int | None, bool]] = {}
    for ln in lines:
        i = ln - 1
        target = len(new) - 1  # a stale line past the old end: clamp to the last line
        kept = False
        for tag, i1, i2, j1, j2 in opcodes:
            if not (i1 <= i < i2):
                continue
            if tag == "equal":
                target, kept = j1 + (i - i1), True
            elif tag == "replace":
                target = j1 + min(i - i1, j2 - j1 - 1)
            else:  # delete: the line that now follows the block, else the one before
                target = j1 if j1 < len(new) else len(new) - 1
            break
        if not kept:
            while target < len(new) and not _is_code(new[target]):
                target += 1
            if target >= len(new):
                result[ln] = (None, False)
                continue
        result[ln] = (target + 1, kept)
    return result


class BreakpointStore:
    """Breakpoints of one episode, kept across pdb sessions and remapped after edits.

    Args:
        workspace: optional ``Workspace`` (anything with ``read_text(rel) -> str``);
            used to snapshot a file's text when a breakpoint is added to it.
            ``remap_changed(workspace)`` also sets it.
    """

    def __init__(self, workspace: Any = None) -> None:
        self.workspace = workspace
        self._bps: dict[tuple[str, int], Breakpoint] = {}
        self._snapshots: dict[str, str | None] = {}

    def copy(self, workspace: Any = None) -> BreakpointStore:
        """An independent store with the same breakpoints and text snapshots.

        Args:
            workspace: the workspace the copy reads from (None: this store's).
        """
        twin = BreakpointStore(self.workspace if workspace is None else workspace)
        twin._bps = dict(self._bps)
        twin._snapshots = dict(self._snapshots)
        return twin

    # -- reading ---------------------------------------------------------
    def __len__(self) -> int:
        return len(self._bps)

    def __contains__(self, item: tuple[str, int]) -> bool:
        return tuple(item) in self._bps

    def get(self, path: str, line: int) -> Breakpoint | None:
        """Return the breakpoint at ``path:line`` or None."""
        return self._bps.get((path, line))

    def entries(self) -> list[Breakpoint]:
        """All breakpoints, sorted by (path, line)."""
        return [self._bps[k] for k in sorted(self._bps)]

    def list(self) -> list[tuple[str, int]]:
        """Sorted ``(relative path, line)`` pairs of every breakpoint (enabled or not)."""
        return sorted(self._bps)

    def conditions(self) -> dict[str, str]:
        """``{"path:line": condition}`` for the breakpoints that have a condition."""
        return {bp.key: bp.condition for bp in self.entries() if bp.condition}

    def files(self) -> builtins.list[str]:
        """Relative paths of the files that have breakpoints, sorted."""
        return sorted({p for p, _ in self._bps})

    # -- changing --------------------------------------------------------
    def add(self, path: str, line: int, condition: str | None = None, *,
            enabled: bool = True, temporary: bool = False) -> Breakpoint:
        """Add (or replace) the breakpoint at ``path:line``.

        Args:
            path: workspace-relative POSIX path. The caller checks that it is
                inside the workspace and not ignored.
            line: 1-based line number (must be >= 1).
            condition: Python expression or None; blank strings count as None.
            enabled: False to store it disabled.
            temporary: True for a ``tbreak``.

        Returns:
            The stored :class:`Breakpoint`.

        Raises:
            ValueError: ``line`` is below 1.
        """
        if line < 1:
            raise ValueError(f"line must be >= 1, got {line}")
        condition = (condition or "").strip() or None
        if path not in self._snapshots:
            self._snapshots[path] = self._read(path)
        bp = Breakpoint(path, int(line), condition, enabled, temporary)
        self._bps[(path, bp.line)] = bp
        return bp

    def remove(self, path: str, line: int) -> bool:
        """Remove the breakpoint at ``path:line``. Returns True if there was one."""
        found = self._bps.pop((path, line), None) is not None
        self._forget_unused()
        return found

    def clear(self, path: str | None = None) -> builtins.list[Breakpoint]:
        """Remove every breakpoint, or those of ``path``. Returns the removed ones."""
        gone = [bp for bp in self.entries() if path is None or bp.path == path]
        for bp in gone:
            del self._bps[(bp.path, bp.line)]
        self._forget_unused()
        return gone

    def set_enabled(self, path: str, line: int, enabled: bool) -> bool:
        """Enable or disable the breakpoint at ``path:line``. Returns True if it exists."""
        bp = self._bps.get((path, line))
        if bp is None:
            return False
        self._bps[(path, line)] = replace(bp, enabled=enabled)
        return True

    # -- snapshots and remapping -----------------------------------------
    def _read(self, path: str, workspace: Any = None) -> str | None:
        ws = workspace or self.workspace
        if ws is None:
            return None
        try:
            return ws.read_text(path)
        except Exception:  # noqa: BLE001  missing, ignored, undecodable: nothing to diff
            return None

    def _forget_unused(self) -> None:
        used = {p for p, _ in self._bps}
        for p in list(self._snapshots):
            if p not in used:
                del self._snapshots[p]

    def remap_changed(self, workspace: Any = None) -> builtins.list[Move]:
        """Move breakpoints of every file whose text changed since its snapshot.

        Cheap when nothing changed (one read and one string compare per file
        with breakpoints). Files without a snapshot get one and are not moved.

        Args:
            workspace: the ``Workspace`` to read current texts from (stored for
                later calls); defaults to the one given before.

        Returns:
            The moves made (dropped breakpoints have ``new_line=None``), in
            path / line order; empty when nothing moved.
        """
        if workspace is not None:
            self.workspace = workspace
        moves: list[Move] = []
        for path in self.files():
            old = self._snapshots.get(path)
            new = self._read(path)
            if new is None and self.workspace is not None and not os.path.exists(
                    os.path.join(self.workspace.root, path)):
                new = ""  # the file was deleted
            if old is None or new is None:
                self._snapshots[path] = new
                continue
            if old == new:
                continue
            mine = [bp for bp in self.entries() if bp.path == path]
            mapping = remap_lines(old, new, [bp.line for bp in mine])
            for bp in mine:
                del self._bps[(path, bp.line)]
            # survivors of rule 1 first, so they win a collision (rule 5)
            for bp in sorted(mine, key=lambda b: (not mapping[b.line][1], b.line)):
                target = mapping[bp.line][0]
                if target is not None and (path, target) in self._bps:
                    target = None
                if target is not None:
                    self._bps[(path, target)] = replace(bp, line=target)
                if target != bp.line:
                    moves.append(Move(path, bp.line, target))
            self._snapshots[path] = new
        self._forget_unused()
        return sorted(moves, key=lambda m: (m.path, m.old_line))

    # -- pdb -------------------------------------------------------------
    def pdb_commands(self, to_abs: Callable[[str], str]) -> builtins.list[str]:
        """The pdb commands that re-create every breakpoint in a fresh session.

        Args:
            to_abs: maps a workspace-relative path to the path the pdb process
                sees (``RepoEnv.to_abs``).

        Returns:
            One ``break ABS:LINE[, condition]`` (``tbreak`` for temporary ones)
            per breakpoint, in (path, line) order. Disabled breakpoints are
            included; the caller disables them by the numbers pdb replies with.
        """
        cmds = []
        for bp in self.entries():
            verb = "tbreak" if bp.temporary else "break"
            cmd = f"{verb} {to_abs(bp.path)}:{bp.line}"
            if bp.condition:
                cmd += f", {bp.condition}"
            cmds.append(cmd)
        return cmds
