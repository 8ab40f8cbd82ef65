"""dgym-tui's console script with a timestamp at each hop of a step (for bench_c.py).

Run as ``python bench/c_hops.py ARGS`` (the arguments of ``dgym-tui``) with ``C_HOPS_LOG``
naming a file: each line is ``TIME NAME [DETAIL]``, ``TIME`` from ``time.perf_counter()``
(the system's monotonic clock: comparable with the driver's own timestamps). The hops: a
key read by Textual's input thread (``key``, with the key's name), the screen's action
(``act``), the worker's session call (``session``), pdb's command written and its reply
read (``pdb``, with the CPU seconds the pdb process and its children used meanwhile, and
the app's own; not with ``C_HOPS_NO_CPU`` set: psutil's look at the process tree
takes a few ms before and after pdb's command), the step's line written to the
trajectory (``record``), the bridge reading the state after the step (``turn``), the
screen handling the call's end (``done``: busy cleared, the screen released), and each
write of a frame to the terminal (``frame``, with its size in bytes).

Nothing of dgym-tui is changed but these wrappers, installed before the app starts. The
checkout imported is the one on ``PYTHONPATH`` (bench_n_key's ``--baseline``), else this
file's.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402

#: the log (opened by :func:`install`, for the app's life)
_LOG: list[Any] = []


def mark(name: str, detail: str = "") -> None:
    """Write one timestamped line."""
    _LOG[0].write(f"{time.perf_counter():.6f} {name} {detail}\n")


#: the CPU clock of the app's thread (the main thread), set by :func:`install`
_APP_CLOCK: list[int] = []


def app_cpu() -> str:
    """CPU seconds used so far by the app's thread, as text ("0" before :func:`install`)."""
    return f"{time.clock_gettime(_APP_CLOCK[0]):.6f}" if _APP_CLOCK else "0"


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` and its descendants; 0 when gone."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        for proc in (root, *root.children(recursive=True)):
            times = proc.cpu_times()
            total += times.user + times.system
    except psutil.Error:
        pass
    return total


def around(cls: type, attr: str, name: str) -> None:
    """Mark ``name>`` before and ``name<`` after each call of ``cls.attr``."""
    original = getattr(cls, attr)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        mark(f"{name}>", app_cpu())
        try:
            return original(*args, **kwargs)
        finally:
            mark(f"{name}<", app_cpu())

    setattr(cls, attr, wrapper)


def install() -> None:
    """Open ``C_HOPS_LOG`` and wrap the hops (see the module docstring)."""
    _LOG.append(open(os.environ["C_HOPS_LOG"], "a", buffering=1))  # noqa: SIM115
    _APP_CLOCK.append(time.pthread_getcpuclockid(threading.main_thread().ident or 0))
    from textual import events
    from textual.drivers import linux_driver

    from dgym_tui.core.pdb import session as pdb_session
    from dgym_tui.episode import session as episode_session
    from dgym_tui.episode import trajectory
    from dgym_tui.tui import bridge
    from dgym_tui.tui.live import screen

    around(screen.LiveScreen, "act", "act")
    around(screen.LiveScreen, "_call_finished", "done")
    around(episode_session.Session, "act", "session")
    around(bridge.SessionBridge, "_turn", "turn")
    around(trajectory.TrajectoryWriter, "write_step", "record")

    process_message = linux_driver.LinuxDriver.process_message

    @functools.wraps(process_message)
    def timed_process_message(self: Any, message: Any) -> None:
        if isinstance(message, events.Key):
            mark("key", message.key)
        process_message(self, message)

    linux_driver.LinuxDriver.process_message = timed_process_message

    send_many = pdb_session.PdbSession.send_many

    with_cpu = not os.environ.get("C_HOPS_NO_CPU")  # psutil's look at the tree: ms each

    @functools.wraps(send_many)
    def timed_send_many(self: Any, *args: Any, **kwargs: Any) -> Any:
        pid = self.child.pid if self.child is not None and with_cpu else 0
        cpu, own = tree_cpu(pid) if pid else 0.0, time.process_time()
        mark("pdb>")
        try:
            return send_many(self, *args, **kwargs)
        finally:
            mark("pdb<", f"{(tree_cpu(pid) if pid else 0.0) - cpu:.3f} "
                         f"{time.process_time() - own:.3f} {self.started_as}")

    pdb_session.PdbSession.send_many = timed_send_many

    write = linux_driver.LinuxDriver.write

    @functools.wraps(write)
    def timed_write(self: Any, data: str) -> None:
        mark("frame", f"{len(data)} {app_cpu()}")
        write(self, data)

    linux_driver.LinuxDriver.write = timed_write


if __name__ == "__main__":
    install()
    from dgym_tui.cli.main import tui_main

    sys.exit(tui_main())
