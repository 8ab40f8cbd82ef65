"""Follow a trajectory file while its episode is being written (``tail -f`` for JSONL).

``dgym run`` flushes one JSON line per step (:class:`dgym_tui.trajectory.TrajectoryWriter`).
:class:`TrajectoryFollower` reads only the bytes appended since its last
:meth:`~TrajectoryFollower.poll` (one ``stat`` when nothing changed), keeps a
cut-off last line until its newline arrives, and never raises on bad input:
a corrupt line is skipped and named in ``problem``; a file that shrank (rewritten)
is read again from the start.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


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
        self.header: dict[str, Any] | None = None
        self.steps: list[dict[str, Any]] = []
        self.footer: dict[str, Any] | None = None
        self.problem = ""
        self._offset = 0
        self._partial = b""
        self._lineno = 0

    def _restart(self) -> None:
        self.header, self.steps, self.footer, self.problem = None, [], None, ""
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
        for line in lines:
            self._lineno += 1
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                record = None
            if not isinstance(record, dict):
                self.problem = f"corrupt line {self._lineno} skipped"
                continue
            kind = record.get("type")
            if kind == "header":
                self.header = record
            elif kind == "step":
                new.append(record)
            elif kind == "footer":
                self.footer = record
        self.steps.extend(new)
        return new
