"""Look up ahead, in a thread, the names a test run first asks a fresh overlay for.

The first lookup of a name in a just-mounted overlay costs the kernel more
than in a plain folder (an overlay dentry and inode are made, the upper and
lower layers asked), and nothing of a fresh overlay is cached: every reset
mounts one. pytest's collection of the root folder looks up every folder
there and three names in each (``pyvenv.cfg`` and ``conda-meta``: a virtual
environment?, ``__init__.py``: a package?), so a reset's eval paid those
first lookups while pytest collected. Measured at 10,000 files in 200
folders (thread CPU time of that collection, 21 rounds, load 7-8): 23.3 ms
(fastest) / 26.0 ms (median) in the plain original, 27.6 / 31.3 ms in a fresh
overlay, 23.1 / 26.2 ms in a fresh overlay after these lookups.

:class:`LookAhead` makes the same lookups in a thread of the host when the
eval's command starts (``Workspace.look_ahead``), after :data:`START_DELAY`,
while the shell, the sandbox and Python start (hundreds of milliseconds, the
host waiting), so the sandbox's first lookups find them in the kernel's cache.
Started when the overlay was mounted, the thread shared the host's interpreter
lock and CPU with the terminal's start, which then took ~10 ms longer (load
7); started at once with the command, it delayed the command's launch by ~5 ms.

What it does to the working copy: nothing. Folders are listed and opened
without following links (``O_NOFOLLOW``; ``O_PATH`` unless listed) through
a descriptor of the merged view of the thread's own, names are looked up
(``faccessat``), no file is opened or read. It is bounded (:data:`MAX_FOLDERS`,
:data:`MAX_ENTRIES`, :data:`MAX_LISTED`) and stopped and joined when the
working copy is cleaned up, so it never outlives it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import shlex
import threading
from collections.abc import Collection

from dgym_tui.core.fdtree import open_subdir

log = logging.getLogger(__name__)

#: Names looked up in every folder visited (what pytest asks of each folder it
#: collects from: ``_in_venv``'s ``pyvenv.cfg`` and ``conda-meta/history``, and
#: ``__init__.py`` for a package).
NAMES = ("pyvenv.cfg", "conda-meta", "__init__.py")
#: Seconds the thread waits before looking up when started with a command: the
#: command's launch in this process then does not queue for the interpreter lock
#: behind the thread's many short system calls (a ``Popen`` with a ``preexec_fn`` at
#: 10,000 files: 4.0 ms alone, 8.7 ms with the thread starting at once, 4.7 ms with it
#: starting 20 ms later; median of 31, load 3.4). pytest collects hundreds of ms after
#: the launch (Python's and pytest's start), the lookups take ~6-14 ms.
START_DELAY = 0.05
#: Folders visited at most, both levels together.
MAX_FOLDERS = 2_000
#: Entries of the root read at most when listing it.
MAX_ENTRIES = 10_000
#: Entries of the root's folders read at most when listing them, all together (the
#: second level is looked up in the folders listed within it).
MAX_LISTED = 2_000
#: Folders never visited: caches the tests write.
SKIPPED = ("__pycache__", ".pytest_cache")

_PATH_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_ACCESS = os.access in os.supports_dir_fd and os.access in os.supports_follow_symlinks


def _folders(fd: int, limit: int = MAX_ENTRIES) -> tuple[list[str], int]:
    """``(names of the folders in folder fd, entries read)``: ``d_type`` tells folders
    (no link followed), at most ``limit`` entries are read."""
    names, count = [], 0
    with os.scandir(fd) as entries:
        for entry in entries:
            if count >= limit:
                break
            count += 1
            if entry.name not in SKIPPED and entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
    return names, count


def test_folders(command: str) -> frozenset[str] | None:
    """The root folders a test command names on its way to its tests, for
    :func:`look_up`'s ``within``: the first part of each word naming a path below a
    folder (``tests/x/test_y.py::test_a`` -> ``tests``). pytest lists every folder
    on the way from the root to a path it is given (and the root itself), so those are
    the folders whose own folders it looks up; a test file at the root names none.

    Returns:
        The folder names (empty when every path the command names is a file at the
        root), or None when that cannot be told: the command does not run pytest
        itself (a script may collect anything), no word names a path (a bare
        ``pytest``), the line cannot be split, a path is absolute or leaves the root,
        or the command changes folder (``cd``).
    """
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return None
    if "cd" in words or "pushd" in words or not any(
            posixpath.basename(word) in ("pytest", "py.test") for word in words):
        return None
    folders: set[str] = set()
    named = False
    for word in words:
        path = word.split("::", 1)[0]
        if word.startswith("-") or "=" in word or not (path.endswith(".py") or "/" in path):
            continue
        path = posixpath.normpath(path)
        if path.startswith(("/", "..")):
            return None
        named = True
        if "/" in path:
            folders.add(path.split("/", 1)[0])
    return frozenset(folders) if named else None


def look_up(fd: int, stop: threading.Event | None = None,
            within: Collection[str] | None = None) -> list[str]:
    """Look up the folders of folder ``fd`` and :data:`NAMES` in each, then the same one
    level down (a test path such as ``tests/x/test_y.py`` makes pytest collect
    ``tests`` as well as the root).

    Args:
        fd: an open folder (not closed here).
        stop: when set, return at the next folder.
        within: the root's folders to look into one level down (:func:`test_folders`);
            None: every one, within :data:`MAX_LISTED` entries.

    Returns:
        The relative paths of the folders visited, in order (the root's folders
        first, then theirs in the root's folders listed within :data:`MAX_LISTED`
        entries), at most :data:`MAX_FOLDERS`.

    Raises:
        OSError: the root folder cannot be listed.
    """
    visited: list[str] = []
    top, _ = _folders(fd)
    budget = MAX_LISTED
    inside = top if within is None else [name for name in top if name in within]
    for parent, names in [("", top), *((name, None) for name in inside)]:
        if len(visited) >= MAX_FOLDERS or budget <= 0 or (stop is not None and stop.is_set()):
            break
        here = os.dup(fd) if names is not None else open_subdir(fd, parent)
        if here is None:
            continue
        try:
            if names is None:
                try:
                    names, read = _folders(here, budget)
                except OSError:
                    continue
                budget -= read
            for name in names:
                if len(visited) >= MAX_FOLDERS or (stop is not None and stop.is_set()):
                    break
                if _look_in(here, name):
                    visited.append(f"{parent}/{name}" if parent else name)
        finally:
            os.close(here)
    return visited


def _look_in(parent: int, name: str) -> bool:
    """Look up folder ``name`` of folder ``parent`` (``O_PATH``, no link followed) and
    :data:`NAMES` in it; False when it is not a folder (any more)."""
    try:
        fd = os.open(name, _PATH_FLAGS, dir_fd=parent)
    except OSError:
        return False
    try:
        for leaf in NAMES:
            _exists(leaf, fd)
    finally:
        os.close(fd)
    return True


def _exists(name: str, dir_fd: int) -> None:
    """Look up ``name`` in folder ``dir_fd`` without following a link: ``faccessat``
    (no exception object for a missing name: ~1 of the thread's ~6 ms of CPU at 10,000
    files), else ``lstat``."""
    if _ACCESS:
        os.access(name, os.F_OK, dir_fd=dir_fd, follow_symlinks=False)
        return
    with contextlib.suppress(OSError):
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)


class LookAhead:
    """:func:`look_up` in the folder ``fd``, in a daemon thread started at once.

    Args:
        fd: the working copy's merged view, a folder; opened again (a description of
            the thread's own: listing it never moves the caller's position). When that
            fails nothing is started (a head start only: never an error).
        delay: seconds the thread waits before its first lookup (:data:`START_DELAY`
            when a command is being launched); :meth:`stop` ends the wait.
        within: as for :func:`look_up`.

    Attributes:
        visited: :func:`look_up`'s answer once the thread is done (empty before).
    """

    def __init__(self, fd: int, delay: float = 0.0,
                 within: Collection[str] | None = None) -> None:
        self.visited: list[str] = []
        self._delay = delay
        self._within = within
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        try:
            own = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=fd)
        except OSError:
            log.debug("cannot look up the working copy's folders ahead", exc_info=True)
            return
        thread = threading.Thread(target=self._run, args=(own,), name="dgym-lookahead",
                                  daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no new thread at interpreter shutdown
            os.close(own)
            return
        self._thread = thread

    def _run(self, fd: int) -> None:
        try:
            if not self._stop.wait(self._delay):
                self.visited = look_up(fd, self._stop, self._within)
        except Exception:  # noqa: BLE001  a head start only: the sandbox looks up anyway
            log.debug("looking up the working copy's folders ahead failed", exc_info=True)
        finally:
            os.close(fd)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: no limit) for the lookups to end.

        Returns:
            True when the thread is done (or never started).
        """
        if self._thread is not None:
            self._thread.join(timeout)
        return not self.running

    def stop(self) -> None:
        """Stop the lookups and wait for the thread (one folder's lookups at most)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    @property
    def running(self) -> bool:
        """Whether the thread is still looking up."""
        return self._thread is not None and self._thread.is_alive()
