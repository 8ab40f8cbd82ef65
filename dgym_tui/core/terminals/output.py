"""Bounded capture of command output (keeps the head and the tail, counts the rest), and
the reader that fills it from an interactive process up to a marker."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import pexpect


class BoundedOutput:
    """Collects bytes up to ``limit``: the first half and the last half are kept.

    Memory stays O(limit) however much is fed. ``text()`` decodes as UTF-8
    (invalid bytes replaced) and inserts a note saying how many bytes were cut.
    """

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._head = bytearray()
        self._tail: deque[bytes] = deque()
        self._tail_len = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        """Add ``chunk`` (bytes) to the capture."""
        self.total += len(chunk)
        half = self.limit // 2
        room = half - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self._tail.append(chunk)
        self._tail_len += len(chunk)
        while self._tail and self._tail_len - len(self._tail[0]) >= self.limit - half:
            self._tail_len -= len(self._tail.popleft())

    @property
    def dropped(self) -> int:
        """Bytes fed but not kept."""
        return max(0, self.total - self.limit)

    def text(self) -> str:
        """Return the kept output as text, with a truncation note when bytes were cut."""
        tail = b"".join(self._tail)
        keep_tail = self.limit - len(self._head)
        if self.total <= self.limit:
            return (bytes(self._head) + tail).decode("utf-8", "replace")
        tail = tail[-keep_tail:] if keep_tail > 0 else b""
        note = (f"\n... [output truncated: {self.dropped} of {self.total} bytes cut; "
                f"showing the first {len(self._head)} and last {len(tail)} bytes] ...\n")
        return (self._head.decode("utf-8", "replace") + note + tail.decode("utf-8", "replace"))


def read_until(child, buf: str, out: BoundedOutput, find: Callable[[str], Any], keep: int,
               deadline: float, on_read: Callable[[str], str] | None = None) -> tuple[str, Any, str]:
    """Read an interactive process's output into ``out`` until ``find`` matches, the
    deadline passes, or the process ends; event-driven (blocks in ``select``, no polling).

    Args:
        child: a process from ``Terminal.spawn`` (``read_nonblocking(size, timeout)``).
        buf: text read before and not consumed yet.
        out: receives the text before the match (memory stays bounded).
        find: ``find(text)`` returns a match (with ``start()`` / ``end()``) or None.
        keep: characters held back from ``out`` while waiting, so that a match split
            across two reads is still found (at least the longest match's length).
        deadline: ``time.monotonic()`` value at which to stop.
        on_read: called with the unconsumed text before each wait; returns it, maybe
            extended (pdb answers a confirmation question there).

    Returns:
        ``(status, match, rest)``: ``"found"`` with the match and the text after it, or
        ``"timeout"`` / ``"exited"`` with None and ``""`` (everything read is in ``out``).
    """
    status = "timeout"
    while True:
        match = find(buf)
        if match:
            out.feed(buf[:match.start()].encode("utf-8", "replace"))
            return "found", match, buf[match.end():]
        if on_read is not None:
            buf = on_read(buf)
        if len(buf) > keep:
            out.feed(buf[:-keep].encode("utf-8", "replace"))
            buf = buf[-keep:]
        left = deadline - time.monotonic()
        if left <= 0:
            break
        try:
            buf += child.read_nonblocking(65536, timeout=left)
        except pexpect.TIMEOUT:
            break
        except (pexpect.EOF, OSError, ValueError):
            status = "exited"
            break
    out.feed(buf.encode("utf-8", "replace"))
    return status, None, ""
