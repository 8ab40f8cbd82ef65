"""Process checks shared by the terminal tests (local, bwrap): is a pid still running?"""

from __future__ import annotations

import time


def alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    """Wait up to ``seconds`` for ``pid`` to end; True when it has."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)
