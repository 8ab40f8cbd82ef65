"""A working copy that costs O(1): overlayfs over the original, in a mount namespace of its own.

The original repository is the overlay's lower layer, shown through a
read-only bind mount; a fresh per-episode folder is the upper layer, so every
write of the episode lands there and the original is never written. The
overlay is mounted once per working copy, in a mount namespace made for it
(inside a user namespace mapping only this user when dgym runs as a user:
unprivileged overlayfs works on Linux >= 5.11), and the process that made it
exits at once: what keeps the namespace alive are two descriptors of ours,

- the mount namespace (``/proc/PID/ns/mnt``, and ``ns/user`` as a user), which
  every sandboxed command joins before bubblewrap starts (:meth:`Overlay.enter`),
  so one overlay serves every command of the episode, and
- the merged folder, opened through ``/proc/PID/root``: the host reads and
  writes the working copy from that descriptor with ``safefs``, exactly as
  the sandbox sees it, never by a path the sandbox controls.

Closing both (:meth:`Overlay.close`, or the process ending, even killed) frees
the namespace and unmounts the overlay: nothing outlives the episode but the
upper folder on disk, which the caller deletes (stale ones are swept like the
copies they replace).

A container engine (dockerd) cannot bind a mount of another namespace: for the
docker terminal the overlay is *bindable*, mounted by root in this process's
own mount namespace at ``merged`` until the container has bound it
(:meth:`Overlay.detach` then unmounts that path); its lower layer is a
detached clone, mounted nowhere. A process killed in between leaves the
mount, which the sweep of stale working copies unmounts.

When dgym runs as root, the sandbox's commands run as an unprivileged uid of
their own that must be able to change every file; the lower layer is then an
*idmapped* mount of the original (``mount_setattr(MOUNT_ATTR_IDMAP)``) showing
its owner's files as that uid's, instead of handing a copy over with
``chown``. An overlay cannot change an entry whose owner its map leaves out
(:func:`copyable_ids`): an original holding one gets a copy instead
(:class:`UnmappedOwners`, raised by the working copy before it mounts one).

Mount options: ``redirect_dir=nofollow`` (renaming a folder of the original fails
with ``EXDEV`` and tools fall back to copy + delete, through the merged view,
so a renamed folder never carries an ignored original file to a name that is
not masked), ``metacopy=off``, ``index=off``, ``xino=off``; ``userxattr`` in a
user namespace.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import stat
import subprocess
import time

from dgym_tui.core.fdtree import DIR_FLAGS, remove_tree
from dgym_tui.core.namespaces import (
    CLONE_NEWNS,
    CLONE_NEWUSER,
    MNT_DETACH,
    MS_BIND,
    MS_NODEV,
    MS_NOSUID,
    MS_PRIVATE,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    UMOUNT_NOFOLLOW,
    libc,
)
from dgym_tui.core.namespaces import mount as _mount
from dgym_tui.core.namespaces import setns as _setns
from dgym_tui.core.namespaces import umount2 as _umount2
from dgym_tui.core.namespaces import unshare as _unshare

_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442  # same on x86-64 and arm64
OPEN_TREE_CLONE, AT_RECURSIVE, AT_EMPTY_PATH = 0x1, 0x8000, 0x1000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_IDMAP = 0x1, 0x00100000
AT_FDCWD = -100

_syscall = libc.syscall
_syscall.restype = ctypes.c_long


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


#: Folders of a working copy's base folder: the upper and work layers, the lower
#: layer's mount point and the merged view's mount point (empty on the host).
UPPER, WORK, LOWER, MERGED = "upper", "work", "lower", "merged"


def _check(result: int, what: str) -> int:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _options(base: bytes, in_userns: bool, lower: bytes | None = None) -> bytes:
    lower = lower if lower is not None else base + b"/" + LOWER.encode()
    opts = (b"lowerdir=" + lower + b",upperdir=" + base + b"/"
            + UPPER.encode() + b",workdir=" + base + b"/" + WORK.encode()
            + b",redirect_dir=nofollow,metacopy=off,index=off,xino=off")
    return opts + (b",userxattr" if in_userns else b"")


def _lower_tree(source: bytes, idmap_fd: int) -> int:
    """A detached, read-only clone of the mount of folder ``source`` (descriptor), shown
    through the user namespace ``idmap_fd`` when >= 0 (an idmapped mount)."""
    tree = _check(_syscall(_SYS_OPEN_TREE, AT_FDCWD, source, OPEN_TREE_CLONE | os.O_CLOEXEC),
                  "open_tree")
    try:
        flags = MOUNT_ATTR_RDONLY | (MOUNT_ATTR_IDMAP if idmap_fd >= 0 else 0)
        attr = _MountAttr(flags, 0, 0, max(idmap_fd, 0))
        _check(_syscall(_SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, ctypes.byref(attr),
                        ctypes.sizeof(attr)), "mount_setattr")
    except BaseException:
        os.close(tree)
        raise
    return tree


def _mount_here(source: bytes, base: bytes, idmap_fd: int) -> None:
    """Mount the overlay at ``base/merged`` in this process's own mount namespace (root).

    The lower layer is a detached read-only (idmapped) clone of the original's
    mount, named to overlayfs through ``/proc/self/fd``; a kernel that takes no
    detached layer gets it attached at ``base/lower`` for the time of the mount.
    overlayfs keeps a private clone of each layer: no lower mount is left
    anywhere once this returns.
    """
    tree = _lower_tree(source, idmap_fd)
    merged = base + b"/" + MERGED.encode()
    try:
        opts = _options(base, False, f"/proc/self/fd/{tree}".encode())
        if _mount(b"overlay", merged, b"overlay", MS_NOSUID | MS_NODEV, opts) == 0:
            return
        lower = base + b"/" + LOWER.encode()
        _check(_syscall(_SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, lower, MOVE_MOUNT_F_EMPTY_PATH),
               "move_mount")
        try:
            _check(_mount(b"overlay", merged, b"overlay", MS_NOSUID | MS_NODEV,
                          _options(base, False)), "mount overlay")
        finally:
            _umount2(lower, MNT_DETACH)
    finally:
        os.close(tree)


def _mount_in_child(source: bytes, base: bytes, uid: int, gid: int, idmap_fd: int) -> None:
    """In the holder (after fork, before exec): new namespaces, the lower and the overlay.

    ``uid`` / ``gid`` >= 0: this process is a user: a user namespace mapping only them.
    ``idmap_fd`` >= 0: the lower layer is an idmapped mount through that user namespace.
    """
    in_userns = uid >= 0
    if in_userns:
        _check(_unshare(CLONE_NEWUSER | CLONE_NEWNS), "unshare")
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    else:
        _check(_unshare(CLONE_NEWNS), "unshare")
    _check(_mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make mounts private")
    lower = base + b"/" + LOWER.encode()
    if idmap_fd >= 0:
        tree = _check(_syscall(_SYS_OPEN_TREE, AT_FDCWD, source,
                               OPEN_TREE_CLONE | os.O_CLOEXEC), "open_tree")
        attr = _MountAttr(MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY, 0, 0, idmap_fd)
        _check(_syscall(_SYS_MOUNT_SETATTR, tree, b"", AT_EMPTY_PATH, ctypes.byref(attr),
                        ctypes.sizeof(attr)), "mount_setattr (idmap)")
        _check(_syscall(_SYS_MOVE_MOUNT, tree, b"", AT_FDCWD, lower, MOVE_MOUNT_F_EMPTY_PATH),
               "move_mount")
    else:
        _check(_mount(source, lower, None, MS_BIND, None), "bind the original")
        _check(_mount(None, lower, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
                      None), "make the original read-only")
    merged = base + b"/" + MERGED.encode()
    _check(_mount(b"overlay", merged, b"overlay", MS_NOSUID | MS_NODEV,
                  _options(base, in_userns)), "mount overlay")


def _idmap_userns(owner: tuple[int, int], to: tuple[int, int]) -> int:
    """A user namespace (descriptor) mapping ``owner`` uid / gid to ``to`` (root only).

    Its process is util-linux's ``unshare --user`` started without a Python ``preexec``
    (so without copying this process's memory): we wait until it is in its namespace,
    write the maps from outside, keep a descriptor and end it.
    """
    own = os.stat("/proc/self/ns/user").st_ino
    child = subprocess.Popen(["unshare", "--user", "--", "sleep", "60"],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        path = f"/proc/{child.pid}/ns/user"
        deadline = time.monotonic() + 10
        while os.stat(path).st_ino == own:
            if child.poll() is not None or time.monotonic() > deadline:
                raise OSError(f"unshare --user did not start (exit code {child.returncode})")
            time.sleep(0.0005)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            _write(f"/proc/{child.pid}/uid_map", f"{owner[0]} {to[0]} 1")
            _write(f"/proc/{child.pid}/gid_map", f"{owner[1]} {to[1]} 1")
        except BaseException:
            os.close(fd)
            raise
        return fd
    finally:
        child.kill()
        child.wait()


def copyable_ids(source: str, run_as: tuple[int, int] | None) -> tuple[int, int] | None:
    """The one ``(uid, gid)`` whose entries of ``source`` an :class:`Overlay` made with
    these arguments can copy up (that is, change), or None when it can copy up any.

    A user's overlay lives in a user namespace that maps only the user's own ids;
    root's, for sandbox ids (``run_as``), reads the original through an idmapped
    mount that maps only the original folder's owner. The kernel cannot copy up
    an entry owned by an id outside that map (``EOVERFLOW``), neither for the host
    nor for the sandbox. Root's overlay without ``run_as`` maps every id.

    Raises:
        OSError: ``source`` cannot be read (root with ``run_as`` only).
    """
    if os.geteuid() != 0:
        return os.getuid(), os.getgid()
    if run_as is None:
        return None
    st = os.stat(source)
    return st.st_uid, st.st_gid


class UnmappedOwners(OSError):
    """The original holds entries an overlay could not change (see :func:`copyable_ids`);
    the message (one line) names one of them and the ids that would work."""


class Overlay:
    """The overlay of one working copy: lower = ``source`` (read-only), upper = ``base/upper``.

    Args:
        source: the original repository (host path of a folder; trusted).
        base: an empty folder of ours (the working copy's); ``upper``, ``work``,
            ``lower`` and ``merged`` are made in it (``upper`` may be given
            already filled, e.g. for a fork).
        run_as: ``(uid, gid)`` of the sandbox's commands when dgym runs as root:
            the original's owner is shown as them (idmapped lower layer), and
            the upper layer belongs to them. None when dgym runs as a user.
        bindable: mount the overlay in this process's own mount namespace, at
            ``merged``, for a container engine to bind (the docker terminal;
            root only), instead of in a namespace of its own; :meth:`detach`
            then unmounts that path once it is bound. Nothing is mounted
            anywhere else: the lower layer is a detached clone.

    Attributes:
        merged: host path of the merged view inside the namespace (empty on the host;
            a bindable overlay's is mounted there until :meth:`detach`).
        upper: host path of the upper layer.
        root_fd: a descriptor of the merged view (``O_DIRECTORY``).

    Raises:
        OSError: the overlay cannot be mounted (message from the failing step).
    """

    def __init__(self, source: str, base: str, run_as: tuple[int, int] | None = None,
                 bindable: bool = False) -> None:
        self.source = source
        self.base = base
        self.upper = os.path.join(base, UPPER)
        self.merged = os.path.join(base, MERGED)
        self.run_as = run_as
        self.bindable = bindable
        self._attached = False  # bindable: mounted at `merged` in this mount namespace
        self._ns: list[int] = []  # user namespace (as a user), then mount namespace
        self.root_fd = -1
        if bindable and os.geteuid() != 0:
            raise OSError("an overlay a container engine can bind is mounted by root only")
        for name in (UPPER, WORK, LOWER, MERGED):
            with contextlib.suppress(FileExistsError):
                os.mkdir(os.path.join(base, name), 0o700)
        idmap = -1
        try:
            if os.geteuid() == 0:
                if run_as is not None:
                    st = os.stat(source)
                    idmap = _idmap_userns((st.st_uid, st.st_gid), run_as)
                    os.chown(self.upper, *run_as)
                    os.chmod(self.upper, 0o755)
                ids = (-1, -1)
                if bindable:
                    _mount_here(os.fsencode(source), os.fsencode(base), idmap)
                    self._attached = True
                    self.root_fd = os.open(self.merged, os.O_RDONLY | os.O_DIRECTORY
                                           | os.O_NOFOLLOW | os.O_CLOEXEC)
                    return
            else:
                ids = (os.getuid(), os.getgid())
            setup = functools.partial(_mount_in_child, os.fsencode(source), os.fsencode(base),
                                      ids[0], ids[1], idmap)
            holder = subprocess.Popen(["sleep", "60"], preexec_fn=setup,
                                      pass_fds=() if idmap < 0 else (idmap,),
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            try:
                names = ["user", "mnt"] if ids[0] >= 0 else ["mnt"]
                self._ns = [os.open(f"/proc/{holder.pid}/ns/{n}", os.O_RDONLY | os.O_CLOEXEC)
                            for n in names]
                self.root_fd = os.open(f"/proc/{holder.pid}/root{self.merged}",
                                       os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                                       | os.O_CLOEXEC)
            finally:
                holder.kill()
                holder.wait()
        except subprocess.SubprocessError as exc:
            self.close()
            raise OSError(f"the overlay working copy cannot be mounted here ({exc})") from None
        except BaseException:
            self.close()
            raise
        finally:
            if idmap >= 0:
                os.close(idmap)

    def enter(self) -> None:
        """Join the overlay's namespaces (in a child between fork and exec, before bwrap).

        As a user, the child then holds every capability of that user namespace;
        the caller drops them (or makes its own mounts first).

        Raises:
            OSError: a namespace cannot be joined.
        """
        for fd in self._ns:
            _check(_setns(fd, 0), "setns")

    @property
    def in_userns(self) -> bool:
        """True when the overlay lives in a user namespace of its own (dgym runs as a user)."""
        return len(self._ns) == 2

    @property
    def fds(self) -> tuple[int, ...]:
        """Descriptors a child needs to keep open to :meth:`enter`."""
        return tuple(self._ns)

    @property
    def attached(self) -> bool:
        """True while a bindable overlay is mounted at :attr:`merged` in this mount namespace."""
        return self._attached

    def detach(self) -> None:
        """A bindable overlay: unmount its path ``merged`` (lazily), once a container engine
        has bound it; what holds the overlay then are the container's mount and
        :attr:`root_fd`. Idempotent; no-op for an overlay in a namespace of its own."""
        if self._attached:
            self._attached = False
            _umount2(os.fsencode(self.merged), MNT_DETACH)

    def close(self) -> None:
        """Close the descriptors (the overlay is unmounted once no process uses it). Idempotent."""
        self.detach()
        for fd in [*self._ns, self.root_fd]:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._ns, self.root_fd = [], -1


def unmount_stale(base: str) -> None:
    """Unmount what a killed owner left mounted in the base folder ``base`` of an overlay
    (a bindable overlay and its lower layer; root only), so that deleting ``base``
    deletes only it. Only a real folder is unmounted, never through a link
    (``UMOUNT_NOFOLLOW``: a link swapped in after the check is not followed either): the
    folder may be one a sandbox wrote into. Never raises."""
    if os.geteuid() != 0:
        return
    for name in (MERGED, LOWER):
        path = os.path.join(base, name)
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(os.lstat(path).st_mode) and os.path.ismount(path):
                _umount2(os.fsencode(path), MNT_DETACH | UMOUNT_NOFOLLOW)


def open_work(base: str) -> None:
    """Make ``base/work/work`` (overlayfs leaves it mode 000) deletable; only a real folder.

    The base folder of an overlay is never shown to a sandbox. Never raises.
    """
    with contextlib.suppress(OSError):
        fd = os.open(os.path.join(base, WORK), DIR_FLAGS)
        try:
            st = os.stat(WORK, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                os.chmod(f"/proc/self/fd/{fd}/{WORK}", stat.S_IRWXU)
        finally:
            os.close(fd)


def remove_base(base: str) -> None:
    """Delete the base folder ``base`` of a closed (or abandoned) overlay with all it holds:
    :func:`unmount_stale`, :func:`open_work`, then ``fdtree.remove_tree``. Never raises."""
    unmount_stale(base)
    open_work(base)
    remove_tree(base)


#: The probe's answers in this process: ``bindable`` -> why it cannot mount, or None.
_probed: dict[bool, str | None] = {}


def overlay_problem(bindable: bool = False) -> str | None:
    """Why an overlay working copy (``bindable``: one for a container engine) cannot be
    made here (one line), or None: a probe mounts one on an empty folder, once per process
    and kind (the answer is kept; :func:`probed_problem` reads it). The probe's folder is
    deleted whole."""
    if bindable in _probed:
        return _probed[bindable]
    from dgym_tui.core import tempdirs

    base = tempdirs.make("overlay-probe")
    problem: str | None = None
    try:
        src = os.path.join(base, "src")
        os.mkdir(src)
        ov = Overlay(src, base, (65534, 65534) if os.geteuid() == 0 else None,
                     bindable=bindable)
        ov.close()
    except OSError as exc:
        problem = str(exc)
    finally:
        remove_base(base)
    _probed[bindable] = problem
    return problem


def probed_problem(bindable: bool = False) -> str | None:
    """What :func:`overlay_problem` found in this process for that kind, without probing:
    why an overlay cannot be mounted here, or None (no problem found, or no probe ran)."""
    return _probed.get(bindable)
