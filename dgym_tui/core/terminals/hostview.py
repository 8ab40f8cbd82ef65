"""A read-only view of the host for a bwrap started by root (its own mount namespace).

bwrap creates the mount points it needs (a file, or folders above it) before it
binds something there, following links on the way. A mount point in the
working copy is resolved while other sandboxes of the same episode run: one of
them can swap a folder for a link to ``/oldroot/...`` (bwrap's view of the
host) at the right moment, and bwrap, when it runs as root, would create
empty folders and files anywhere on the host (``/etc/nologin``...).

So, when dgym runs as root, bwrap is started in a mount namespace of its own
(:func:`read_only_host`, called in the child between fork and exec) where every
host mount is read-only, except fresh bind mounts of the working copy and the
scratch folder (the sandbox may write there anyway). A raced mount point then
fails with ``EROFS`` (the command does not start) instead of writing to the host.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 0x400, 0x800, 0x200000
CLONE_NEWNS = 0x00020000

#: Per-mount options of /proc/self/mountinfo kept when a mount is made read-only.
_OPTION_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC,
                 "noatime": MS_NOATIME, "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}

# Loaded in the parent: the child (after fork) only calls them.
_libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
_mount = _libc.mount
_mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                   ctypes.c_void_p)
_unshare = _libc.unshare
_unshare.argtypes = (ctypes.c_int,)


def _unescape(field: str) -> str:
    """Decode mountinfo's octal escapes (``\\040`` for a space)."""
    if "\\" not in field:
        return field
    return field.encode().decode("unicode_escape").encode("latin-1").decode("utf-8", "replace")


def host_mounts() -> list[tuple[bytes, int]]:
    """Every mount point of this process's namespace with its per-mount flags (read in the parent).

    Returns:
        ``(mount point as bytes, MS_* flags to keep)`` pairs, in mountinfo order.
    """
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) < 6:
                continue
            flags = 0
            for option in fields[5].split(","):
                flags |= _OPTION_FLAGS.get(option, 0)
            out.append((os.fsencode(_unescape(fields[4])), flags))
    return out


def read_only_host(writable: list[bytes], mounts: list[tuple[bytes, int]]) -> None:
    """In the calling process (a child about to exec bwrap): a private mount namespace where
    every mount of ``mounts`` is read-only, and each folder of ``writable`` a writable bind
    of itself.

    Raises:
        OSError: the namespace cannot be made (the exec does not happen).
    """
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
