"""A thread that hands work to another process says so, for a thread that waits to see
it done before it competes for the interpreter.

The app's session thread runs a step while the app's own thread writes the step's echo;
the two share Python's GIL, and the app's thread took it back at the first system call
the step made (a file read, a look at whether pdb still runs) before pdb had its command:
pdb started 1.5-3 ms later in about a third of the keys (``bench/bench_n_key.py --hops``).
The session thread names an event with :func:`expecting` around a call; code that writes
a command to a process calls :func:`handed_off` once it is written, which sets it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_local = threading.local()


@contextmanager
def expecting(event: threading.Event) -> Iterator[None]:
    """Within the block, :func:`handed_off` on this thread sets ``event``."""
    previous = getattr(_local, "event", None)
    _local.event = event
    try:
        yield
    finally:
        _local.event = previous


def handed_off() -> None:
    """A command is on its way to another process (written to it): set the event this
    thread is :func:`expecting`, if any. Cheap; never raises."""
    event = getattr(_local, "event", None)
    if event is not None:
        event.set()
