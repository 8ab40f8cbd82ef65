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

import os
import uuid

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
    me = os.getpid()
    found = []
    for proc in psutil.process_iter():
        if proc.pid == me:
            continue
        try:
            if proc.environ().get(TAG_VARIABLE) == tag:
                found.append(proc)
        except (psutil.Error, OSError):  # gone, zombie, another user's process
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
    victims = tagged_processes(tag)
    for proc in victims:
        try:
            proc.kill()
        except psutil.Error:
            pass
    if victims:
        psutil.wait_procs(victims, timeout=timeout)
    return [proc.pid for proc in victims]
