"""rewrite: replace a range of lines of a file (or a whole file) and show the diff."""

from __future__ import annotations

from typing import Any, ClassVar

from dgym_tui.core.tools.base import FILE_PATH_PARAM, Tool, ToolError, ToolOutput, register


@register
class RewriteTool(Tool):
    """Replaces lines ``start``..``end`` of a file with new code; returns a unified diff."""

    name = "rewrite"
    instructions = (
        "Replace lines `start` to `end` (1-based, inclusive) of a file with `new_code` and "
        "show the resulting diff. Omit `end` to replace the single line `start`. Use "
        "start = end + 1 to insert `new_code` before line `start` without removing anything "
        "(start = number of lines + 1 appends). An empty `new_code` deletes the lines. Omit "
        "both `start` and `end` to replace the whole file, or to create a new file. Keep "
        "the indentation of the surrounding code. Read-only files cannot be rewritten.")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": FILE_PATH_PARAM,
            "start": {"type": ["integer", "null"], "minimum": 1,
                      "description": "First line to replace (1-based). Omit with `end` to "
                                     "replace or create the whole file"},
            "end": {"type": ["integer", "null"], "minimum": 0,
                    "description": "Last line to replace (inclusive). Default: start. "
                                   "end = start - 1 inserts before line start"},
            "new_code": {"type": "string",
                         "description": "The new lines (without line numbers)"},
        },
        "required": ["path", "new_code"],
        "additionalProperties": False,
    }

    def run(self, path: str, new_code: str, start: int | None = None,
            end: int | None = None, **_: Any) -> ToolOutput:
        # the patch module (hashlib) with the first rewrite, not with the tool: an app builds
        # its environment, and so its tools, before its first frame
        from dgym_tui.core.fs.gitpatch import split_lines, text_diff

        ws = self.env.workspace
        if ws.is_ignored(path):
            raise ToolError(f"{path!r} is hidden by .debugignore and cannot be written; "
                            "choose another path")
        rel = ws.canonical(path)
        kind = ws.kind(rel)
        if kind == "folder":
            raise ToolError(f"{rel!r} is a folder; give the path of a file")
        new_lines = split_lines(new_code)
        if new_lines and not new_lines[-1].endswith("\n"):
            new_lines[-1] += "\n"

        if kind is None:
            if start is not None or end is not None:
                raise ToolError(f"{rel!r} does not exist; to create it, omit start and end")
            new_text = "".join(new_lines)
            ws.write_text(rel, new_text)
            return ToolOutput(f"Created {rel} ({_count(new_lines)}):\n"
                              f"{text_diff(rel, None, new_text)}".rstrip(),
                              data={"path": rel, "created": True})

        old_text = ws.read_text(rel)
        old_lines = split_lines(old_text)
        total = len(old_lines)
        if start is None and end is not None:
            raise ToolError("give `start` together with `end` (or omit both to replace the "
                            "whole file)")
        if start is None:
            first, last = 1, total
        else:
            first = int(start)
            last = int(end) if end is not None else first
        if first > last + 1:
            raise ToolError(f"start ({first}) is greater than end ({last}); give start <= end, "
                            "or start = end + 1 to insert before line start")
        if first > total + 1 or last > total:
            raise ToolError(f"lines {first}-{last} are outside {rel}, which has {total} lines; "
                            f"the last usable end is {total}")
        if last < first and not new_lines:
            raise ToolError("nothing to insert: new_code is empty")

        new_text = "".join(old_lines[:first - 1] + new_lines + old_lines[last:])
        if new_text == old_text:
            return ToolOutput(f"No change: the new code is identical to lines {first}-{last} "
                              f"of {rel}.", data={"path": rel})
        ws.write_text(rel, new_text)
        span = f"line {first}" if first == last else f"lines {first}-{last}"
        if last < first:
            what = f"Inserted {_count(new_lines)} before line {first} of {rel}"
        elif not new_lines:
            what = f"Deleted {span} of {rel}"
        else:
            what = f"Replaced {span} of {rel} with {_count(new_lines)}"
        return ToolOutput(f"{what}:\n{text_diff(rel, old_text, new_text)}".rstrip(),
                          data={"path": rel, "start": first, "end": last,
                                "new_lines": len(new_lines)})


def _count(lines: list[str]) -> str:
    """``"1 line"`` / ``"3 lines"``."""
    return f"{len(lines)} line{'' if len(lines) == 1 else 's'}"
