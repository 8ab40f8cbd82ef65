"""Host-side file access below a folder that hostile code changes concurrently.

The agent's code runs while our tools read and write the same working copy on
the host. A path check followed by ``open(path)`` can be raced: a folder
swapped for a symbolic link to a host folder (``renameat2 RENAME_EXCHANGE``)
between the check and the open sends the open outside. So every path is
resolved here component by component from a file descriptor of the tree's
root, never by name from ``/``:

- folders are opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to the fd of
  their parent, so a component swapped for a link fails instead of leading
  out;
- a symbolic link met on the way is read (``readlinkat``) and interpreted
  *inside* the tree: its target is joined to the link's folder and
  normalized; a target that leaves the tree raises :class:`EscapeError`;
- the last component is opened ``O_PATH | O_NOFOLLOW`` (no device driver's
  ``open`` runs), checked with ``fstat``, and only a regular file is reopened
  for reading through ``/proc/self/fd``; FIFOs, sockets and device nodes raise
  :class:`SpecialFileError` and are never opened for I/O;
- writes go to a fresh temporary file created ``O_CREAT | O_EXCL | O_NOFOLLOW``
  in the folder's fd, then ``rename`` with folder fds on both sides.

No well-kept Python library does this without a native library the machines
lack (``pathrs`` needs ``libpathrs.so``), so it stays this small. Linux only
for ``O_PATH``; elsewhere the leaf is opened ``O_NONBLOCK | O_NOFOLLOW`` and
checked with ``fstat`` after the open.
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from dgym_tui.core.fdtree import (
    CLOEXEC,
    DIR_FLAGS,
    LEAF_FLAGS,
    MAX_DEPTH,
    MAX_LINKS,
    O_PATH,
    PROC_FD,
    REOPEN,
    open_subdir,
    scan_fd,
)


class EscapeError(OSError):
    """A path (through a symbolic link or ``..``) leads outside the tree."""


class SpecialFileError(OSError):
    """The path names a FIFO, socket or device node: never opened for I/O.

    Attributes:
        kind: ``"FIFO"``, ``"socket"``, ``"device node"`` or ``"special file"``.
    """

    def __init__(self, rel: str, kind: str) -> None:
        super().__init__(errno.EPERM, f"{rel!r} is a {kind}, not a regular file")
        self.rel, self.kind = rel, kind


def file_kind(mode: int) -> str:
    """Name the file type of a ``st_mode``: "file", "folder", "link", "FIFO", ..."""
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "folder"
    if stat.S_ISLNK(mode):
        return "link"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISBLK(mode) or stat.S_ISCHR(mode):
        return "device node"
    return "special file"


def split(rel: str) -> list[str]:
    """Normalize a relative POSIX path to its components ([] for the root).

    Raises:
        EscapeError: the path is absolute or climbs above the root.
    """
    if rel.startswith("/"):
        raise EscapeError(errno.EXDEV, f"{rel!r} is absolute")
    norm = posixpath.normpath(rel or ".")
    if norm == ".." or norm.startswith("../"):
        raise EscapeError(errno.EXDEV, f"{rel!r} leads outside")
    return [] if norm == "." else norm.split("/")


@dataclass
class Leaf:
    """The last component of a resolved path: its folder's fd and its name.

    ``parent`` is owned by the Leaf: close it with :meth:`close` (or use the
    Leaf as a context manager). ``rel`` is the canonical relative path (links
    resolved); ``name`` is "" for the root itself.
    """

    parent: int
    name: str
    rel: str

    def close(self) -> None:
        os.close(self.parent)

    def __enter__(self) -> Leaf:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def lstat(self) -> os.stat_result | None:
        """``fstatat`` of the leaf without following it; None when it does not exist."""
        try:
            if not self.name:
                return os.fstat(self.parent)
            return os.stat(self.name, dir_fd=self.parent, follow_symlinks=False)
        except FileNotFoundError:
            return None


class SafeTree:
    """A folder opened once; paths below it are resolved from its descriptor.

    Args:
        path: host path of the folder, trusted when the tree is opened.

    Raises:
        OSError: the folder cannot be opened (missing, not a folder, a link).
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = os.path.realpath(path)
        self.fd = os.open(self.path, DIR_FLAGS)

    @classmethod
    def from_fd(cls, fd: int, path: str) -> SafeTree:
        """A tree whose root is the folder open as ``fd`` (owned by the tree from now on).

        For a folder no host path reaches safely (an overlay's merged view in a
        mount namespace of its own); ``path`` only names it.
        """
        tree = cls.__new__(cls)
        tree.path, tree.fd = path, fd
        return tree

    def close(self) -> None:
        """Close the root descriptor. Idempotent."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -------------------------------------------------------------- resolution
    def _link_target(self, done: list[str], dir_fd: int, name: str) -> list[str] | None:
        """Components of the link ``name`` (in folder ``done``) resolved inside the tree.

        Returns None when ``name`` is no longer a link (raced back).
        """
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno in (errno.EINVAL, errno.ENOENT):
                return None
            raise
        if target.startswith("/"):
            inside = posixpath.normpath(target)
            if inside != self.path and not inside.startswith(self.path + "/"):
                raise EscapeError(errno.EXDEV, f"link {'/'.join([*done, name])!r} leads outside")
            return split(inside[len(self.path) + 1:])
        return split(posixpath.join(*done, target) if done else target)

    def resolve(self, rel: str, follow: bool = True, mkdirs: bool = False) -> Leaf:
        """Open the folder holding ``rel``'s last component, every step without following links.

        Args:
            rel: path relative to the tree's root.
            follow: also resolve a link in the last position (inside the tree).
            mkdirs: create missing folders on the way (mode 0o777 minus umask).

        Returns:
            A :class:`Leaf` (caller closes it). For the root itself ``name`` is "".

        Raises:
            EscapeError: ``rel`` or a link on the way leads outside the tree.
            FileNotFoundError / NotADirectoryError: a folder on the way is missing
                or is a file.
            OSError: too many links (``ELOOP``).
        """
        todo = split(rel)
        for _ in range(MAX_LINKS + 1):
            restart = self._walk(todo, follow, mkdirs)
            if isinstance(restart, Leaf):
                return restart
            todo = restart
        raise OSError(errno.ELOOP, f"too many symbolic links in {rel!r}")

    def _walk(self, todo: list[str], follow: bool, mkdirs: bool) -> Leaf | list[str]:
        """One pass from the root: a Leaf, or the components to restart with after a link."""
        fd = os.dup(self.fd)
        done: list[str] = []
        try:
            if not todo:
                leaf, fd = Leaf(fd, "", "."), -1
                return leaf
            for i, name in enumerate(todo):
                last = i == len(todo) - 1
                if last:
                    if follow:
                        target = self._link_target(done, fd, name)
                        if target is not None:
                            return target
                    leaf, fd = Leaf(fd, name, "/".join([*done, name])), -1
                    return leaf
                try:
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not mkdirs:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(name, 0o777, dir_fd=fd)
                    child = os.open(name, DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                        raise
                    target = self._link_target(done, fd, name)
                    if target is None:
                        if exc.errno == errno.ENOTDIR:
                            raise
                        return todo  # swapped back meanwhile: walk again
                    return target + todo[i + 1:]
                os.close(fd)
                fd = child
                done.append(name)
            raise AssertionError("unreachable")
        finally:
            if fd >= 0:
                os.close(fd)

    # ------------------------------------------------------------------ opening
    def open_dir(self, rel: str) -> tuple[int, str]:
        """Open folder ``rel`` for listing: ``(fd, canonical rel)``; caller closes the fd.

        Raises:
            NotADirectoryError: ``rel`` is not a folder. Others as :meth:`resolve`.
        """
        for _ in range(MAX_LINKS + 1):
            with self.resolve(rel) as leaf:
                if not leaf.name:
                    return os.dup(leaf.parent), "."
                try:
                    return os.open(leaf.name, DIR_FLAGS, dir_fd=leaf.parent), leaf.rel
                except OSError as exc:
                    if exc.errno != errno.ELOOP:
                        raise
            # raced: the folder became a link after resolve(); resolve again
        raise OSError(errno.ELOOP, f"too many symbolic links in {rel!r}")

    def open_file(self, rel: str, follow: bool = True) -> tuple[int, os.stat_result, str]:
        """Open regular file ``rel`` for reading: ``(fd, fstat, canonical rel)``.

        The fd is blocking, read-only, close-on-exec; the caller closes it.

        Args:
            rel: path relative to the tree's root.
            follow: resolve a link in the last position (inside the tree); False
                refuses a link there (:class:`SpecialFileError`, kind "link").

        Raises:
            IsADirectoryError: ``rel`` is a folder.
            SpecialFileError: ``rel`` is a FIFO, socket or device node (or a
                link, with ``follow=False``).
            FileNotFoundError, EscapeError, OSError: as :meth:`resolve`.
        """
        for _ in range(MAX_LINKS + 1):
            with self.resolve(rel, follow=follow) as leaf:
                if not leaf.name:
                    raise IsADirectoryError(errno.EISDIR, "the root is a folder")
                try:
                    pfd = os.open(leaf.name, LEAF_FLAGS, dir_fd=leaf.parent)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:  # non-O_PATH platforms: a link
                        if not follow:
                            raise SpecialFileError(leaf.rel, "link") from None
                        continue
                    raise
                try:
                    st = os.fstat(pfd)
                    kind = file_kind(st.st_mode)
                    if kind == "link":
                        if not follow:
                            raise SpecialFileError(leaf.rel, "link")
                        continue  # became a link after resolve(): resolve again
                    if kind == "folder":
                        raise IsADirectoryError(errno.EISDIR, f"{leaf.rel!r} is a folder")
                    if kind != "file":
                        raise SpecialFileError(leaf.rel, kind)
                    if not REOPEN:
                        if O_PATH:
                            raise OSError(errno.ENOTSUP, "cannot reopen an O_PATH descriptor")
                        os.set_blocking(pfd, True)
                        fd, pfd = pfd, -1
                        return fd, st, leaf.rel
                    fd = os.open(f"{PROC_FD}/{pfd}", os.O_RDONLY | CLOEXEC)
                    return fd, st, leaf.rel
                finally:
                    if pfd >= 0:
                        os.close(pfd)
        raise OSError(errno.ELOOP, f"too many symbolic links in {rel!r}")

    def read_bytes(self, rel: str, limit: int | None = None, follow: bool = True) -> bytes:
        """Read regular file ``rel`` (at most ``limit`` bytes). Errors as :meth:`open_file`."""
        fd, st, _ = self.open_file(rel, follow=follow)
        try:
            return read_fd(fd, st.st_size if limit is None else min(limit, st.st_size), limit)
        finally:
            os.close(fd)

    def kind(self, rel: str, follow: bool = True) -> str | None:
        """File type of ``rel`` (see :func:`file_kind`); None when it does not exist.

        Raises:
            EscapeError: as :meth:`resolve` (a missing folder on the way gives None).
        """
        try:
            with self.resolve(rel, follow=follow) as leaf:
                st = leaf.lstat()
        except (FileNotFoundError, NotADirectoryError):
            return None
        return None if st is None else file_kind(st.st_mode)

    # ------------------------------------------------------------------ writing
    def write_bytes(self, rel: str, data: bytes, mode: int | None = None,
                    mkdirs: bool = True) -> str:
        """Replace (or create) regular file ``rel`` with ``data`` atomically.

        A temporary file is created ``O_EXCL | O_NOFOLLOW`` next to the target
        (through the folder's fd) and renamed over it. An existing file keeps
        its permission bits and, when we may, its owner; a new one gets
        ``mode`` (default 0o666 minus umask) and the folder's owner.

        Returns:
            The canonical relative path written.

        Raises:
            IsADirectoryError: ``rel`` is a folder.
            SpecialFileError: ``rel`` is a FIFO, socket or device node.
            EscapeError, OSError: as :meth:`resolve`.
        """
        with self.resolve(rel, mkdirs=mkdirs) as leaf:
            if not leaf.name:
                raise IsADirectoryError(errno.EISDIR, "the root is a folder")
            old = leaf.lstat()
            if old is not None and not stat.S_ISREG(old.st_mode):
                kind = file_kind(old.st_mode)
                if kind == "folder":
                    raise IsADirectoryError(errno.EISDIR, f"{leaf.rel!r} is a folder")
                raise SpecialFileError(leaf.rel, kind)
            owner = old if old is not None else os.fstat(leaf.parent)
            perms = stat.S_IMODE(old.st_mode) if old is not None else mode
            fd, tmp = _create_temp(leaf.parent, leaf.name, 0o600 if perms is not None else 0o666)
            try:
                try:
                    st = os.fstat(fd)
                    write_all(fd, data)
                    if perms is not None:
                        os.fchmod(fd, perms)
                    if (owner.st_uid, owner.st_gid) != (st.st_uid, st.st_gid):
                        with contextlib.suppress(PermissionError):
                            os.fchown(fd, owner.st_uid, owner.st_gid)
                finally:
                    os.close(fd)
                os.rename(tmp, leaf.name, src_dir_fd=leaf.parent, dst_dir_fd=leaf.parent)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=leaf.parent)
                raise
            return leaf.rel

    def unlink(self, rel: str) -> bool:
        """Delete file or link ``rel`` (never a folder's content). Returns False if missing.

        Raises:
            IsADirectoryError: ``rel`` is a folder. Others as :meth:`resolve`.
        """
        try:
            with self.resolve(rel, follow=False) as leaf:
                if not leaf.name:
                    raise IsADirectoryError(errno.EISDIR, "the root is a folder")
                os.unlink(leaf.name, dir_fd=leaf.parent)
                return True
        except FileNotFoundError:
            return False

    def chmod(self, rel: str, mode: int) -> None:
        """Set the permission bits of regular file ``rel`` (through its fd)."""
        with self.resolve(rel) as leaf:
            fd = os.open(leaf.name, LEAF_FLAGS, dir_fd=leaf.parent) if leaf.name else -1
        if fd < 0:
            raise IsADirectoryError(errno.EISDIR, "the root is a folder")
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise SpecialFileError(rel, file_kind(st.st_mode))
            if REOPEN:
                os.chmod(f"{PROC_FD}/{fd}", mode)
            else:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)


def walk(fd: int, enter: Callable[[str, os.stat_result], bool] | None = None,
         max_depth: int = MAX_DEPTH) -> Iterator[tuple[int, str, str, os.stat_result]]:
    """Every entry below the folder open as ``fd``, depth first, never following a link.

    Folders are opened one level at a time relative to their parent's fd
    (``O_NOFOLLOW``), so a folder swapped for a link is not entered. Each
    folder's entries are listed before they are yielded, so the caller may
    delete the entry it is given.

    Args:
        fd: an open folder (not closed here).
        enter: ``enter(rel, lstat) -> bool``: descend into this folder? (all by default).
        max_depth: deepest nesting entered.

    Yields:
        ``(folder fd, name, relative path, lstat)``; the folder fd is valid
        until the next item.

    Raises:
        OSError: folders nested deeper than ``max_depth`` (``ELOOP``).
    """
    stack: list[tuple[int, str, list[str] | None]] = [(os.dup(fd), "", None)]
    try:
        while stack:
            dfd, prefix, pending = stack[-1]
            if pending is None:
                pending = []
                for name, st in list(scan_fd(dfd)):
                    rel = prefix + name
                    yield dfd, name, rel, st
                    if stat.S_ISDIR(st.st_mode) and (enter is None or enter(rel, st)):
                        pending.append(name)
                pending.reverse()
                stack[-1] = (dfd, prefix, pending)
            if not pending:
                stack.pop()
                os.close(dfd)
                continue
            name = pending.pop()
            sub = open_subdir(dfd, name)
            if sub is None:
                continue
            if len(stack) >= max_depth:
                os.close(sub)
                top = (prefix + name).split("/", 1)[0]  # the whole path: 2 x max_depth chars
                raise OSError(errno.ELOOP, f"folders nested deeper than {max_depth} levels "
                                           f"below {top!r}")
            stack.append((sub, prefix + name + "/", None))
    finally:
        for dfd, _, _ in stack:
            os.close(dfd)


def read_fd(fd: int, size_hint: int, limit: int | None = None) -> bytes:
    """Read an fd to its end (or ``limit`` bytes); a file that grows keeps being read."""
    chunks, total = [], 0
    want = max(size_hint, 0) + 1
    while limit is None or total < limit:
        chunk = os.read(fd, want if limit is None else min(want, limit - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
        want = 1 << 20
    return b"".join(chunks)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (a short write is continued)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _create_temp(dir_fd: int, name: str, mode: int) -> tuple[int, str]:
    """Create an empty temporary file next to ``name`` (``O_EXCL``): ``(write fd, name)``."""
    stem = name[:32]
    for _ in range(100):
        tmp = f".{stem}.dgym-{os.urandom(4).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | CLOEXEC,
                         mode, dir_fd=dir_fd)
        except FileExistsError:
            continue
        return fd, tmp
    raise FileExistsError(errno.EEXIST, "no free temporary file name")
