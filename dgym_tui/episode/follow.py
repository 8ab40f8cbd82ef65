"""Follow a trajectory file while its episode is being written (``tail -f`` for JSONL).

``dgym run`` flushes one JSON line per step (:class:`dgym_tui.episode.trajectory.TrajectoryWriter`).
:class:`TrajectoryFollower` reads only the bytes appended since its last
:meth:`~TrajectoryFollower.poll` (one ``stat`` when nothing changed), keeps a
cut-off last line until its newline arrives, and never raises on bad input:
a corrupt line is skipped and named in ``problem``; a file that shrank (rewritten)
is read again from the start. :class:`FileWatch` tells when to look again
(inotify: as soon as a line is written, no polling).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from dgym_tui.episode.trajectory import decode_lines


class TrajectoryFollower:
    """The records of one trajectory file, read incrementally.

    Args:
        path: the trajectory (``trajectory.jsonl``); it may not exist yet.

    Attributes:
        header: the header record (None until read).
        steps: the step records read so far, oldest first.
        footer: the footer record (None while the episode runs).
        problem: why some line was skipped or the file cannot be read ("" if none).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._restart()

    def _restart(self) -> None:
        """Forget everything read: the next poll reads the file from its start."""
        self.header: dict[str, Any] | None = None
        self.steps: list[dict[str, Any]] = []
        self.footer: dict[str, Any] | None = None
        self.problem = ""
        self._offset, self._partial, self._lineno = 0, b"", 0

    def poll(self) -> list[dict[str, Any]]:
        """Read what was appended since the last call.

        Returns:
            The new step records (oldest first; [] when nothing new). A shrunk
            file restarts from its beginning: then every step is new again and
            ``steps`` holds only them.
        """
        try:
            size = os.stat(self.path).st_size
        except OSError:
            return []
        if size < self._offset:
            self._restart()
        if size == self._offset:
            return []
        try:
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = f.read(size - self._offset)
        except OSError as exc:
            self.problem = f"trajectory unreadable: {exc.strerror}"
            return []
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        new: list[dict[str, Any]] = []
        first, self._lineno = self._lineno + 1, self._lineno + len(lines)
        for lineno, record, _problem in decode_lines(lines, first):
            if record is None:
                self.problem = f"corrupt line {lineno} skipped"
                continue
            kind = record.get("type")
            if kind == "header":
                self.header = record
            elif kind == "step":
                new.append(record)
            elif kind == "footer":
                self.footer = record
            elif kind == "applied" and self.footer is not None:  # w after the end
                self.footer.setdefault("applied_to_source", []).append(record)
        self.steps.extend(new)
        return new


class FileWatch:
    """Wait for a file to change: Linux inotify on its folder, else a plain sleep (polling).

    Args:
        path: the file (its folder must exist for inotify; otherwise this polls).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.name = Path(path).name
        self._inotify: Any = None
        try:
            from inotify_simple import INotify
            from inotify_simple import flags as in_flags

            inotify = INotify()
            inotify.add_watch(str(Path(path).parent),
                              in_flags.MODIFY | in_flags.CREATE | in_flags.MOVED_TO)
            self._inotify = inotify
        except (ImportError, OSError):
            self._inotify = None

    @property
    def polls(self) -> bool:
        """True when there is no inotify: :meth:`wait` only sleeps."""
        return self._inotify is None

    def wait(self, timeout: float) -> bool:
        """Block until the file is written or created, or ``timeout`` seconds passed.

        Returns:
            True when the file changed (always True when polling: look anyway).
        """
        if self._inotify is None:
            time.sleep(timeout)
            return True
        return any(event.name == self.name
                   for event in self._inotify.read(timeout=int(timeout * 1000)))

    def close(self) -> None:
        """Release the inotify descriptor; idempotent."""
        if self._inotify is not None:
            self._inotify.close()
            self._inotify = None
