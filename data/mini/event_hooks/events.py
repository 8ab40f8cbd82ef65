"""A tiny event bus: handlers subscribe to event names and receive payloads."""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Callable

Handler = Callable[[dict], Any]


class EventBus:
    def __init__(self):
        self._handlers: dict[str, list[Handler]] = defaultdict(list)
        self.history: list[tuple[str, dict]] = []

    def subscribe(self, event: str, handler: Handler) -> None:
        self._handlers[event].append(handler)

    def unsubscribe(self, event: str, handler: Handler) -> None:
        self._handlers[event].remove(handler)

    def publish(self, event: str, payload: dict | None = None) -> list[Any]:
        """Call every handler of ``event``; return their results in order."""
        payload = dict(payload or {})
        self.history.append((event, payload))
        return [handler(payload) for handler in list(self._handlers[event])]


class AuditLog:
    """Records one line per event it watches: ``"<event>: <payload keys>"``."""

    def __init__(self, bus: EventBus, events: list[str]):
        self.lines: list[str] = []
        for event in events:
            bus.subscribe(event, lambda payload: self._record(event, payload))

    def _record(self, event: str, payload: dict) -> str:
        keys = ",".join(sorted(payload))
        line = f"{event}: {keys}" if keys else event
        self.lines.append(line)
        return line


class Counter:
    """Counts how often each event was published."""

    def __init__(self, bus: EventBus, events: list[str]):
        self.counts = {event: 0 for event in events}
        for event in events:
            bus.subscribe(event, self._make_handler(event))

    def _make_handler(self, event: str) -> Handler:
        def handler(payload: dict) -> int:
            self.counts[event] += 1
            return self.counts[event]
        return handler
