"""Linux mount and namespace calls through ctypes (the standard library has none in 3.11).

Shared by the bwrap terminal's read-only view of the host
(:mod:`dgym_tui.core.terminals.hostview`) and the overlay working copy
(:mod:`dgym_tui.core.fs.overlay`). The functions are looked up when this module
is imported, so a child between fork and exec only calls them.
"""

from __future__ import annotations

import ctypes

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 0x400, 0x800, 0x200000
CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000


def _libc() -> ctypes.CDLL:
    """The C library: glibc's by its name, else the one ``ctypes.util.find_library``
    finds (it runs ``ldconfig -p``, a process in every app's first frame: the working
    copy's module imports this one)."""
    try:
        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:  # not glibc
        from ctypes.util import find_library

        return ctypes.CDLL(find_library("c") or None, use_errno=True)


libc = _libc()
#: ``mount(source, target, fstype, flags, data)`` (bytes or None; returns -1 on failure).
mount = libc.mount
mount.argtypes = (ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                  ctypes.c_void_p)
#: ``umount2(target, flags)``.
umount2 = libc.umount2
umount2.argtypes = (ctypes.c_char_p, ctypes.c_int)
MNT_DETACH = 0x2
#: ``umount2`` flag: do not follow a link in the last component of the target.
UMOUNT_NOFOLLOW = 0x8
#: ``unshare(flags)``.
unshare = libc.unshare
unshare.argtypes = (ctypes.c_int,)
#: ``setns(fd, nstype)``.
setns = libc.setns
setns.argtypes = (ctypes.c_int, ctypes.c_int)
