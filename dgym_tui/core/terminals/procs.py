"""Find and kill every process an episode started, also the ones that left its process tree.

Commands of a local (or bwrap) terminal run with an environment variable
``DGYM_EPISODE=<tag>``; children inherit it, also through ``setsid`` and
double forks (a daemon re-parented to init keeps it). At ``close()`` the
terminal kills every process of this user whose environment holds its tag
(psutil reads ``/proc/PID/environ``, the environment the process was started
with). A process that execs itself with a cleared environment escapes this
net: untrusted code belongs in the ``bwrap`` or ``docker`` terminal, whose PID
namespace / container ends with the episode.

A child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``) was the other candidate;
it makes this process the parent of every orphan of every thread, whose exit
statuses it must then collect, which races with ``subprocess`` reaping its own
children elsewhere in the program.
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: ~10 ms of the app's start, needed at close
    import psutil

#: Environment variable carrying the episode's tag into every command it runs.
TAG_VARIABLE = "DGYM_EPISODE"


def new_tag() -> str:
    """Return a fresh tag (32 hex digits) for :data:`TAG_VARIABLE`."""
    return uuid.uuid4().hex


def tagged_processes(tag: str) -> list[psutil.Process]:
    """Processes of this user (other than this one) started with ``DGYM_EPISODE=tag``.

    Args:
        tag: the value of :data:`TAG_VARIABLE` to look for.

    Returns:
        ``psutil.Process`` objects; processes that vanish or cannot be read are skipped.
    """
    import psutil

    me = os.getpid()
    if not os.path.isdir("/proc/self"):  # not Linux: psutil's portable (slower) way
        found = []
        for proc in psutil.process_iter():
            try:
                if proc.pid != me and proc.environ().get(TAG_VARIABLE) == tag:
                    found.append(proc)
            except (psutil.Error, OSError):  # gone, zombie, another user's process
                continue
        return found
    # Linux: one read of /proc/PID/environ per process (psutil.process_iter plus
    # environ() costs ~1 ms per process; this ~20 us).
    needle = f"{TAG_VARIABLE}={tag}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                data = f.read()
        except OSError:  # gone, or another user's process
            continue
        if data.startswith(needle + b"\0") or (b"\0" + needle + b"\0") in data \
                or data.endswith(b"\0" + needle):
            try:
                found.append(psutil.Process(int(name)))
            except psutil.Error:
                continue
    return found


def kill_tagged(tag: str, timeout: float = 2.0) -> list[int]:
    """SIGKILL every process started with ``DGYM_EPISODE=tag`` and wait for them to end.

    Args:
        tag: the episode's tag.
        timeout: seconds to wait for the killed processes to disappear.

    Returns:
        The pids killed (empty when none was left). Never raises.
    """
    import psutil

    victims = tagged_processes(tag)
    for proc in victims:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    # Wait without collecting exit statuses (no waitpid): a victim may be a child
    # whose subprocess.Popen / pexpect object still has to read its status.
    deadline = time.monotonic() + timeout
    pending = victims
    while pending and time.monotonic() < deadline:
        pending = [proc for proc in pending if _running(proc)]
        if pending:
            time.sleep(0.01)
    return [proc.pid for proc in victims]


def _running(proc: psutil.Process) -> bool:
    """True while ``proc`` exists and is not a zombie."""
    import psutil

    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
