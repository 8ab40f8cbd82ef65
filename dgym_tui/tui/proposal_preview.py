"""What an agent's proposed action would change, for the source view to preview.

Two kinds of proposal are previewed before the person decides (approve mode):
a ``rewrite`` (shown as a diff in the source pane) and a pdb breakpoint
command ``b N`` / ``b file:N`` / ``tbreak ...`` (a hollow mark in the gutter).
Everything here is pure data: no widget, no environment.
"""

from __future__ import annotations

from dataclasses import dataclass

from dgym_tui.core.types import ToolCall

#: pdb's breakpoint commands (the front end may not import the pdb tool itself).
_BREAK_VERBS = frozenset({"b", "break", "tbreak"})


@dataclass(frozen=True)
class RewritePreview:
    """Lines ``start``..``end`` (1-based, inclusive) of ``path`` replaced by ``new_lines``.

    ``end == start - 1`` inserts before ``start``; ``end`` None means "to the last
    line" (a whole-file rewrite, ``start`` is then 1).
    """

    path: str
    start: int
    end: int | None
    new_lines: tuple[str, ...]

    def last(self, line_count: int) -> int:
        """The last replaced line (1-based) in a file of ``line_count`` lines."""
        return line_count if self.end is None else min(self.end, line_count)

    @property
    def line(self) -> int:
        """The line the view should show (the first replaced one)."""
        return self.start


@dataclass(frozen=True)
class BreakpointPreview:
    """A breakpoint the agent proposes at ``path:line`` (``condition`` or None)."""

    path: str
    line: int
    condition: str | None = None


Preview = RewritePreview | BreakpointPreview


def preview_of(action: ToolCall | None, frame_path: str | None) -> Preview | None:
    """The preview of a proposed ``action``, or None when it changes no code or breakpoint.

    Args:
        action: the proposal's tool call (None: the proposal was invalid).
        frame_path: relative path of the file pdb is stopped in; a bare ``b N``
            means that file (no preview without it).

    Returns:
        A :class:`RewritePreview` for a ``rewrite`` with a path and ``new_code``, a
        :class:`BreakpointPreview` for ``b`` / ``break`` / ``tbreak`` with a line
        number, else None (including malformed arguments: the tool reports those).
    """
    if action is None or not isinstance(action.arguments, dict):
        return None
    args = action.arguments
    if action.name == "rewrite":
        return _rewrite(args)
    if action.name == "pdb":
        return _breakpoint(str(args.get("command", "")), frame_path)
    return None


def _rewrite(args: dict) -> RewritePreview | None:
    path, code = args.get("path"), args.get("new_code")
    if not isinstance(path, str) or not isinstance(code, str):
        return None
    start, end = args.get("start"), args.get("end")
    try:
        first = 1 if start is None else int(start)
        last = None if start is None else int(end) if end is not None else first
    except (TypeError, ValueError):
        return None
    lines = code.split("\n")  # as the rewrite tool counts: at "\n" only
    if lines[-1] == "":
        lines.pop()
    lines = [line.rstrip("\r") for line in lines]
    return RewritePreview(path.removeprefix("./"), first, last, tuple(lines))


def _breakpoint(command: str, frame_path: str | None) -> BreakpointPreview | None:
    verb, _, arg = command.strip().partition(" ")
    if verb not in _BREAK_VERBS:
        return None
    loc, comma, condition = arg.partition(",")
    name, colon, number = loc.strip().rpartition(":")
    if not number.strip().isdigit():
        return None
    path = name.strip().removeprefix("./") if colon else frame_path
    if not path:
        return None
    return BreakpointPreview(path, int(number), condition.strip() or None if comma else None)
