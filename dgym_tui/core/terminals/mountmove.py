"""Put a host mount into a running container: the Docker terminal's spare containers.

A container that is started ahead of time (a *spare*, see
:meth:`dgym_tui.core.terminals.docker.DockerTerminal.prepare_fork_spare`) has an
empty folder of the host bound at its ``workdir``. When a fork adopts it,
:func:`move_into` mounts the fork's working copy there: a detached clone of the
host's mount (``open_tree``), moved into the container's mount namespace
(``setns`` then ``move_mount``) by a short-lived child of this process, since a
process with several threads cannot join another mount namespace. About 2 ms,
where creating and starting a container costs ~200 ms.

What is checked, so that a mount lands nowhere else (root only; the container's
commands are hostile, though a spare has run none of them yet): the process
``pid`` is opened as a pidfd, its ``/proc`` entry then shows the container's
64-hex id in its cgroup (kernel data) and pid 1 in its own pid namespace (the
container's init), and the pidfd says it still runs after those reads, so the
entry read was that process's; the child joins the mount namespace through that
pidfd, opens ``workdir`` there without following a link in its last component,
and mounts on it only when it is the very folder the host bound (same device
and inode as ``placeholder``). Read-only paths of the working copy get a
read-only clone of their mount each, on top: opened below the working copy's
root with ``openat2`` (no link of any kind, never above it) on the host and
again in the container, where the file must be the host's (device and inode).
Anything else raises :class:`OSError`; the container may then hold part of the
mounts (the caller removes it).

``os.fork`` in a process with threads: the child takes no lock another thread
may hold (it makes system calls through ctypes functions looked up at import,
then ``os._exit``), and it can be killed if it hangs, which a thread that joined
the namespace (``unshare(CLONE_FS)`` then ``setns``) could not. Python 3.12 and
later warn about such a fork (``DeprecationWarning``).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import select
import signal

from dgym_tui.core.namespaces import CLONE_NEWNS, libc
from dgym_tui.core.namespaces import setns as _setns

_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_OPENAT2, _SYS_MOUNT_SETATTR = 428, 429, 437, 442
_OPEN_TREE_CLONE, _AT_RECURSIVE, _AT_EMPTY_PATH = 0x1, 0x8000, 0x1000
_MOVE_MOUNT_F_EMPTY_PATH, _MOVE_MOUNT_T_EMPTY_PATH = 0x4, 0x40
_MOUNT_ATTR_RDONLY = 0x1
#: openat2 resolve flags: no link of any kind, never above the starting folder
_RESOLVE_STRICT = 0x02 | 0x04 | 0x08  # NO_MAGICLINKS | NO_SYMLINKS | BENEATH

#: Exit status of the child when ``workdir`` is not the placeholder folder.
_NOT_PLACEHOLDER = 200
#: Exit status of the child on an unexpected Python error.
_FAILED = 201
#: Exit status of the child when a read-only path is not the host's file there.
_NOT_READONLY_TARGET = 202
#: Seconds the child may take (it makes three system calls).
CHILD_TIMEOUT = 5.0

_syscall = libc.syscall
_syscall.restype = ctypes.c_long


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _beneath(folder: int, rel: str) -> int:
    """An ``O_PATH`` descriptor of ``rel`` below the folder ``folder``, reached without
    following any link and without leaving it (``openat2``).

    Raises:
        OSError: there is no such path that way.
    """
    how = _OpenHow(os.O_PATH | os.O_CLOEXEC, 0, _RESOLVE_STRICT)
    fd = _syscall(_SYS_OPENAT2, folder, os.fsencode(rel), ctypes.byref(how),
                  ctypes.sizeof(how))
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{rel}: {os.strerror(err)}")
    return int(fd)


def _clone(fd: int, recursive: bool, readonly: bool = False) -> int:
    """A detached clone of the mount at the file or folder ``fd`` (``open_tree``).

    Raises:
        OSError: the system call failed.
    """
    tree = _syscall(_SYS_OPEN_TREE, fd, b"", _OPEN_TREE_CLONE | _AT_EMPTY_PATH | os.O_CLOEXEC
                    | (_AT_RECURSIVE if recursive else 0))
    if tree < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"open_tree: {os.strerror(err)}")
    if readonly:
        attr = _MountAttr(_MOUNT_ATTR_RDONLY, 0, 0, 0)
        if _syscall(_SYS_MOUNT_SETATTR, int(tree), b"", _AT_EMPTY_PATH, ctypes.byref(attr),
                    ctypes.sizeof(attr)) < 0:
            err = ctypes.get_errno()
            os.close(tree)
            raise OSError(err, f"mount_setattr: {os.strerror(err)}")
    return int(tree)


def _moved(tree: int, target: int) -> bool:
    """Attach the detached mount ``tree`` on the file or folder ``target``."""
    return _syscall(_SYS_MOVE_MOUNT, tree, b"", target, b"",
                    _MOVE_MOUNT_F_EMPTY_PATH | _MOVE_MOUNT_T_EMPTY_PATH) >= 0


def _same(fd: int, ids: tuple[int, int]) -> bool:
    seen = os.fstat(fd)
    return (seen.st_dev, seen.st_ino) == ids


def available() -> bool:
    """True when this process may move mounts into a container: root, with pidfds."""
    return os.geteuid() == 0 and hasattr(os, "pidfd_open") \
        and hasattr(signal, "pidfd_send_signal")


def _checked_pidfd(pid: int, container_id: str) -> int:
    """A pidfd of ``pid``, checked to be the init of container ``container_id``.

    Raises:
        OSError: it is not (or it ended).
    """
    if len(container_id) != 64 or pid <= 1:
        raise OSError(errno.ESRCH, f"no such container init: pid {pid}")
    pidfd = os.pidfd_open(pid)
    try:
        with open(f"/proc/{pid}/cgroup", encoding="ascii", errors="replace") as f:
            cgroups = f.read()
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            nspid = next((line.split()[1:] for line in f if line.startswith("NSpid:")), [])
        if container_id not in cgroups or len(nspid) < 2 or nspid[-1] != "1":
            raise OSError(errno.EPERM, f"pid {pid} is not the init of container "
                                       f"{container_id[:12]}")
        signal.pidfd_send_signal(pidfd, 0)  # the entries read were this process's
    except BaseException:
        os.close(pidfd)
        raise
    return pidfd


def _in_child(pidfd: int, tree: int, workdir: str, placeholder: tuple[int, int],
              root: tuple[int, int], readonly: list[tuple[str, int, tuple[int, int]]]) -> None:
    """The child's whole life: join, check the target, move the mounts, exit (never returns)."""
    code = _FAILED
    try:
        if _setns(pidfd, CLONE_NEWNS) != 0:
            code = ctypes.get_errno() or _FAILED
        else:  # our root and folder are now the container's
            target = os.open(workdir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
            if not _same(target, placeholder):
                code = _NOT_PLACEHOLDER
            elif not _moved(tree, target):
                code = ctypes.get_errno() or _FAILED
            else:
                code = _read_only_binds(workdir, root, readonly)
    except OSError as exc:
        code = exc.errno or _FAILED
    except BaseException:  # noqa: BLE001  the child reports, it never unwinds into the parent's code
        code = _FAILED
    os._exit(code)


def _read_only_binds(workdir: str, root: tuple[int, int],
                     readonly: list[tuple[str, int, tuple[int, int]]]) -> int:
    """In the child, once the working copy is at ``workdir``: attach each read-only clone on
    its path, found below the working copy's root without following a link and checked
    to be the host's same file. Returns the child's exit status."""
    top = os.open(workdir, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    if not _same(top, root):
        return _NOT_PLACEHOLDER
    for rel, clone, ids in readonly:
        target = _beneath(top, rel)
        if not _same(target, ids):
            return _NOT_READONLY_TARGET
        if not _moved(clone, target):
            return ctypes.get_errno() or _FAILED
    return 0


def move_into(source_fd: int, container_id: str, pid: int, workdir: str,
              placeholder: str, readonly: list[str] | tuple[str, ...] = ()) -> None:
    """Mount a clone of the host's mount of folder ``source_fd`` on ``workdir`` in a container,
    and read-only clones of its paths ``readonly`` on top of it.

    Args:
        source_fd: a descriptor of a folder of the host (the root of the working
            copy's overlay): the clone is of its mount from there down, with what
            is mounted below it; no path is looked up.
        container_id: the container's full id (64 hex digits).
        pid: the container's init process, as the daemon reports it (``State.Pid``).
        workdir: absolute path inside the container, where ``placeholder`` is bound.
        placeholder: host path of the empty folder the container binds at ``workdir``.
        readonly: relative paths below ``source_fd`` (files or folders, parents
            before what they hold) each bound read-only at the same place in the
            container: reached without following a link, on the host and in the
            container, and checked to be the same file there.

    Raises:
        OSError: not root, ``pid`` is not that container's init, ``workdir`` is
            not the placeholder, a read-only path is missing or not the same
            file, or a system call failed. The container may then hold part of
            the mounts: remove it.
    """
    if not available():
        raise OSError(errno.EPERM, "moving a mount into a container needs root and pidfds")
    want = os.stat(placeholder, follow_symlinks=False)
    mine = os.fstat(source_fd)
    fds: list[int] = []
    try:
        tree = _clone(source_fd, recursive=True)
        fds.append(tree)
        binds = []
        for rel in readonly:
            host = _beneath(source_fd, rel)
            fds.append(host)
            seen = os.fstat(host)
            clone = _clone(host, recursive=False, readonly=True)
            fds.append(clone)
            binds.append((rel, clone, (seen.st_dev, seen.st_ino)))
        pidfd = _checked_pidfd(pid, container_id)
        fds.append(pidfd)
        _run_child(pidfd, tree, workdir, (want.st_dev, want.st_ino),
                   (mine.st_dev, mine.st_ino), binds)
    finally:
        for fd in fds:  # a clone that was not moved is freed with its last descriptor
            os.close(fd)


def _run_child(pidfd: int, tree: int, workdir: str, placeholder: tuple[int, int],
               root: tuple[int, int], readonly: list[tuple[str, int, tuple[int, int]]]) -> None:
    """Fork the child of :func:`_in_child` (signals blocked: no Python handler runs in it)
    and wait for it, at most :data:`CHILD_TIMEOUT` seconds (then it is killed)."""
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    try:
        child = os.fork()
        if child == 0:
            _in_child(pidfd, tree, workdir, placeholder, root, readonly)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    try:  # a pidfd of the child is readable once it has ended
        waited = os.pidfd_open(child)
        try:
            ended = bool(select.select([waited], [], [], CHILD_TIMEOUT)[0])
        finally:
            os.close(waited)
    except OSError:
        ended = False
    if not ended:
        with contextlib.suppress(OSError):
            os.kill(child, signal.SIGKILL)
    status = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1])
    if not ended:
        raise OSError(errno.ETIMEDOUT, "moving the mount into the container timed out")
    if status == _NOT_PLACEHOLDER:
        raise OSError(errno.EPERM, f"{workdir} in the container is not its placeholder folder")
    if status == _NOT_READONLY_TARGET:
        raise OSError(errno.EPERM, "a read-only path in the container is not the working "
                                   "copy's file")
    if status != 0:
        code = status if 0 < status < _NOT_PLACEHOLDER else errno.EIO
        raise OSError(code, f"moving the mount into the container failed: {os.strerror(code)}")


__all__ = ["CHILD_TIMEOUT", "available", "move_into"]
