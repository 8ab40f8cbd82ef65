"""An index of a tree's visible entries, kept current at a cost bounded by what changed.

The first scan walks the tree through folder descriptors (``safefs``), never
following links. After that, Linux inotify (``inotify_simple``, a small
well-kept ctypes wrapper) reports which names changed in which folder, and
only those are looked at again: a step that changed nothing costs one
non-blocking read, whatever the size of the repository. Watches are added
through ``/proc/self/fd`` on folders we opened ourselves, so a folder swapped
for a link is never watched by name. Without inotify (another OS, no watches
left) or after the kernel's queue overflowed, :meth:`TreeIndex.refresh`
falls back to a full scan.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import stat
from collections.abc import Callable
from typing import Any, NamedTuple

from dgym_tui.core.fdtree import open_subdir, scan_fd
from dgym_tui.core.fs.safefs import SafeTree

log = logging.getLogger(__name__)

@functools.cache
def _inotify_api() -> tuple[Any, Any, int]:
    """``(INotify class, inotify flags, watch mask)``; ``(None, None, 0)`` without inotify.

    Imported at the first index (the episode's thread), not with this module: an app's first
    frame imports the working copy's module before any copy exists.
    """
    try:  # Linux only
        import inotify_simple
        from inotify_simple import INotify
        from inotify_simple import flags as _in
    except (ImportError, OSError):  # pragma: no cover - non-Linux
        return None, None, 0
    from dgym_tui.core.namespaces import libc as _libc

    # The C library inotify_simple calls: the handle this process already holds. Its own,
    # looked up at the first INotify with ctypes.util.find_library, ran `ldconfig -p` (a
    # process) in every process's first working copy, on the way to the first eval.
    if getattr(inotify_simple, "_libc", ...) is None:
        inotify_simple._libc = _libc
    mask = (_in.CREATE | _in.DELETE | _in.MODIFY | _in.ATTRIB | _in.MOVED_FROM | _in.MOVED_TO
            | _in.DELETE_SELF | _in.MOVE_SELF | _in.ONLYDIR | _in.EXCL_UNLINK)
    return INotify, _in, mask


class Stamp(NamedTuple):
    """What tells two versions of an entry apart without reading it."""

    mode: int      # st_mode (type and permission bits)
    size: int
    mtime_ns: int
    ino: int


def stamp(st: os.stat_result) -> Stamp:
    """The :class:`Stamp` of an ``lstat`` result."""
    return Stamp(st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino)


class TreeIndex:
    """Visible non-folder entries of a tree: ``{relative path: Stamp}``, plus visible folders.

    Args:
        tree: the tree to index.
        visible: ``visible(rel, is_dir) -> bool``; hidden folders are not entered.

    Attributes:
        entries: ``{rel: Stamp}`` of files, links and special files.
        dirs: relative paths of the visible folders (without ".").
        watching: True while inotify keeps the index current.
    """

    def __init__(self, tree: SafeTree, visible: Callable[[str, bool], bool]) -> None:
        self.tree = tree
        self.visible = visible
        self.entries: dict[str, Stamp] = {}
        self.dirs: set[str] = set()
        self._wd: dict[int, str] = {}
        self._inotify = None
        inotify, self._in, self._mask = _inotify_api()
        if inotify is not None:
            try:
                self._inotify = inotify(nonblocking=True)
            except OSError:
                log.debug("inotify unavailable; scanning on every refresh", exc_info=True)
        self.watching = self._inotify is not None
        self._scan_all()

    def close(self) -> None:
        """Stop watching. Idempotent."""
        if self._inotify is not None:
            with contextlib.suppress(OSError):
                self._inotify.close()
            self._inotify = None
            self.watching = False

    # -------------------------------------------------------------------- scans
    def _scan_all(self) -> None:
        self.entries, self.dirs = {}, set()
        if self._inotify is not None:
            for wd in list(self._wd):
                with contextlib.suppress(OSError):
                    self._inotify.rm_watch(wd)
            self._wd.clear()
        fd = os.dup(self.tree.fd)
        self._scan(fd, "")

    def _scan(self, fd: int, prefix: str) -> None:
        """Index the folder open as ``fd`` (closed here) and everything visible below it."""
        stack = [(fd, prefix)]
        while stack:
            fd, prefix = stack.pop()
            try:
                self._watch(fd, prefix.rstrip("/") or ".")
                for name, st in scan_fd(fd):
                    rel = prefix + name
                    is_dir = stat.S_ISDIR(st.st_mode)
                    if not self.visible(rel, is_dir):
                        continue
                    if not is_dir:
                        self.entries[rel] = stamp(st)
                        continue
                    sub = open_subdir(fd, name)
                    if sub is not None:
                        self.dirs.add(rel)
                        stack.append((sub, rel + "/"))
            except OSError:
                log.debug("scanning %r failed", prefix, exc_info=True)
            finally:
                os.close(fd)

    def _watch(self, fd: int, rel: str) -> None:
        if self._inotify is None:
            return
        try:
            # through our own descriptor: a folder swapped for a link is never watched
            wd = self._inotify.add_watch(f"/proc/self/fd/{fd}", self._mask)
        except OSError as exc:
            if exc.errno == errno.ENOSPC:  # out of watches: fall back to scanning
                log.info("inotify watches exhausted; scanning on every refresh")
            else:
                log.warning("inotify watch failed (%s); scanning on every refresh", exc)
            self.close()
            return
        self._wd[wd] = rel

    # ------------------------------------------------------------------ refresh
    def refresh(self) -> set[str]:
        """Bring the index up to date. Returns the relative paths whose entry changed.

        A removed folder reports every entry it held; a new folder every entry
        found in it.
        """
        if self._inotify is None:
            return self._rescan_all()
        try:
            events = self._inotify.read(timeout=0)
        except OSError:
            log.debug("reading inotify events failed", exc_info=True)
            self.close()
            return self._rescan_all()
        if not events:
            return set()
        dirty: set[str] = set()
        for event in events:
            if event.mask & self._in.Q_OVERFLOW:
                return self._rescan_all()
            if event.mask & self._in.IGNORED:
                self._wd.pop(event.wd, None)
                continue
            base = self._wd.get(event.wd)
            if base is None:
                continue
            if event.name:
                dirty.add(event.name if base == "." else f"{base}/{event.name}")
            elif base != ".":
                dirty.add(base)
        changed: set[str] = set()
        rescanned = None  # the last folder looked at again whole: its paths need nothing more
        for rel in sorted(dirty, key=lambda path: path.split("/")):  # a folder, then below it
            if rescanned is not None and rel.startswith(rescanned):
                continue
            changed |= self._update(rel)
            rescanned = rel + "/" if rel in self.dirs else None
        return changed

    def _rescan_all(self) -> set[str]:
        old = self.entries
        self._scan_all()
        new = self.entries
        return {p for p in old.keys() | new.keys() if old.get(p) != new.get(p)}

    def _drop(self, rel: str) -> None:
        """Forget entry ``rel`` and, when it is a folder, everything below it."""
        self.entries.pop(rel, None)
        if rel in self.dirs:
            prefix = rel + "/"
            self.dirs = {d for d in self.dirs if d != rel and not d.startswith(prefix)}
            for path in [p for p in self.entries if p.startswith(prefix)]:
                del self.entries[path]

    def _update(self, rel: str) -> set[str]:
        """Look at ``rel`` again (and below it when it is a folder)."""
        before = {p: s for p, s in self.entries.items() if p == rel or p.startswith(rel + "/")} \
            if rel in self.dirs else ({rel: self.entries[rel]} if rel in self.entries else {})
        self._drop(rel)
        st = None
        try:
            with self.tree.resolve(rel, follow=False) as leaf:
                if leaf.rel == rel:  # a folder on the way that became a link: not ours
                    st = leaf.lstat()
                    if st is not None and stat.S_ISDIR(st.st_mode) and self.visible(rel, True):
                        sub = open_subdir(leaf.parent, leaf.name)
                        if sub is not None:
                            self.dirs.add(rel)
                            self._scan(sub, rel + "/")
                        st = None
        except OSError:
            st = None
        if st is not None and not stat.S_ISDIR(st.st_mode) and self.visible(rel, False):
            self.entries[rel] = stamp(st)
        after = {p: s for p, s in self.entries.items() if p == rel or p.startswith(rel + "/")} \
            if rel in self.dirs else ({rel: self.entries[rel]} if rel in self.entries else {})
        return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
