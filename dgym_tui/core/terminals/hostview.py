"""A read-only view of the host for a bwrap started by root (its own mount namespace).

bwrap creates the mount points it needs (a file, or folders above it) before it
binds something there, following links on the way. A mount point in the
working copy is resolved while other sandboxes of the same episode run: one of
them can swap a folder for a link to ``/oldroot/...`` (bwrap's view of the
host) at the right moment, and bwrap, when it runs as root, would create
empty folders and files anywhere on the host (``/etc/nologin``...).

So bwrap is started in a mount namespace of its own (:func:`read_only_host`,
called in the child between fork and exec) where every host mount is
read-only, except fresh bind mounts of the working copy and the scratch folder
(the sandbox may write there anyway). A raced mount point then fails with
``EROFS`` (the command does not start) instead of writing to the host. When
dgym runs as a user, that namespace is made inside a user namespace mapping
only that user (an unprivileged process may make mounts read-only there, never
writable), and bwrap nests its own user namespace in it.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable

from dgym_tui.core.namespaces import (
    CLONE_NEWNS,
    CLONE_NEWUSER,
    MS_BIND,
    MS_NOATIME,
    MS_NODEV,
    MS_NODIRATIME,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_RELATIME,
    MS_REMOUNT,
)
from dgym_tui.core.namespaces import libc as _libc
from dgym_tui.core.namespaces import mount as _mount
from dgym_tui.core.namespaces import unshare as _unshare

#: Per-mount options of /proc/self/mountinfo kept when a mount is made read-only.
_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                 "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}


def _unescape(field: str) -> str:
    """Decode mountinfo's octal escapes (``\\040`` for a space)."""
    if "\\" not in field:
        return field
    return field.encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def host_mounts() -> list[tuple[bytes, int]]:
    """Every mount point of this process's namespace with its per-mount flags (read in the parent).

    ``/proc`` and the mounts below it are left out (they stay as they are).

    Returns:
        ``(mount point as bytes, MS_* flags to keep)`` pairs, in mountinfo order.
    """
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6:
                continue
            point = _unescape(fields[4])
            if point == "/proc" or point.startswith("/proc/"):
                continue  # bwrap writes its user namespace's maps there; nothing is created
            flags = 0
            for option in fields[5].split(","):
                flags |= _OPTION_FLAGS.get(option, 0)
            out.append((os.fsencode(point), flags))
    return out


def read_only_host(writable: list[bytes], mounts: list[tuple[bytes, int]],
                   as_user: tuple[int, int] | None = None,
                   join: Callable[[], None] | None = None) -> None:
    """In the calling process (a child about to exec bwrap): a private mount namespace where
    every mount of ``mounts`` is read-only, and each folder of ``writable`` a writable bind
    of itself.

    Args:
        as_user: ``(uid, gid)`` of this process when it is not root: the namespace is then
            made inside a user namespace of its own that maps only that uid and gid, and
            every capability is dropped again before returning (bwrap refuses to start with
            capabilities it was not given by setuid).
        join: joins the namespaces of the working copy's overlay first (its user
            namespace, as a user, then its mount namespace); the read-only view is then
            made from that mount namespace, inside that user namespace.

    Raises:
        OSError: the namespace cannot be made (the exec does not happen).
    """
    if join is not None:
        join()
    elif as_user is not None:
        _enter_user_namespace(*as_user)
    if _unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS) failed")
    if _mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise OSError(ctypes.get_errno(), "cannot make the mounts private")
    for path in writable:
        if _mount(path, path, None, MS_BIND, None) != 0 or \
                _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV, None) != 0:
            raise OSError(ctypes.get_errno(), f"cannot bind {path!r}")
    for path, flags in mounts:
        # mounts that refuse (e.g. some under /proc) are left as they are: bwrap creates
        # nothing there
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | flags, None)
    if as_user is not None:
        _drop_capabilities()


def join_only(join: Callable[[], None], drop: bool) -> None:
    """In the calling process (a child about to exec bwrap): ``join()`` the overlay's
    namespaces, then drop the capabilities that gave (``drop``: joined as a user)."""
    join()
    if drop:
        _drop_capabilities()


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _enter_user_namespace(uid: int, gid: int) -> None:
    """unshare(CLONE_NEWUSER) mapping only ``uid`` / ``gid`` to themselves."""
    if _unshare(CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER) failed")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


_capset = _libc.capset
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _drop_capabilities() -> None:
    """Empty effective, permitted and inheritable capability sets of this process."""
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if _capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset failed")
