"""The stop signal of a run (Ctrl-C): shared by the executors and the episodes they run."""

from __future__ import annotations

import threading
from typing import Any

#: Footer reason and status state of an episode stopped by Ctrl-C.
INTERRUPTED = "interrupted"


class StopSignal:
    """The stop signal of one run: set by Ctrl-C, read by every episode loop.

    ``episodes`` holds the sessions of running episodes so the main thread can
    abort them and close their terminals (killing their processes) when a worker
    is blocked in a step.
    """

    def __init__(self) -> None:
        self.event = threading.Event()
        self.lock = threading.Lock()
        self.episodes: dict[str, Any] = {}

    def add(self, name: str, session: Any) -> None:
        with self.lock:
            self.episodes[name] = session

    def discard(self, name: str) -> None:
        with self.lock:
            self.episodes.pop(name, None)

    def trigger(self) -> None:
        """Stop every episode: no new step starts; running commands are killed."""
        self.event.set()
        with self.lock:
            episodes = list(self.episodes.values())
        for session in episodes:
            session.abort(INTERRUPTED)  # a step cut short must not end as "submitted"
            session.env.stop_commands()  # env.close() follows in the episode's thread
