"""grep: search the visible text files of the working copy with a regular expression."""

from __future__ import annotations

import re
from typing import Any, ClassVar

from dgym_tui.core.tools.base import Tool, ToolError, ToolOutput, register
from dgym_tui.core.workspace import BINARY_SNIFF_BYTES, is_binary

#: Most matching lines one grep shows; the rest are counted in a closing note.
MAX_HITS = 100
#: Files larger than this (bytes) are skipped.
MAX_FILE_BYTES = 2 * 1024 * 1024
#: Matching lines are cut to this many characters.
MAX_LINE_CHARS = 200


@register
class GrepTool(Tool):
    """Regex search over visible text files; prints ``path:line: text`` per hit."""

    name = "grep"
    instructions = (
        "Search the repository's text files for a Python regular expression and list the "
        "matching lines as `path:line: text`. `path` limits the search to a folder or a "
        f"file (default '.'). At most {MAX_HITS} matches are shown.")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1,
                        "description": "Python regular expression, e.g. 'def parse_\\w+'"},
            "path": {"type": "string",
                     "description": "Folder or file relative to the repository root. "
                                    "Default: '.'"},
            "ignore_case": {"type": "boolean",
                            "description": "Match without regard to case. Default: false"},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    }

    def run(self, pattern: str, path: str = ".", ignore_case: bool = False,
            **_: Any) -> ToolOutput:
        try:
            regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        except re.error as exc:
            raise ToolError(f"invalid regular expression {pattern!r}: {exc}; escape special "
                            "characters such as ( [ . * with a backslash") from None
        ws = self.env.workspace
        target = ws.resolve(path, must_exist=True)
        top = ws.relative(target) or "."
        files = ws.files(top) if target.is_dir() else [top]
        hits: list[str] = []
        more = 0
        for rel in files:
            full = ws.root / rel
            try:
                if full.stat().st_size > MAX_FILE_BYTES:
                    continue
                data = full.read_bytes()
            except OSError:
                continue
            if is_binary(data[:BINARY_SNIFF_BYTES]):
                continue
            for number, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
                if regex.search(line):
                    if len(hits) >= MAX_HITS:
                        more += 1
                        continue
                    text = line.rstrip("\r")
                    if len(text) > MAX_LINE_CHARS:
                        text = text[:MAX_LINE_CHARS] + " [line cut]"
                    hits.append(f"{rel}:{number}: {text}")
        where = "the repository" if top == "." else top
        if not hits:
            return ToolOutput(f"No match for {pattern!r} in {where}.", data={"hits": 0})
        lines = [f"{len(hits) + more} matches for {pattern!r} in {where}:", *hits]
        if more:
            lines.append(f"... {more} more matches not shown; use a narrower pattern or path")
        return ToolOutput("\n".join(lines), data={"hits": len(hits) + more})
