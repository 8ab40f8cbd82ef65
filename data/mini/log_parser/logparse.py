"""Parse service log lines and summarise them.

A line looks like::

    2024-03-01T12:00:01Z WARN db: connection lost
    <timestamp>          <level> <source>: <message>

The message is free text and may itself contain ": ".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

LEVELS = ("DEBUG", "INFO", "WARN", "ERROR")


class ParseError(ValueError):
    pass


@dataclass(frozen=True)
class Record:
    when: datetime
    level: str
    source: str
    message: str


def parse_line(line: str) -> Record:
    line = line.rstrip("\n")
    try:
        stamp, level, rest = line.split(" ", 2)
    except ValueError:
        raise ParseError(f"not a log line: {line!r}") from None
    if level not in LEVELS:
        raise ParseError(f"unknown level {level!r}")
    if ": " not in rest:
        raise ParseError(f"missing source in {line!r}")
    source, message = rest.rsplit(": ", 1)
    when = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    return Record(when, level, source.strip(), message.strip())


def parse(text: str) -> list[Record]:
    """Parse every non-blank line that does not start with ``#``."""
    return [parse_line(line) for line in text.splitlines()
            if line.strip() and not line.startswith("#")]


def errors_by_source(records: list[Record]) -> dict[str, int]:
    counts = Counter(r.source for r in records if r.level == "ERROR")
    return dict(counts.most_common())


def first_at_or_above(records: list[Record], level: str) -> Record | None:
    threshold = LEVELS.index(level)
    for record in records:
        if LEVELS.index(record.level) >= threshold:
            return record
    return None
