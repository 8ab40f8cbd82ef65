"""Folders below a descriptor, never through a path a sandbox could swap: the open flags,
a folder's entries, and deleting a tree of any depth.

The bottom of the host-side file access (:mod:`dgym_tui.core.fs.safefs` builds on it), and
what the terminals delete their own folders with (scratch, plugin and support folders, which
a sandbox can write into: links, folders made unreadable, chains deeper than Python
recurses). Linux: ``O_PATH`` and ``/proc/self/fd`` where the kernel has them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator

O_PATH = getattr(os, "O_PATH", 0)
CLOEXEC = getattr(os, "O_CLOEXEC", 0)
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC
LEAF_FLAGS = (O_PATH or (os.O_RDONLY | os.O_NONBLOCK)) | os.O_NOFOLLOW | CLOEXEC
PROC_FD = "/proc/self/fd"
REOPEN = os.path.isdir(PROC_FD) and bool(O_PATH)

#: Most symbolic links one resolution follows (as the kernel's limit).
MAX_LINKS = 40
#: Deepest folder nesting :func:`remove_at` (and safefs's ``walk``) go (one open fd per level).
MAX_DEPTH = 256


def scan_fd(fd: int) -> Iterator[tuple[str, os.stat_result]]:
    """Yield ``(name, lstat)`` of the entries of the folder open as ``fd``."""
    with os.scandir(fd) as entries:
        for entry in entries:
            try:
                yield entry.name, entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue


def open_subdir(fd: int, name: str) -> int | None:
    """Open folder ``name`` inside folder fd ``fd`` without following links; None if not one."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except OSError:
        return None


def remove_at(dir_fd: int, name: str, max_depth: int = MAX_DEPTH) -> None:
    """Delete entry ``name`` of the folder open as ``dir_fd``, whatever it is.

    A file, link or special file is unlinked (a link is never followed); a
    folder is emptied level by level through descriptors (folders made
    unreadable are opened up through their own fd first) and removed.
    Folders nested deeper than ``max_depth`` (the descriptors held at once)
    are moved up into ``name`` first (``renameat`` between descriptors), so
    any depth is removed with at most ``max_depth`` descriptors open.
    Missing: nothing happens.

    Raises:
        OSError: it cannot be removed.
    """
    fds: list[tuple[int, str, int]] = []
    try:
        first = _open_to_remove(dir_fd, name)
        if first is None:
            return
        fds.append((dir_fd, name, first))
        while fds:
            parent, current, fd = fds[-1]
            sub = None
            for child, st in list(scan_fd(fd)):
                if stat.S_ISDIR(st.st_mode):
                    sub = child
                    break
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(child, dir_fd=fd)
            if sub is None:
                fds.pop()
                os.close(fd)
                with contextlib.suppress(FileNotFoundError):
                    os.rmdir(current, dir_fd=parent)
                continue
            if len(fds) >= max_depth:  # a chain deeper than this: cut it, go on from the top
                import secrets  # here: hmac's import is no part of an app's start

                os.rename(sub, f".dgym-deep-{secrets.token_hex(8)}", src_dir_fd=fd,
                          dst_dir_fd=fds[0][2])
                continue
            opened = _open_to_remove(fd, sub)
            if opened is not None:
                fds.append((fd, sub, opened))
    finally:
        for _, _, fd in fds:
            os.close(fd)


def remove_tree(path: str) -> None:
    """Delete the folder ``path`` (one of dgym's own) and what is in it, as far as possible.

    Never changes anything outside ``path`` and never follows a link: ``shutil.rmtree``
    (descriptor-based) first; where it stops (a folder a sandbox made unwritable or
    unreadable, overlayfs's ``work/work``), :func:`remove_at` goes on below the parent's
    descriptor, opening such folders up through their own descriptors and cutting chains
    of folders of any depth; what is still left (a mount point) is left. Never raises.
    """
    try:
        shutil.rmtree(path)
        return
    except FileNotFoundError:
        return
    except (OSError, RecursionError):  # rmtree recurses once per level: a deep tree ends it
        pass
    parent, name = os.path.split(os.path.abspath(path))
    try:
        fd = os.open(parent, DIR_FLAGS)
    except OSError:
        return
    try:
        remove_at(fd, name)
    except OSError:
        with contextlib.suppress(RecursionError):
            shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)


def _open_to_remove(dir_fd: int, name: str) -> int | None:
    """Unlink ``name`` when it is no folder (None), else open it for emptying (its fd)."""
    for _ in range(MAX_LINKS):
        refused: OSError | None = None
        try:
            os.unlink(name, dir_fd=dir_fd)
            return None
        except FileNotFoundError:
            return None
        except (IsADirectoryError, PermissionError) as exc:
            refused = exc
        try:
            pfd = os.open(name, LEAF_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        try:
            if not stat.S_ISDIR(os.fstat(pfd).st_mode):
                if isinstance(refused, PermissionError):
                    raise refused
                continue  # swapped meanwhile: unlink again
            with contextlib.suppress(OSError):  # a folder made unreadable / unwritable
                if REOPEN:
                    os.chmod(f"{PROC_FD}/{pfd}", 0o700)
                else:
                    os.fchmod(pfd, 0o700)
            try:
                return os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            except OSError as exc:
                if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
        finally:
            os.close(pfd)
    raise OSError(errno.ELOOP, f"{name!r} keeps changing; cannot remove it")
