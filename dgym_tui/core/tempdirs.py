"""Names of dgym's temporary folders: ``dgym-<kind>-<owner pid>-<random>``.

Every temporary folder dgym makes is named here, with the pid of the process that made
it. A process killed with SIGKILL runs no cleanup (nor ``atexit``, nor ``finally``), so
what it made stays; the owner pid in the name lets a later dgym process tell such a
folder from one still in use, and its sweep
(:func:`dgym_tui.core.fs.workspace.remove_stale_folders`) deletes it.
"""

from __future__ import annotations

import os
import re
import tempfile

#: Every kind of temporary folder, and what it holds.
KINDS: dict[str, str] = {
    "ws": "a working copy (copy, or an overlay's layers)",
    "scratch": "a terminal's scratch folder (the sandbox's /tmp)",
    "plugin": "a terminal's pytest plugin and preload module",
    "sandbox": "bwrap's and docker's support files (passwd, group, hosts, empty)",
    "overlay-probe": "the check that an overlay working copy can be mounted here",
    "tasks": "copies of task folders (benchmarks.base.stage_copy)",
    "fork-source": "the original rebuilt for a fork of a recording",
    "ray": "an episode's output on a Ray node",
    "merge": "the three sides of a three-way merge",
    "fixture": "the build context of a test image",
    "wheels": "the downloaded parts of a local model",
}

_NAME = re.compile(r"dgym-(?:" + "|".join(sorted(map(re.escape, KINDS), key=len, reverse=True))
                   + r")-([0-9]{1,10})-[^/]+\Z")


def prefix(kind: str) -> str:
    """The name start ``dgym-<kind>-<this pid>-`` of a temporary folder of ``kind``
    (for ``tempfile.mkdtemp`` / ``TemporaryDirectory``).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown kind of temporary folder {kind!r}")
    return f"dgym-{kind}-{os.getpid()}-"


def make(kind: str, parent: str | None = None) -> str:
    """Create a new empty folder (mode 0700) ``<parent>/dgym-<kind>-<this pid>-<random>``.

    Args:
        kind: one of :data:`KINDS`.
        parent: where (default: the system's temporary folder, ``$TMPDIR``).

    Returns:
        The folder's absolute path.

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
        OSError: the folder cannot be made.
    """
    return tempfile.mkdtemp(prefix=prefix(kind), dir=parent)


def owner_pid(name: str) -> int | None:
    """The owner pid in ``name`` (a folder's name, no path) when it is a temporary folder
    named by :func:`make`; None otherwise."""
    match = _NAME.match(name)
    return int(match.group(1)) if match else None
