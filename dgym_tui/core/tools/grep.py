"""grep: search the visible text files of the working copy with a regular expression.

The engine is RE2 (``google-re2``): matching time is linear in the text, so a
pattern such as ``(a+)+$`` cannot hang a step, and a C call never holds the
interpreter long enough to delay a signal handler. Patterns RE2 cannot take
(backreferences, lookaround) get a one-line refusal. Each file is searched
whole (``never_nl``: no match crosses a line end), then the matching lines
are numbered. A time budget bounds the whole search; files skipped (too big,
not regular, unreadable) are named in the observation.
"""

from __future__ import annotations

import re
import time
from typing import Any, ClassVar

import re2

from dgym_tui.core.tools.base import Tool, ToolError, ToolOutput, register
from dgym_tui.core.workspace import BINARY_SNIFF_BYTES, WorkspaceError, is_binary

#: Most matching lines one grep shows; the rest are counted in a closing note.
MAX_HITS = 100
#: Files larger than this (bytes) are skipped (and named).
MAX_FILE_BYTES = 2 * 1024 * 1024
#: Matching lines are cut to this many characters.
MAX_LINE_CHARS = 200
#: Seconds one grep may search before it stops with a note.
TIME_BUDGET = 10.0
#: Skipped files named in the observation (the rest are counted).
MAX_SKIPPED_SHOWN = 10


def compile_pattern(pattern: str, ignore_case: bool = False):
    """Compile ``pattern`` for RE2 on UTF-8 bytes, one line at a time.

    Returns:
        A compiled RE2 pattern (``search(bytes, pos)``).

    Raises:
        ToolError: the pattern is invalid, or uses a feature RE2 lacks.
    """
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}; escape special "
                        "characters such as ( [ . * with a backslash") from None
    options = re2.Options()
    options.never_nl = True
    options.log_errors = False
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(("(?m)" + pattern).encode("utf-8", "surrogateescape"), options)
    except re2.error:
        raise ToolError(f"the pattern {pattern!r} uses a feature the linear-time engine does "
                        "not support (backreferences, lookahead / lookbehind, possessive "
                        "quantifiers); rewrite it without them") from None


def matching_lines(regex, data: bytes):
    """Yield ``(line number, line bytes)`` of every line of ``data`` with a match."""
    pos, number, counted, end = 0, 1, 0, len(data)
    while pos <= end:
        m = regex.search(data, pos)
        if m is None:
            break
        start = m.start()
        if start == end and (end == 0 or data.endswith(b"\n")):
            break  # the empty "line" after a final newline is not a line
        line_start = data.rfind(b"\n", 0, start) + 1
        number += data.count(b"\n", counted, line_start)
        counted = line_start
        line_end = data.find(b"\n", start)
        if line_end < 0:
            line_end = end
        yield number, data[line_start:line_end]
        pos = line_end + 1


@register
class GrepTool(Tool):
    """Regex search over visible text files; prints ``path:line: text`` per hit."""

    name = "grep"
    instructions = (
        "Search the repository's text files for a regular expression (RE2 / Python syntax "
        "without backreferences or lookaround) and list the matching lines as "
        "`path:line: text`. `path` limits the search to a folder or a file (default '.'). "
        f"At most {MAX_HITS} matches are shown.")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "minLength": 1,
                        "description": "Regular expression, e.g. 'def parse_\\w+'"},
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
        regex = compile_pattern(pattern, ignore_case)
        ws = self.env.workspace
        top = ws.canonical(path, must_exist=True)
        files = ws.files(top, special=True) if ws.kind(top) == "folder" else [top]
        hits: list[str] = []
        skipped: list[str] = []
        more = 0
        deadline = time.monotonic() + TIME_BUDGET
        stopped = 0
        for i, rel in enumerate(files):
            if time.monotonic() > deadline:
                stopped = len(files) - i
                break
            reason = self._skip_reason(rel)
            if reason is None:
                try:
                    data = ws.cached_bytes(rel, MAX_FILE_BYTES + 1)
                except WorkspaceError:
                    reason = "could not be read"
                else:
                    if len(data) > MAX_FILE_BYTES:
                        reason = f"over {MAX_FILE_BYTES // (1 << 20)} MB"
            if reason is not None:
                skipped.append(f"{rel} ({reason})")
                continue
            if is_binary(data[:BINARY_SNIFF_BYTES]):
                continue
            for number, line in matching_lines(regex, data):
                if len(hits) >= MAX_HITS:
                    more += 1
                    continue
                text = line.decode("utf-8", "replace").rstrip("\r")
                if len(text) > MAX_LINE_CHARS:
                    text = text[:MAX_LINE_CHARS] + " [line cut]"
                hits.append(f"{rel}:{number}: {text}")
        where = "the repository" if top == "." else top
        lines = ([f"{len(hits) + more} matches for {pattern!r} in {where}:", *hits] if hits
                 else [f"No match for {pattern!r} in {where}."])
        if more:
            lines.append(f"... {more} more matches not shown; use a narrower pattern or path")
        if skipped:
            shown = ", ".join(skipped[:MAX_SKIPPED_SHOWN])
            rest = len(skipped) - MAX_SKIPPED_SHOWN
            lines.append(f"[not searched: {shown}{f' and {rest} more' if rest > 0 else ''}]")
        if stopped:
            lines.append(f"[search stopped after {TIME_BUDGET:g} s; {stopped} files not "
                         "searched: give a narrower path]")
        return ToolOutput("\n".join(lines), data={"hits": len(hits) + more,
                                                  "skipped": len(skipped) + stopped})

    def _skip_reason(self, rel: str) -> str | None:
        entry = self.env.workspace.entry(rel)
        if entry is None:
            return None  # a single file named by the caller, or a link: read checks it
        kind, size = entry
        if kind not in ("file", "link"):
            return f"{kind}, not a regular file"
        if kind == "file" and size > MAX_FILE_BYTES:
            return f"over {MAX_FILE_BYTES // (1 << 20)} MB"
        return None
