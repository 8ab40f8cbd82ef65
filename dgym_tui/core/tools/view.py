"""view: show a text file of the working copy with line numbers and breakpoint marks."""

from __future__ import annotations

from typing import Any, ClassVar

from dgym_tui.core.tools.base import FILE_PATH_PARAM, Tool, ToolError, ToolOutput, register

#: Most lines one view shows; longer files or ranges get a window and a note.
MAX_VIEW_LINES = 200
#: Longer lines are cut to this many characters.
MAX_LINE_CHARS = 400


def gutter(line: int, marks: dict[int, str], frame_line: int | None) -> str:
    """The 3-character mark column: breakpoint mark then ``->`` on the frame line."""
    return f"{marks.get(line, ' ')}{'->' if line == frame_line else '  '}"


def breakpoint_marks(env: Any, path: str) -> dict[int, str]:
    """``{line: mark}`` for the breakpoints of ``path``.

    Marks: ``B`` breakpoint, ``C`` conditional breakpoint; lowercase when disabled.
    """
    marks = {}
    for bp in env.breakpoints.entries():
        if bp.path == path:
            mark = "C" if bp.condition else "B"
            marks[bp.line] = mark if bp.enabled else mark.lower()
    return marks


def numbered_lines(env: Any, rel: str, first: int, lines: list[str]) -> tuple[list[str], bool]:
    """Render ``lines`` of ``rel`` (the first is line ``first``) as ``view`` shows them.

    Returns:
        ``(rows, marked)``: one ``"NUMBER MARKS CODE"`` row per line (long lines cut to
        :data:`MAX_LINE_CHARS`), and whether any row carries a breakpoint or frame mark.
    """
    marks = breakpoint_marks(env, rel)
    frame = env.frame
    frame_line = frame[1] if frame and frame[0] == rel else None
    width = len(str(first + len(lines) - 1))
    rows = []
    for number, code in enumerate(lines, start=first):
        if len(code) > MAX_LINE_CHARS:
            code = code[:MAX_LINE_CHARS] + " [line cut]"
        rows.append(f"{number:>{width}} {gutter(number, marks, frame_line)} {code}".rstrip())
    last = first + len(lines) - 1
    marked = any(first <= n <= last for n in marks) or (
        frame_line is not None and first <= frame_line <= last)
    return rows, marked


@register
class ViewTool(Tool):
    """Shows numbered lines of a file, with breakpoint and current-frame marks."""

    name = "view"
    instructions = (
        "Show a text file of the repository with line numbers. `start` and `end` (1-based, "
        f"inclusive) pick a range; at most {MAX_VIEW_LINES} lines are shown at once. Marks "
        "after the line number: B = breakpoint, C = conditional breakpoint (lowercase when "
        "disabled), -> = the line where the debugger is stopped.")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": FILE_PATH_PARAM,
            "start": {"type": ["integer", "null"], "minimum": 1,
                      "description": "First line to show (1-based). Default: 1"},
            "end": {"type": ["integer", "null"], "minimum": 1,
                    "description": f"Last line to show (inclusive). Default: start + "
                                   f"{MAX_VIEW_LINES - 1} or the end of the file"},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def run(self, path: str, start: int | None = None, end: int | None = None,
            **_: Any) -> ToolOutput:
        if start is not None and end is not None and int(start) > int(end):
            raise ToolError(f"start ({start}) is greater than end ({end}); give start <= end")
        first = int(start) if start is not None else (
            max(1, int(end) - MAX_VIEW_LINES + 1) if end is not None else 1)
        wanted = int(end) if end is not None else first + MAX_VIEW_LINES - 1
        # Only the shown lines are kept; the rest of the file is just counted.
        rel, lines, total = self.env.workspace.read_lines(
            path, first, min(wanted, first + MAX_VIEW_LINES - 1))
        if total == 0:
            return ToolOutput(f"{rel} is empty (0 lines).", data={"path": rel})
        if first > total:
            raise ToolError(f"start ({first}) is past the end of {rel}, which has {total} "
                            "lines")
        last = min(wanted, total)
        notes = []
        if last - first + 1 > MAX_VIEW_LINES:
            last = first + MAX_VIEW_LINES - 1
            notes.append(f"[only {MAX_VIEW_LINES} lines are shown at once; view start="
                         f"{last + 1} for more]")
        elif start is None and end is None and total > last:
            notes.append(f"[{rel} has {total} lines; showing 1-{last}. Pass start/end to see "
                         "the rest]")

        body, marked = numbered_lines(self.env, rel, first, lines[:last - first + 1])
        legend = " (B breakpoint, C conditional, -> current frame)" if marked else ""
        header = f"{rel}, lines {first}-{last} of {total}{legend}:"
        return ToolOutput("\n".join([header, *body, *notes]),
                          data={"path": rel, "start": first, "end": last, "total": total})
