"""Bounded capture of command output: keeps the head and the tail, counts the rest."""

from __future__ import annotations

from collections import deque


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
