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

import bisect
import re
import time
from typing import Any, ClassVar

from dgym_tui.core.fs.rules import BINARY_SNIFF_BYTES, is_binary
from dgym_tui.core.tools.base import Tool, ToolError, ToolOutput, register
from dgym_tui.core.types import WorkspaceError

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
    import re2  # here, not at import: a large C library, not needed until the first grep

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


class Corpus:
    """Text files searched as one buffer: ``b"\\n".join(contents)``.

    One RE2 call scans every file up to the next match, so the cost per file
    without a match is a few bytes of C, not a Python call. The joining
    newline keeps matches inside one file (``never_nl``).
    """

    def __init__(self, rels: list[str], datas: list[bytes]) -> None:
        self.rels, self.datas = rels, datas
        self.buffer = b"\n".join(datas)
        self.starts, offset = [], 0
        for data in datas:
            self.starts.append(offset)
            offset += len(data) + 1

    def matching_lines(self, regex):
        """Yield ``(path, line number, line bytes)`` of every line with a match, in file order."""
        skip_to, current, number, counted = 0, -1, 1, 0
        for m in regex.finditer(self.buffer):
            start = m.start()
            if start < skip_to:
                continue  # another match on a line already reported
            i = bisect.bisect_right(self.starts, start) - 1
            data, local = self.datas[i], start - self.starts[i]
            if local == len(data) and (not data or data.endswith(b"\n")):
                continue  # the empty "line" after a final newline is not a line
            if i != current:
                current, number, counted = i, 1, 0
            line_start = data.rfind(b"\n", 0, local) + 1
            number += data.count(b"\n", counted, line_start)
            counted = line_start
            line_end = data.find(b"\n", local)
            if line_end < 0:
                line_end = len(data)
            yield self.rels[i], number, data[line_start:line_end]
            skip_to = self.starts[i] + line_end + 1


@register
class GrepTool(Tool):
    """Regex search over visible text files; prints ``path:line: text`` per hit."""

    _cached: tuple | None = None

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

    def on_reset(self) -> None:
        self._cached = None

    def run(self, pattern: str, path: str = ".", ignore_case: bool = False,
            **_: Any) -> ToolOutput:
        regex = compile_pattern(pattern, ignore_case)
        ws = self.env.workspace
        top = ws.canonical(path, must_exist=True)
        deadline = time.monotonic() + TIME_BUDGET
        corpus, skipped, stopped = self._corpus(top, deadline)
        hits: list[str] = []
        more = 0
        for rel, number, line in corpus.matching_lines(regex):
            if len(hits) >= MAX_HITS:
                more += 1
                if time.monotonic() > deadline:
                    break
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

    def _corpus(self, top: str, deadline: float) -> tuple[Corpus, list[str], int]:
        """The text files below ``top`` as a :class:`Corpus`, the skipped files, the files not read.

        Reused while the working copy is unchanged (the change index says so).
        """
        ws = self.env.workspace
        files = ws.files(top, special=True) if ws.kind(top) == "folder" else [top]
        key = (id(ws), ws.version, top)
        if self._cached is not None and self._cached[0] == key and ws.watching:
            return self._cached[1]
        rels, datas, skipped, stopped = [], [], [], 0
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
            elif not is_binary(data[:BINARY_SNIFF_BYTES]):
                rels.append(rel)
                datas.append(data)
        result = (Corpus(rels, datas), skipped, stopped)
        self._cached = (key, result) if not stopped else None
        return result

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
