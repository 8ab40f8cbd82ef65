"""The working copy of a repository for one episode.

The original repository (``source``) is copied into a temporary folder
(``root``, without ``.git``) and never written during the episode. Every path
an action names goes through :meth:`Workspace.resolve`, which refuses paths
that leave the working copy (``..``, absolute paths, symlinks pointing
outside) and paths hidden by ``.debugignore``.

The agent's code runs concurrently and is hostile: every host-side access
(copy, read, write, listing, change tracking, patch, apply-back) resolves
paths from directory descriptors without following links (``safefs``), and
only regular files are ever opened; FIFOs, sockets and device nodes are
named in a one-line refusal. Changes are tracked by :class:`TreeIndex`
(inotify), so a step costs what changed, not the repository's size.

Two gitignore-syntax files at the repository root shape what the agent sees:

- ``.debugignore``: matching files are invisible (listdir, view, grep) and
  cannot be read or written through the workspace.
- ``.debugreadonly``: matching files are visible but cannot be written.

Both files, ``.git``, and the caches Python and pytest write
(``__pycache__/``, ``*.pyc``, ``.pytest_cache/``) are always ignored.
"""

from __future__ import annotations

import bisect
import contextlib
import errno
import logging
import os
import posixpath
import stat
import tempfile
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgym_tui.core import tempdirs
from dgym_tui.core.fdtree import DIR_FLAGS, open_subdir, remove_at, remove_tree, scan_fd
from dgym_tui.core.fs.gitpatch import MODE_EXEC, MODE_LINK, Blob, blob_id, file_patch, git_mode, merge3
from dgym_tui.core.fs.idcache import BlobIdCache, key_of
from dgym_tui.core.fs.ignorecache import Scan, forget, ignored_entries
from dgym_tui.core.fs.lookahead import START_DELAY, LookAhead
from dgym_tui.core.fs.rules import (  # the rules' names are this module's too
    ALWAYS_IGNORED,
    BINARY_SNIFF_BYTES,
    IGNORE_FILE,
    NOT_COPIED,
    READONLY_FILE,
    is_binary,
    pattern_names,
)
from dgym_tui.core.fs.safefs import (
    EscapeError,
    SafeTree,
    SpecialFileError,
    file_kind,
    read_fd,
    walk,
    write_all,
)
from dgym_tui.core.fs.treeindex import Stamp, TreeIndex, stamp
from dgym_tui.core.types import (  # defined with the shared types
    SANDBOX_UID_RANGE,
    ApplyConflictError,
    WorkspaceError,
)

if TYPE_CHECKING:
    import pathspec

    from dgym_tui.core.fs.overlay import Overlay

# The overlay's module (ctypes, the mount calls) is imported where an overlay is mounted
# or removed (the episode's thread), not with this module.

log = logging.getLogger(__name__)

#: Prefix of working-copy folders: ``dgym-ws-<owner pid>-<random>``.
WS_PREFIX = "dgym-ws-"

#: Bytes read at a time when streaming a file.
CHUNK_BYTES = 1 << 20
#: Longest line kept when streaming (longer lines are cut; view cuts far earlier).
MAX_KEPT_LINE = 1 << 16
#: Bytes of unchanged file content kept in memory for grep.
CONTENT_CACHE_BYTES = 64 << 20

_swept = False


def _read_patterns(path: Path) -> list[str]:
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 20).decode("utf-8", "replace").splitlines()
    except OSError:
        return []


def remove_stale_folders(folder: str | None = None) -> list[str]:
    """Delete dgym's temporary folders (``dgym-<kind>-<pid>-*``, :mod:`dgym_tui.core.tempdirs`)
    whose owner process is gone.

    A process killed with SIGKILL deletes none of what it made (working copies, scratch,
    plugin and support folders, overlay probes, staged tasks), nor can one whose sandbox
    wrote into a folder while it was deleted. Only real folders (never a link) owned by
    this user are touched, or, when dgym runs as root, by a uid of
    :data:`SANDBOX_UID_RANGE` (a root-started sandbox's own, to which the folder was
    handed); a mount a killed root owner left in an overlay's base is unmounted first;
    deletion never follows links (``fdtree.remove_tree``). A folder whose pid now belongs
    to another live process (pid reuse) is kept until that process is gone too.

    Args:
        folder: where to look; the system's temporary folder by default.

    Returns:
        The host paths removed.
    """
    folder = folder or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        pid = tempdirs.owner_pid(name)
        if pid is None or pid == os.getpid() or _pid_exists(pid):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        ours = st.st_uid == os.getuid() or (os.geteuid() == 0
                                             and st.st_uid in SANDBOX_UID_RANGE)
        if stat.S_ISDIR(st.st_mode) and ours:
            from dgym_tui.core.fs.overlay import remove_base

            remove_base(path)
            removed.append(path)
    return removed


def _pid_exists(pid: int) -> bool:
    """Whether process ``pid`` may run, the kernel's answer to signal 0.

    Not psutil's: its import was ~10 ms of every app's reset, on the reset's thread while
    the app draws its first frame (this machine's temporary folder always holds another
    dgym's folders), and its answer raised OverflowError for a pid beyond a C long, a name
    any user can give a file in /tmp. Errs on the side of keeping a folder: a pid the
    kernel knows is taken as running (a live thread's id too, which psutil tells apart),
    and so is a pid no process can have."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):  # another user's process; no such pid at all
        return True
    return True


def _copy_fd(fd_in: int, fd_out: int, size: int) -> None:
    """Copy the first ``size`` bytes of ``fd_in`` into the empty ``fd_out``, holes kept.

    Only the data extents are copied (``SEEK_DATA`` / ``SEEK_HOLE``) and the
    copy is then cut or extended to ``size``: a sparse file the agent made
    (``truncate -s 100G``) stays as small on disk as it is, instead of being
    written out in full.
    """
    offset = 0
    while offset < size:
        try:
            data = os.lseek(fd_in, offset, os.SEEK_DATA)
            hole = os.lseek(fd_in, data, os.SEEK_HOLE)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data past offset: the rest is a hole
                break
            data, hole = offset, size  # no SEEK_DATA here: all of it is data
        end = min(hole, size)
        if data >= end:
            break
        _copy_range(fd_in, fd_out, data, end - data)
        offset = end
    os.ftruncate(fd_out, size)


def _copy_range(fd_in: int, fd_out: int, offset: int, count: int) -> None:
    """Copy ``count`` bytes at ``offset`` of ``fd_in`` to the same offset of ``fd_out``
    (fewer when the file shrank meanwhile)."""
    done = 0
    try:
        while done < count:
            n = os.copy_file_range(fd_in, fd_out, count - done, offset + done, offset + done)
            if n == 0:
                return
            done += n
    except (AttributeError, OSError):  # no copy_file_range here: read and write
        while done < count:
            chunk = os.pread(fd_in, min(count - done, CHUNK_BYTES), offset + done)
            if not chunk:
                return
            written = 0
            while written < len(chunk):
                written += os.pwrite(fd_out, chunk[written:], offset + done + written)
            done += len(chunk)


class Workspace:
    """A temporary working copy of ``source`` with ignore / read-only rules.

    The copy leaves out ``.git``, ``__pycache__`` and ``.pytest_cache`` folders,
    every ignored file and folder (``.debugignore``), and FIFOs, sockets and
    device nodes (listed in ``skipped``).

    Args:
        source: path of the original repository (a folder); never written
            except by :meth:`apply_to_source`.
        ignore: extra gitignore-style patterns hiding files from the agent.
        readonly: extra gitignore-style patterns making files read-only.
        overlay: make the working copy an overlay of the original
            (:mod:`.overlay`) instead of a copy: nothing is copied or read at
            the start; the original's files are read when first compared.
            Only commands that join :attr:`overlay`'s namespace see it (the
            local and bwrap terminals), or a container that binds it
            (``bindable``); elsewhere on the host its folder is empty.
        run_as: with ``overlay`` when dgym runs as root: ``(uid, gid)`` of the
            sandbox's commands, shown as the owner of the original's files.
        bindable: with ``overlay`` (root only): mount it where a container
            engine can bind it (``overlay.merged`` in this mount namespace, until
            ``overlay.detach()``), for the docker terminal.

    Attributes:
        source: absolute ``Path`` of the original repository.
        root: absolute ``Path`` of the working copy (a fresh temporary folder);
            for an overlay, ``/proc/<pid>/fd/<n>``: this process's descriptor of
            the merged view (its ``realpath`` is where the sandbox sees it).
        skipped: ``(relative path, kind)`` of source entries not copied.
        ignored_at_start: the topmost paths of the original hidden by
            ``.debugignore`` (sorted): never copied, so nothing in the working
            copy (no tool, no command) can read them. With ``overlay`` they
            are in the merged view (and ``.git`` with them), and the sandbox
            must mask them (the bwrap terminal does).
        folder: absolute ``Path`` of the host folder holding the working copy
            (a copy's files; an overlay's layers and mount points): what
            :meth:`cleanup` deletes. For a copy, ``root`` itself.
        overlay: the :class:`.overlay.Overlay` (None for a copy).

    Raises:
        WorkspaceError: ``source`` is not an existing folder.
        UnmappedOwners: with ``overlay``, the original holds an entry the overlay
            could not change (:func:`.overlay.copyable_ids`); nothing is left behind.
    """

    def __init__(self, source: str | os.PathLike, ignore: Iterable[str] = (),
                 readonly: Iterable[str] = (), overlay: bool = False,
                 run_as: tuple[int, int] | None = None, bindable: bool = False) -> None:
        global _swept
        self.source = Path(source).resolve()
        if not self.source.is_dir():
            raise WorkspaceError(f"repository folder {str(source)!r} does not exist; "
                                 "give the path of a folder")
        if not _swept:  # once per process: temporary folders of killed owners
            _swept = True
            remove_stale_folders()
        import pathspec  # here, not at import: a front end starts without it

        self._ignore_lines = [*ALWAYS_IGNORED, *_read_patterns(self.source / IGNORE_FILE),
                              *ignore]
        self._ignore = pathspec.GitIgnoreSpec.from_lines(self._ignore_lines)
        self._readonly = pathspec.GitIgnoreSpec.from_lines(
            [*_read_patterns(self.source / READONLY_FILE), *readonly])
        self._visible_cache: dict[tuple[str, bool], bool] = {}
        self.skipped: list[tuple[str, str]] = []
        self.ignored_at_start: list[str] = []
        # read-only entries copied: rel -> (kind, permission bits, blob id / link target)
        self._readonly_start: dict[str, tuple[str, int, str]] = {}
        self._readonly_cache: dict[tuple[str, bool], bool] = {}
        self._src_info: dict[str, tuple[Stamp, str]] = {}
        self._index: TreeIndex | None = None
        self._tree: SafeTree | None = None  # None once closed
        self._src: SafeTree | None = None
        self.overlay: Overlay | None = None
        self._use_overlay, self.run_as, self._bindable = overlay, run_as, bindable
        self._upper: TreeIndex | None = None  # an overlay's upper layer: what changed
        self._lookahead: LookAhead | None = None  # an overlay's first lookups, in a thread
        self._candidates_cache: set[str] | None = None
        self._user_ignore = len(self._ignore_lines) > len(ALWAYS_IGNORED)
        self._fill(None)
        self._initial: dict[str, Stamp] | _LowerStart = (
            _LowerStart(self._src, self._visible) if self.overlay is not None  # type: ignore[arg-type]
            else dict(self._index.entries))  # type: ignore[union-attr,attr-defined]  # _fill set it
        self._touched: set[str] = set()
        self._base: dict[str, Blob | None] = {}
        self._clear_caches()

    def _fill(self, parent: Workspace | None) -> None:
        """Make ``root`` (a fresh temporary folder), copy the source or ``parent``'s working
        copy into it and index it; on failure delete it and raise."""
        self.root = Path(tempdirs.make("ws")).resolve()
        self.folder = self.root
        try:
            self._src = SafeTree(self.source)
            if self._use_overlay:
                self._mount(parent)
                return
            self._tree = SafeTree(self.root)
            self._copy(self._src if parent is None else parent._tree, record=parent is None)
            self._index = TreeIndex(self._tree, self._visible)
        except BaseException:
            self.cleanup()
            raise

    def _mount(self, parent: Workspace | None) -> None:
        """Mount the overlay (a fork's upper layer is a copy of ``parent``'s).

        Nothing of the original is copied or read: ignored entries are found
        by one walk of names and whited out in the upper layer before it is
        mounted (absent from the merged view, as from a copy), the change index
        watches the upper layer, the index of every file is made when first
        needed (grep, a listing of every file), and only read-only files are
        read, to remember their starting content.

        Raises:
            UnmappedOwners: the walk saw an entry the overlay could not change
                (:func:`.overlay.copyable_ids`); nothing is mounted.
        """
        from dgym_tui.core.fs.overlay import UPPER, Overlay

        os.mkdir(self.root / UPPER, 0o700)
        if parent is not None:
            _copy_upper(parent.overlay.upper, str(self.root / UPPER), self.run_as)  # type: ignore[union-attr]
        else:
            scan = self._find_ignored()
            why = _unmapped(str(self.source), self.run_as, scan.owners)
            if why is not None:
                from dgym_tui.core.fs.overlay import UnmappedOwners

                raise UnmappedOwners(why)
            self.ignored_at_start = scan.found
            _white_out(self._src, str(self.root / UPPER), self.ignored_at_start,  # type: ignore[arg-type]
                       self.run_as)
        self.overlay = Overlay(str(self.source), str(self.root), self.run_as, self._bindable)
        self._tree = SafeTree.from_fd(os.dup(self.overlay.root_fd), self.overlay.merged)
        # the merged view through our own descriptor: on the host, base/merged is empty
        self.root = Path(f"/proc/{os.getpid()}/fd/{self._tree.fd}")
        self._upper = TreeIndex(SafeTree(self.overlay.upper), self._visible)
        if parent is None:
            self._record_readonly()

    def _merged(self) -> TreeIndex:
        """The index of every visible entry (an overlay's is made at its first use)."""
        if self._index is None:
            self._index = TreeIndex(self._tree, self._visible)  # type: ignore[arg-type]
        return self._index

    def _find_ignored(self) -> Scan:
        """The topmost ignored entries of the original a sandbox must mask (overlay), and
        the owners of the others.

        ``.git`` folders and the rule files always; with ``.debugignore`` or
        ``ignore=`` patterns, every entry they hide. Caches (``__pycache__``,
        ``.pytest_cache``, ``*.pyc``) are the tests' to write: not masked.
        One walk of names, kept per original while its folders stay the same
        (:mod:`.ignorecache`).
        """
        always = {".git", IGNORE_FILE, READONLY_FILE}
        user = self._user_ignore

        def hidden(rel: str, is_dir: bool) -> bool:
            return rel.rpartition("/")[2] in always or (user and not self._visible(rel, is_dir))

        return ignored_entries(self.source, self._src.fd, self._ignore_lines, user,  # type: ignore[union-attr]
                               hidden)

    def _candidates(self) -> set[str]:
        """Paths an overlay's upper layer says may differ from the original.

        Every non-folder entry of the upper layer (files, links, whiteouts), and
        every file of the original below a folder the upper layer deleted (a
        whiteout or another kind of entry over it) or made opaque (deleted and
        made again). Costs what changed, not the repository's size.
        """
        if self._candidates_cache is not None:
            return self._candidates_cache
        upper = self._upper
        out = set(upper.entries)  # type: ignore[union-attr]
        opaque = "trusted.overlay.opaque" if os.geteuid() == 0 else "user.overlay.opaque"
        for rel in list(upper.entries) + sorted(upper.dirs):  # type: ignore[union-attr]
            if self._kind_src(rel) != "folder":
                continue
            if rel in upper.dirs:  # type: ignore[union-attr]
                try:
                    fd, _ = upper.tree.open_dir(rel)  # type: ignore[union-attr]
                except OSError:
                    continue
                try:
                    os.getxattr(fd, opaque)
                except OSError:
                    continue  # merged with the original's folder
                finally:
                    os.close(fd)
            out |= self._initial.below(rel)  # type: ignore[union-attr]
        self._candidates_cache = out
        return out

    @property
    def has_readonly_rules(self) -> bool:
        """True when ``.debugreadonly`` or ``readonly=`` name anything (a pattern, not only
        comments): only then do read-only paths need listing."""
        return any(p.include is not None for p in self._readonly.patterns)

    def _record_readonly(self) -> None:
        """Remember the read-only entries of the (overlay) working copy as they start."""
        if not self.has_readonly_rules:
            return
        index = self._merged()
        for rel in sorted(index.dirs):
            if self._match(self._readonly, rel):
                found = self._tree_stat(rel)
                if found is not None:
                    self._readonly_start[rel] = ("folder", stat.S_IMODE(found.st_mode), "")
        for rel, st in index.entries.items():
            if not self._match(self._readonly, rel):
                continue
            if stat.S_ISLNK(st.mode):
                blob = self._blob(self._tree, rel)
                if blob is not None:
                    self._readonly_start[rel] = ("link", 0, os.fsdecode(blob.data))
            elif stat.S_ISREG(st.mode):
                info = self._start_info(rel, st)
                if info is not None:
                    self._readonly_start[rel] = ("file", stat.S_IMODE(st.mode), info[1])

    def _tree_stat(self, rel: str) -> os.stat_result | None:
        try:
            with self._tree.resolve(rel, follow=False) as leaf:  # type: ignore[union-attr]
                # a folder on the way that is a link: the path itself does not exist
                return leaf.lstat() if leaf.rel == rel else None
        except OSError:
            return None

    def _start_info(self, rel: str, init: Stamp | None = None) -> tuple[Stamp, str] | None:
        """``(stamp, git blob id)`` of ``rel`` at the start; an overlay reads the original now."""
        info = self._src_info.get(rel)
        if info is not None or self.overlay is None:
            return info
        init = init or self._initial.get(rel)
        if init is None:
            return None
        blob = self._blob(self._src, rel)
        if blob is None:
            return None
        info = (init, blob_id(blob.data))
        self._src_info[rel] = info
        return info

    def _clear_caches(self) -> None:
        """Start the caches kept about the working copy's files empty."""
        self._version = 0
        self._same: dict[str, tuple[Stamp, bool]] = {}
        self._content: dict[str, tuple[Stamp, bytes]] = {}
        self._content_bytes = 0
        self._line_index: dict[str, tuple[Stamp, list[tuple[int, int]], int]] = {}
        self._files_cache: tuple[int, list[str], dict] | None = None
        # read-only files as last seen intact: rel -> (ino, size, mtime, ctime); ctime
        # cannot be set back, so an equal one means an unchanged file
        self._readonly_seen: dict[str, tuple[int, int, int, int]] = {}

    def fork(self, run_as: tuple[int, int] | None = None) -> Workspace:
        """A new, independent working copy holding this one's current files.

        The files are copied from this working copy (which the agent's code
        may be changing) through folder descriptors, never following a link;
        links are copied as links, FIFOs, sockets and device nodes are left
        out. The fork has the same original, rules and starting state, so its
        :meth:`patch` equals this one's as long as neither changes; from then
        on each tracks its own changes. An overlay working copy forks by
        copying its upper layer only (what changed), into a new overlay.

        Args:
            run_as: for an overlay, as the constructor's (the fork's sandbox
                has its own uid).

        Returns:
            The new :class:`Workspace` (its own temporary ``root``; the caller
            calls :meth:`cleanup`).

        Raises:
            OSError: the copy failed (disk full, ...); nothing is left behind.
        """
        self.refresh()
        child = Workspace.__new__(Workspace)
        child.source = self.source
        child._ignore, child._readonly = self._ignore, self._readonly  # never changed
        child._ignore_lines = self._ignore_lines
        child._visible_cache = dict(self._visible_cache)
        child._readonly_cache = dict(self._readonly_cache)
        child.skipped = list(self.skipped)
        child.ignored_at_start = list(self.ignored_at_start)
        child._readonly_start = dict(self._readonly_start)
        child._src_info = dict(self._src_info)
        child._index = None
        child._tree = child._src = None
        child.overlay, child._upper, child._candidates_cache = None, None, None
        child._lookahead = None
        child._user_ignore = self._user_ignore
        child._use_overlay = self.overlay is not None
        child._bindable = self._bindable
        child.run_as = run_as
        child._fill(self)
        if child.overlay is not None:  # the same original below; the upper layer copied
            child._initial = self._initial.copy()
            child._touched = set(self._touched) | self._candidates()
            child._base = dict(self._base)
            child._clear_caches()
            return child
        # A file this copy never saw change keeps the fork's own stamp as its start (when
        # the copy has the same type, size and time); any other is compared by content.
        entries = child._index.entries  # type: ignore[attr-defined]  # _fill set it
        child._initial, child._touched = {}, set(self._touched)
        for rel, init in self._initial.items():
            cur = entries.get(rel)
            if rel not in self._touched and cur is not None and cur[:3] == init[:3]:
                child._initial[rel] = cur
            else:
                child._initial[rel] = init._replace(ino=-1)  # never equal: read it
                child._touched.add(rel)
        child._touched |= entries.keys() - self._initial.keys()
        child._base = dict(self._base)  # the original's starting contents (immutable blobs)
        child._clear_caches()
        return child

    # -------------------------------------------------------------------- copy
    def _copy(self, origin: SafeTree, record: bool) -> None:
        """Copy ``origin`` into the (empty) root through folder descriptors.

        Ignored entries are left out (``ignored_at_start`` names the topmost);
        the read-only ones copied are remembered for :meth:`enforce_readonly`.

        Args:
            origin: the tree to copy (the source, or a working copy to fork).
            record: keep each entry's stamp, git blob id, and the ignored and
                read-only ones, as the start (a source; a fork has its parent's).
        """
        stack = [(os.dup(origin.fd), os.dup(self._tree.fd), "", False)]
        while stack:
            src, dst, prefix, in_readonly = stack.pop()
            try:
                for name, st in scan_fd(src):
                    if name in NOT_COPIED:
                        continue
                    rel = prefix + name
                    kind = file_kind(st.st_mode)
                    is_dir = kind == "folder"
                    if not self._visible(rel, is_dir):
                        if record:
                            self.ignored_at_start.append(rel)
                        continue
                    readonly = record and (in_readonly or self._readonly_entry(rel, is_dir))
                    if is_dir:
                        sub_src = open_subdir(src, name)
                        if sub_src is None:
                            continue
                        os.mkdir(name, 0o700, dir_fd=dst)
                        sub_dst = os.open(name, DIR_FLAGS, dir_fd=dst)
                        os.fchmod(sub_dst, stat.S_IMODE(st.st_mode) | 0o700)
                        stack.append((sub_src, sub_dst, rel + "/", readonly))
                        if readonly:
                            self._readonly_start[rel] = ("folder", stat.S_IMODE(st.st_mode), "")
                    elif kind == "file":
                        self._copy_file(src, dst, name, rel, record)
                        if readonly and rel in self._src_info:
                            self._readonly_start[rel] = ("file", stat.S_IMODE(st.st_mode),
                                                         self._src_info[rel][1])
                    elif kind == "link":
                        target = os.readlink(name, dir_fd=src)
                        os.symlink(target, name, dir_fd=dst)
                        if record:
                            self._src_info[rel] = (stamp(st), blob_id(os.fsencode(target)))
                        if readonly:
                            self._readonly_start[rel] = ("link", 0, target)
                    else:
                        self.skipped.append((rel, kind))
            finally:
                os.close(src)
                os.close(dst)
        self.ignored_at_start.sort()

    def _readonly_entry(self, rel: str, is_dir: bool) -> bool:
        """Does a ``.debugreadonly`` pattern name entry ``rel`` itself (not a parent)? Cached."""
        return pattern_names(self._readonly, self._readonly_cache, rel, is_dir)

    def _copy_file(self, src: int, dst: int, name: str, rel: str, record: bool) -> None:
        try:
            fd_in = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                            dir_fd=src)
        except OSError:
            self.skipped.append((rel, "unreadable file"))
            return
        try:
            st = os.fstat(fd_in)
            if not stat.S_ISREG(st.st_mode):
                self.skipped.append((rel, file_kind(st.st_mode)))
                return
            data = read_fd(fd_in, st.st_size) if record else b""
            fd_out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, stat.S_IMODE(st.st_mode) | 0o600, dir_fd=dst)
            try:
                if record:
                    write_all(fd_out, data)
                else:  # a fork: stream what the file held when opened, kernel to kernel
                    _copy_fd(fd_in, fd_out, st.st_size)
                _keep_mode_and_times(fd_out, st)
            finally:
                os.close(fd_out)
            if record:
                self._src_info[rel] = (stamp(st), blob_id(data))
        finally:
            os.close(fd_in)

    # ------------------------------------------------------------------ rules
    @staticmethod
    def _normalize(rel: str) -> str:
        """Return ``rel`` as a normalized POSIX path relative to the root, or raise."""
        if not isinstance(rel, str):
            raise WorkspaceError(f"a path must be a string, got {type(rel).__name__}")
        if "\0" in rel:
            raise WorkspaceError(f"path {rel!r} contains a NUL byte; give a plain file path")
        text = rel.strip().replace("\\", "/")
        if not text:
            text = "."
        if text.startswith("/") or (len(text) > 1 and text[1] == ":"):
            raise WorkspaceError(f"path {rel!r} is absolute; give a path relative to the "
                                 "repository root, e.g. 'src/app.py'")
        norm = posixpath.normpath(text)
        if norm == ".." or norm.startswith("../"):
            raise WorkspaceError(f"path {rel!r} leads outside the repository; give a path "
                                 "inside it, relative to its root")
        return norm

    def _visible(self, rel: str, is_dir: bool) -> bool:
        """Is entry ``rel`` itself visible (its folders are known to be)? Cached."""
        return not pattern_names(self._ignore, self._visible_cache, rel, is_dir)

    def _match(self, spec: pathspec.PathSpec, rel: str) -> bool:
        if rel == ".":
            return False
        parts = rel.split("/")
        # A file inside an ignored folder is ignored too (as in git).
        for i in range(1, len(parts)):
            if spec.match_file("/".join(parts[:i]) + "/"):
                return True
        if spec.match_file(rel):
            return True
        # A folder pattern names a folder, or a missing path (an ignored folder is not copied).
        return spec.match_file(rel + "/") and self.kind(rel) in ("folder", None)

    def kind(self, rel: str, follow: bool = True) -> str | None:
        """File type of canonical path ``rel`` ("file", "folder", "link", "FIFO", ...); None if missing."""
        try:
            return self._tree.kind(rel, follow=follow)
        except OSError:
            return None

    def is_ignored(self, rel: str) -> bool:
        """Return True when ``rel`` (a relative POSIX path) is hidden from the agent."""
        return self._match(self._ignore, self._normalize(rel))

    def is_readonly(self, rel: str) -> bool:
        """Return True when ``rel`` (a relative POSIX path) may not be written by the agent."""
        return self._match(self._readonly, self._normalize(rel))

    def canonical(self, rel: str, must_exist: bool = False) -> str:
        """Return ``rel`` with links inside the working copy resolved (a relative path).

        Raises:
            WorkspaceError: ``rel`` is absolute, leads outside the working copy
                (``..`` or a symlink pointing outside), is hidden by
                ``.debugignore``, or does not exist while ``must_exist``.
        """
        norm = self._normalize(rel)
        hidden = WorkspaceError(f"{norm!r} does not exist or is hidden from you; "
                                "use listdir to see the available files")
        if self._match(self._ignore, norm):
            raise hidden
        try:
            with self._tree.resolve(norm) as leaf:
                target = leaf.rel
                exists = leaf.lstat() is not None
        except EscapeError:
            raise WorkspaceError(f"path {rel!r} leads outside the repository (through a "
                                 "symbolic link); only files inside it can be used") from None
        except (FileNotFoundError, NotADirectoryError):
            target, exists = norm, False
        except OSError as exc:
            raise WorkspaceError(f"path {rel!r} cannot be used: {exc.strerror}") from None
        if (target != norm and self._match(self._ignore, target)) or (must_exist and not exists):
            raise hidden
        return target

    def resolve(self, rel: str, must_exist: bool = False) -> Path:
        """Return the host path of ``rel`` inside the working copy, for naming only.

        Never open the returned path yourself: the agent may swap a folder on
        it for a link at any time; use the workspace's read / write methods.

        Args:
            rel: path relative to the repository root (POSIX or OS separators).
            must_exist: also refuse paths that do not exist.

        Returns:
            The absolute host ``Path`` (links inside the working copy resolved).

        Raises:
            WorkspaceError: as :meth:`canonical`.
        """
        target = self.canonical(rel, must_exist=must_exist)
        return self.root if target == "." else self.root / target

    # ------------------------------------------------------------- file access
    def _refusal(self, rel: str, exc: OSError) -> WorkspaceError:
        if isinstance(exc, SpecialFileError):
            return WorkspaceError(f"{rel!r} is a {exc.kind}, not a regular file; only "
                                  "regular files can be read or written")
        if isinstance(exc, IsADirectoryError):
            return WorkspaceError(f"{rel!r} is a folder; use listdir to see its content")
        if isinstance(exc, EscapeError):
            return WorkspaceError(f"path {rel!r} leads outside the repository (through a "
                                  "symbolic link); only files inside it can be used")
        if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
            return WorkspaceError(f"{rel!r} does not exist or is hidden from you; use "
                                  "listdir to see the available files")
        if exc.errno == errno.EOVERFLOW:  # an overlay's copy-up of an unmapped owner's entry
            forget(self.source)  # the cache missed that owner: the next walk finds it
            return WorkspaceError(f"{rel!r} cannot be changed: it, or a folder above it, "
                                  "belongs to a user or group this working copy does not "
                                  "map; the next episode's working copy will be a copy")
        return WorkspaceError(f"{rel!r} cannot be used: {exc.strerror or exc}")

    def read_bytes(self, rel: str, limit: int | None = None) -> bytes:
        """Return the bytes of regular file ``rel`` (at most ``limit``).

        Raises:
            WorkspaceError: refused (see :meth:`canonical`), a folder, a FIFO /
                socket / device node, or missing.
        """
        target = self.canonical(rel, must_exist=True)
        try:
            return self._tree.read_bytes(target, limit)
        except OSError as exc:
            raise self._refusal(target, exc) from None

    def read_text(self, rel: str) -> str:
        """Return the text of file ``rel`` (UTF-8, invalid bytes replaced).

        Raises:
            WorkspaceError: the path is refused by :meth:`resolve`, is a folder,
                a FIFO / socket / device node, or a binary file.
        """
        data = self.read_bytes(rel)
        if is_binary(data[:BINARY_SNIFF_BYTES]):
            raise WorkspaceError(f"{self._normalize(rel)!r} is a binary file; only text files "
                                 "can be shown")
        return data.decode("utf-8", "replace")

    def read_lines(self, rel: str, first: int, last: int) -> tuple[str, list[str], int]:
        """Stream file ``rel``: lines ``first``..``last`` (1-based) and the line count.

        Only the requested lines are kept (each cut at ``MAX_KEPT_LINE`` bytes);
        the rest of the file is counted in chunks, so memory stays small for
        big files. For a big file the line number at each chunk start is
        remembered (while the file is unchanged), so later views read only
        from the chunk holding ``first`` to ``last``. Lines end at "\\n"
        only; line ends are removed.

        Returns:
            ``(canonical relative path, lines, total number of lines)``.

        Raises:
            WorkspaceError: as :meth:`read_text`.
        """
        target = self.canonical(rel, must_exist=True)
        try:
            fd, st, _ = self._tree.open_file(target)
        except OSError as exc:
            raise self._refusal(target, exc) from None
        kept: list[bytes] = []
        current: list[bytes] = []
        number, sniffed, ends_nl, offset, total = 1, False, True, 0, None
        hit = self._line_index.get(target)
        if hit is not None and hit[0] == stamp(st):  # known file: start near `first`
            total, sniffed = hit[2], True
            offset, number = max(((o, n) for o, n in hit[1] if n < first), default=(0, 1))
            os.lseek(fd, offset, os.SEEK_SET)
        checkpoints: list[tuple[int, int]] = []
        try:
            while total is None or number <= last:
                chunk = os.read(fd, CHUNK_BYTES)
                if not chunk:
                    break
                checkpoints.append((offset, number))  # the line the chunk starts in
                offset += len(chunk)
                if not sniffed:
                    sniffed = True
                    if is_binary(chunk[:BINARY_SNIFF_BYTES]):
                        raise WorkspaceError(f"{target!r} is a binary file; only text files "
                                             "can be shown")
                ends_nl = chunk.endswith(b"\n")
                newlines = chunk.count(b"\n")
                if number > last or number + newlines < first:
                    number += newlines  # nothing to keep in this chunk: only count
                    current = []
                    continue
                pieces = chunk.split(b"\n")
                for i, piece in enumerate(pieces):
                    if first <= number <= last and sum(map(len, current)) < MAX_KEPT_LINE:
                        current.append(piece)
                    if i < len(pieces) - 1:
                        if first <= number <= last:
                            kept.append(b"".join(current)[:MAX_KEPT_LINE])
                        current = []
                        number += 1
        finally:
            os.close(fd)
        if not ends_nl and sniffed and first <= number <= last:
            kept.append(b"".join(current)[:MAX_KEPT_LINE])
        if total is None:
            total = number - 1 if ends_nl or not sniffed else number
            if st.st_size > CHUNK_BYTES:  # big: remember where its chunks start
                self._line_index[target] = (stamp(st), checkpoints, total)
        lines = [line.decode("utf-8", "replace").rstrip("\r") for line in kept]
        return target, lines, total

    def write_text(self, rel: str, text: str) -> Path:
        """Write ``text`` (UTF-8) to file ``rel``, creating parent folders as needed.

        The file is replaced atomically (temporary file + rename in the same
        folder, through folder descriptors).

        Returns:
            The host path written (for naming only).

        Raises:
            WorkspaceError: the path is refused by :meth:`resolve`, is a folder,
                a FIFO / socket / device node, or is read-only
                (``.debugreadonly`` or ``readonly=``).
        """
        norm = self._normalize(rel)
        if self._match(self._ignore, norm):
            raise WorkspaceError(f"{norm!r} is hidden by .debugignore and cannot be "
                                 "written; choose another path")
        target = self.canonical(norm)
        if self._match(self._readonly, norm) or self._match(self._readonly, target):
            raise WorkspaceError(f"{norm!r} is read-only (.debugreadonly); change other "
                                 "files instead")
        try:
            written = self._tree.write_bytes(target, text.encode("utf-8", "surrogateescape"))
        except IsADirectoryError:
            raise WorkspaceError(f"{norm!r} is a folder; give the path of a file") from None
        except OSError as exc:
            raise self._refusal(target, exc) from None
        return self.root / written

    def children(self, rel: str = ".") -> list[tuple[str, bool]]:
        """Return the visible entries directly inside folder ``rel``.

        Returns:
            Sorted ``(relative POSIX path, is_folder)`` pairs. Hidden entries
            and symlinks pointing outside the working copy are left out;
            FIFOs, sockets and device nodes are listed as files.

        Raises:
            WorkspaceError: ``rel`` is refused by :meth:`resolve` or is a file.
        """
        target = self.canonical(rel, must_exist=True)
        try:
            fd, target = self._tree.open_dir(target)
        except NotADirectoryError:
            raise WorkspaceError(f"{self._normalize(rel)!r} is a file, not a folder; use "
                                 "view to read it") from None
        except OSError as exc:
            raise self._refusal(target, exc) from None
        prefix = "" if target == "." else target + "/"
        out = []
        try:
            for name, st in scan_fd(fd):
                child = prefix + name
                is_dir = stat.S_ISDIR(st.st_mode)
                if not self._visible(child, is_dir):
                    continue
                if stat.S_ISLNK(st.st_mode):
                    try:
                        linked = self.canonical(child, must_exist=True)
                    except WorkspaceError:
                        continue
                    is_dir = self.kind(linked) == "folder"
                out.append((child, is_dir))
        finally:
            os.close(fd)
        return sorted(out)

    def look_ahead(self, within: Collection[str] | None = None) -> None:
        """Start looking up, in a thread, what a test run first asks a fresh overlay
        for (:mod:`.lookahead`), once per working copy; nothing for a copy.
        ``within``: the root's folders the run collects from (``lookahead.test_folders``
        of its command; None: every one).

        Called when a command is about to start (the eval): the lookups are made
        while it starts (the shell, the sandbox, Python: hundreds of ms, with this
        process waiting), after ``lookahead.START_DELAY`` (its launch here), and
        its own first lookups find them cached. Started any earlier, the thread
        would share this process's interpreter lock and CPU with the terminal's
        start. Never raises.
        """
        if self._lookahead is None and self.overlay is not None and self._tree is not None:
            self._lookahead = LookAhead(self._tree.fd, delay=START_DELAY, within=within)

    # ------------------------------------------------------------ the index
    def refresh(self) -> bool:
        """Bring the change index up to date. Returns True when a visible entry changed.

        With inotify this costs what changed since the last call; without, a scan.
        """
        if self._index is None and self._upper is None:
            return False
        changed: set[str] = set()
        if self._upper is not None:
            changed = self._upper.refresh()
            if changed:
                self._candidates_cache = None
        if self._index is not None:
            changed |= self._index.refresh()
        if changed:
            self._touched |= changed
            self._version += 1
        return bool(changed)

    @property
    def version(self) -> int:
        """A number that changes whenever :meth:`refresh` saw a visible entry change."""
        return self._version

    @property
    def watching(self) -> bool:
        """True while inotify keeps the change index current (else every refresh scans)."""
        index = self._upper if self._upper is not None else self._index
        return bool(index is not None and index.watching)

    def entry(self, rel: str) -> tuple[str, int] | None:
        """``(kind, size in bytes)`` of indexed entry ``rel`` (as of the last refresh); None if absent."""
        st = self._merged().entries.get(rel) if self._tree is not None else None
        return None if st is None else (file_kind(st.mode), st.size)

    def files(self, rel: str = ".", special: bool = False) -> list[str]:
        """Return the visible files below folder ``rel``: sorted relative POSIX paths.

        Links are listed as files (a link to a folder is not entered).

        Args:
            rel: the folder.
            special: also list FIFOs, sockets and device nodes.

        Raises:
            WorkspaceError: ``rel`` is refused by :meth:`resolve` or is a file.
        """
        self.refresh()
        index = self._merged()
        target = self.canonical(rel, must_exist=True)
        if target != "." and target not in index.dirs:
            raise WorkspaceError(f"{self._normalize(rel)!r} is a file, not a folder")
        if self._files_cache is None or self._files_cache[0] != self._version:
            self._files_cache = (self._version, sorted(index.entries), {})
        every, memo = self._files_cache[1], self._files_cache[2]
        if (target, special) in memo:
            return list(memo[target, special])
        if target != ".":
            prefix = target + "/"
            every = every[bisect.bisect_left(every, prefix):]
            every = every[:bisect.bisect_left(every, prefix[:-1] + chr(ord("/") + 1))]
        entries = index.entries
        out = []
        for p in every:
            mode = entries[p].mode
            if stat.S_ISREG(mode) or (special and not stat.S_ISLNK(mode)) or (
                    stat.S_ISLNK(mode) and self._link_to_file(p)):
                out.append(p)
        memo[target, special] = out
        return list(out)

    def start_ids(self) -> dict[str, str]:
        """Return ``{relative path: git blob id}`` of the visible files and links at the start.

        The ids were computed while copying (no file is read again); after
        :meth:`apply_to_source` the applied versions count as the start. An
        overlay walks the original once (names and ``lstat``) and reads only
        the files whose id :mod:`.idcache` does not hold for their identity; a file
        it finds that the overlay cannot change (its owner changed after the
        original's walk was cached) is logged as a warning, and that cache dropped.
        """
        if self.overlay is not None:
            self._overlay_start_ids()
        return {rel: info[1] for rel, info in self._src_info.items() if rel in self._initial}

    def _overlay_start_ids(self) -> None:
        """Fill the start's blob ids of an overlay (once): from the cache, else read."""
        lower: _LowerStart = self._initial  # type: ignore[assignment]
        todo = [rel for rel in lower if rel not in self._src_info]
        if not todo:
            return
        cache = BlobIdCache(self.source)
        for rel in todo:
            st = lower.stats.get(rel)
            known = cache.get(rel, key_of(st)) if st is not None else None
            if known is not None:
                self._src_info[rel] = (lower[rel], known)
                continue
            info = self._start_info(rel)
            if info is not None and st is not None and info[0] == stamp(st):
                cache.put(rel, key_of(st), info[1])
        cache.save()
        owners: dict[tuple[int, int], str] = {}
        for rel, st in lower.stats.items():
            owners.setdefault((st.st_uid, st.st_gid), rel)
        why = _unmapped(str(self.source), self.run_as, owners)
        if why is not None:  # an owner changed since the walk was cached (a file's chown)
            forget(self.source)
            log.warning("this episode's working copy cannot change every file, the next "
                        "one's will be a copy: %s", why)

    def _link_to_file(self, rel: str) -> bool:
        """Does link ``rel`` lead to a visible regular file inside the working copy?"""
        try:
            return self.kind(self.canonical(rel, must_exist=True)) == "file"
        except WorkspaceError:
            return False

    def cached_bytes(self, rel: str, limit: int) -> bytes:
        """Bytes of indexed regular file ``rel``, from memory while it is unchanged.

        Only for callers that just refreshed (``files()`` does): unchanged
        content is served from a bounded in-memory cache while inotify keeps
        the index current; otherwise the file is read safely.

        Raises:
            WorkspaceError: as :meth:`read_bytes`.
        """
        index = self._merged() if self._tree is not None else None
        st = index.entries.get(rel) if index else None
        hit = self._content.get(rel)
        if st is not None and hit is not None and hit[0] == st and index.watching:
            return hit[1]
        try:
            fd, fst, target = self._tree.open_file(rel)
        except OSError as exc:
            raise self._refusal(rel, exc) from None
        try:
            data = read_fd(fd, min(fst.st_size, limit), limit)
        finally:
            os.close(fd)
        if (target == rel and index is not None and index.watching and len(data) < limit
                and self._content_bytes + len(data) <= CONTENT_CACHE_BYTES):
            old = self._content.pop(rel, None)
            self._content_bytes += len(data) - (len(old[1]) if old else 0)
            self._content[rel] = (stamp(fst), data)
        return data

    # ----------------------------------------------------------------- changes
    def changed_files(self) -> list[str]:
        """Return visible files that differ from the original: sorted relative paths.

        Added, deleted and modified files (content or execute bit) count.
        Files hidden by ``.debugignore`` (and Python / pytest caches),
        FIFOs, sockets and device nodes never count. Cost: the files touched
        since the episode started, each read at most once per change.
        """
        self.refresh()
        touched = self._touched | self._candidates() if self._upper is not None else self._touched
        return sorted(p for p in touched if self._differs(p))

    def _current(self, rel: str) -> Stamp | None:
        if self._upper is not None:  # an overlay: look now (no index of every file)
            found = self._tree_stat(rel)
            st = None if found is None else stamp(found)
        else:
            st = self._index.entries.get(rel)
        if st is None or not (stat.S_ISREG(st.mode) or stat.S_ISLNK(st.mode)):
            return None
        return st

    def _differs(self, rel: str) -> bool:
        cur, init = self._current(rel), self._initial.get(rel)
        if cur is None or init is None:
            return (cur is None) != (init is None)
        if cur == init:
            return False
        cached = self._same.get(rel)
        if cached is not None and cached[0] == cur:
            return cached[1]
        blob = self._blob(self._tree, rel)
        info = self._start_info(rel)
        differs = (blob is None or info is None or blob_id(blob.data) != info[1]
                   or blob.mode != git_mode(init.mode, stat.S_ISLNK(init.mode)))
        self._same[rel] = (cur, differs)
        if differs:
            self._base_blob(rel)  # keep the starting content while the original has it
        return differs

    @staticmethod
    def _blob(tree: SafeTree, rel: str) -> Blob | None:
        """The git blob of file or link ``rel`` in ``tree``, read now; None if missing / special."""
        try:
            with tree.resolve(rel, follow=False) as leaf:
                st = leaf.lstat()
                if st is None or leaf.rel != rel:  # missing, or a link on the way
                    return None
                if stat.S_ISLNK(st.st_mode):
                    return Blob(git_mode(0, True), os.fsencode(os.readlink(leaf.name,
                                                                           dir_fd=leaf.parent)))
                if not stat.S_ISREG(st.st_mode):
                    return None
            fd, fst, _ = tree.open_file(rel)
        except (OSError, ValueError):
            return None
        try:
            return Blob(git_mode(fst.st_mode), read_fd(fd, fst.st_size))
        finally:
            os.close(fd)

    def _base_blob(self, rel: str) -> Blob | None:
        """The starting content of ``rel`` (None if it did not exist).

        Raises:
            KeyError: it existed, but the original changed before it was kept.
        """
        if rel in self._base:
            return self._base[rel]
        if rel not in self._initial:
            return None
        info = self._start_info(rel)
        blob = self._blob(self._src, rel)
        if info is None or blob is None or blob_id(blob.data) != info[1]:
            raise KeyError(rel)
        init = self._initial[rel]
        blob = Blob(git_mode(init.mode, stat.S_ISLNK(init.mode)), blob.data)
        self._base[rel] = blob
        return blob

    def patch(self) -> str:
        """Return the episode's changes as a git patch (``git diff --binary --full-index``).

        The patch turns the original repository, as it was when the episode
        started, into the working copy: ``git apply`` takes it (binary files,
        links, modes, new / deleted files, any file name). A file whose
        starting content is no longer known (the original changed under the
        session before the change was seen) is left out, named in a ``#``
        note before the first diff. Read-only paths (``.debugreadonly``) are
        never in it (nor ignored ones, which are not in the working copy).
        Returns "" when nothing changed.
        """
        parts, lost = [], []
        for rel in self.changed_files():
            if self._match(self._readonly, rel):  # never the agent's to change: left out
                continue
            try:
                old = self._base_blob(rel)
            except KeyError:
                lost.append(rel)
                continue
            parts.append(file_patch(rel, old, self._blob(self._tree, rel)))
        note = "".join(f"# not included (the original changed during the session): {rel!r}\n"
                       for rel in lost)
        return note + "".join(parts)

    def apply_to_source(self) -> list[str]:
        """Write the episode's changes into the original repository.

        Files changed in the original since the episode started are merged
        three-way (``git merge-file`` against the starting content); if any
        cannot be merged, nothing is written. Writes go through folder
        descriptors of the original (temporary file + rename), never through
        links leading out of it.

        Returns:
            The relative paths written or deleted in ``source``.

        Raises:
            ApplyConflictError: files changed outside the session conflict
                (or are binary / links); nothing was written.
            WorkspaceError: a path of the original cannot be written.
        """
        plan, conflicts = [], []
        for rel in self.changed_files():
            ours = self._blob(self._tree, rel)
            theirs = self._blob(self._src, rel)
            try:
                base = self._base_blob(rel)
            except KeyError:
                base = _LOST
            if theirs == base:
                plan.append((rel, ours))
            elif theirs == ours:
                plan.append((rel, _SAME))
            else:
                merged = None
                if (isinstance(base, Blob) and ours is not None and theirs is not None
                        and MODE_LINK not in {base.mode, ours.mode, theirs.mode}):
                    merged = merge3(base.data, ours.data, theirs.data)
                if merged is None:
                    conflicts.append(rel)
                else:
                    plan.append((rel, Blob(ours.mode, merged)))
        if conflicts:
            raise ApplyConflictError(conflicts)
        self._check_replaced_folders(plan)
        blobs = dict(plan)
        for rel in _deletions_first([(rel, blob is None) for rel, blob in plan]):
            if blobs[rel] is not _SAME:
                self._write_source(rel, blobs[rel])
            self._accept(rel)
        return [rel for rel, _ in plan]

    def _check_replaced_folders(self, plan: list[tuple[str, Any]]) -> None:
        """Refuse, before anything is written, a plan that puts a file or link where the
        original has a folder holding more than the plan deletes (ignored files such as
        ``__pycache__``, which the episode never saw: never deleted for it).

        Raises:
            WorkspaceError: naming the folder and one entry that would stay.
        """
        deleted = {rel for rel, blob in plan if blob is None}
        for rel, blob in plan:
            if blob is None or blob is _SAME or self._kind_src(rel) != "folder":
                continue
            fd, _ = self._src.open_dir(rel)
            try:
                for _, _, below, st in walk(fd):
                    if not stat.S_ISDIR(st.st_mode) and f"{rel}/{below}" not in deleted:
                        raise WorkspaceError(
                            f"cannot replace folder {rel!r} of the original repository with a "
                            f"{'link' if blob.mode == MODE_LINK else 'file'}: it holds "
                            f"{rel}/{below!s}, which the episode did not delete; nothing was "
                            "written")
            finally:
                os.close(fd)

    def _write_source(self, rel: str, blob: Blob | None) -> None:
        try:
            _write_blob(self._src, rel, blob)
        except OSError as exc:
            raise WorkspaceError(f"could not write {rel!r} in the original repository: "
                                 f"{exc.strerror or exc}") from None

    def _kind_src(self, rel: str) -> str | None:
        try:
            return self._src.kind(rel, follow=False)
        except OSError:
            return None

    def _accept(self, rel: str) -> None:
        """After apply-back: the working copy's version of ``rel`` is the new start."""
        cur = self._current(rel)
        blob = self._blob(self._tree, rel)
        if cur is None or blob is None:
            self._initial.pop(rel, None)
            self._src_info.pop(rel, None)
            self._base[rel] = None
            return
        self._initial[rel] = cur
        self._src_info[rel] = (cur, blob_id(blob.data))
        self._base[rel] = blob
        self._same.pop(rel, None)

    # ------------------------------------------------------------- grading
    def enforce_readonly(self) -> tuple[list[str], list[str]]:
        """Put the read-only entries back as the original has them; remove what was added.

        Called before every eval: renaming a folder that holds a read-only test
        and writing a forged one in its place, a new ``conftest.py`` in a
        read-only folder, or a cached ``.pyc`` for a read-only module then
        count for nothing. Every access goes through folder descriptors
        without following links; a link or file standing where a read-only
        entry's folder belongs is replaced by the folder.

        Returns:
            ``(restored, removed)``: sorted relative paths put back from the
            original, and entries removed (added under read-only paths, or of
            another kind than the original's).

        Raises:
            WorkspaceError: an entry cannot be put back or removed (e.g.
                folders nested deeper than ``fdtree.MAX_DEPTH``); the message
                says which.
        """
        if not self._readonly_start and not self._readonly.patterns:
            return [], []
        removed: list[str] = []
        readonly_dirs: dict[str, bool] = {"": False}  # folder -> read-only (by it or a parent)
        kept_dirs: set[str] = set()  # read-only folders of the original: walked into

        def enter(rel: str, _st: os.stat_result) -> bool:
            return not readonly_dirs.get(rel, False) or rel in kept_dirs

        try:
            for dfd, name, rel, st in walk(self._tree.fd, enter=enter):
                kind = file_kind(st.st_mode)
                readonly = (readonly_dirs[rel.rpartition("/")[0]]
                            or self._readonly_entry(rel, kind == "folder"))
                if kind == "folder":
                    readonly_dirs[rel] = readonly
                if not readonly:
                    continue
                start = self._readonly_start.get(rel)
                if start is None or start[0] != kind:
                    remove_at(dfd, name)
                    removed.append(rel)
                elif kind == "folder":
                    kept_dirs.add(rel)
            restored = [rel for rel in sorted(self._readonly_start) if self._put_back(rel)]
            removed += self._remove_stale_bytecode()
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename else ""
            raise WorkspaceError(f"{exc.strerror or exc}{where}") from None
        if restored or removed:
            self.refresh()
        return restored, sorted(removed)

    def _put_back(self, rel: str) -> bool:
        """Make read-only entry ``rel`` what it was at the start; True when it changed."""
        kind, mode, ident = self._readonly_start[rel]
        parent, name = posixpath.split(rel)
        fd = self._real_folder(parent)
        try:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                st = None
            have = None if st is None else file_kind(st.st_mode)
            if kind == "folder":
                if have == "folder":
                    return False
                if st is not None:
                    remove_at(fd, name)
                os.mkdir(name, mode | 0o700, dir_fd=fd)
                _hand_over(fd, name)
                return True
            if kind == "link":
                if have == "link" and os.readlink(name, dir_fd=fd) == ident:
                    return False
                if st is not None:
                    remove_at(fd, name)
                os.symlink(ident, name, dir_fd=fd)
                _hand_over(fd, name)
                return True
            if have == "file" and stat.S_IMODE(st.st_mode) == mode:
                if self._readonly_seen.get(rel) == _identity(st):
                    return False
                blob = self._blob(self._tree, rel)
                if blob is not None and blob_id(blob.data) == ident:
                    self._readonly_seen[rel] = _identity(st)
                    return False
            if st is not None and have != "file":
                remove_at(fd, name)
        finally:
            os.close(fd)
        data = self._src.read_bytes(rel, follow=False)
        self._tree.write_bytes(rel, data, mode=mode, mkdirs=False)
        self._tree.chmod(rel, mode)
        self._readonly_seen.pop(rel, None)
        return True

    def _real_folder(self, rel: str) -> int:
        """Open folder ``rel`` of the working copy, each component a real folder.

        A missing component is made; a link, file or special file standing
        there is removed first. Returns the folder's fd (caller closes it).
        """
        fd = os.dup(self._tree.fd)
        try:
            for name in ([] if rel in ("", ".") else rel.split("/")):
                for _ in range(3):
                    try:
                        child = os.open(name, DIR_FLAGS, dir_fd=fd)
                        break
                    except FileNotFoundError:
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(name, 0o755, dir_fd=fd)
                            _hand_over(fd, name)
                    except OSError as exc:
                        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                            raise
                        remove_at(fd, name)
                else:
                    raise OSError(errno.ELOOP, f"{rel!r} keeps changing")
                os.close(fd)
                fd = child
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _remove_stale_bytecode(self) -> list[str]:
        """Remove ``__pycache__/<module>.*.pyc`` of read-only ``.py`` files (a forged
        cache would run instead of the test); returns the paths removed."""
        stems: dict[str, set[str]] = {}
        for rel, (kind, _, _) in self._readonly_start.items():
            if kind == "file" and rel.endswith(".py"):
                folder, name = posixpath.split(rel)
                stems.setdefault(folder, set()).add(name[:-3] + ".")
        removed = []
        for folder, prefixes in stems.items():
            cache = posixpath.join(folder, "__pycache__") if folder else "__pycache__"
            try:
                fd, _ = self._tree.open_dir(cache)
            except OSError:
                continue
            try:
                if self._tree.kind(cache, follow=False) != "folder":
                    continue
                for name, _st in list(scan_fd(fd)):
                    if any(name.startswith(p) for p in prefixes):
                        remove_at(fd, name)
                        removed.append(f"{cache}/{name}")
            finally:
                os.close(fd)
        return removed

    def disk_usage(self) -> int:
        """Disk space the working copy takes now, in bytes (allocated blocks, as ``du``).

        Every entry counts, hidden or not, walked through folder descriptors
        without following links. About 25-80 ms at 10,000 files on a busy
        2-core machine.

        Raises:
            OSError: folders nest deeper than ``fdtree.MAX_DEPTH``.
        """
        fd = self._upper.tree.fd if self._upper is not None else self._tree.fd  # overlay: upper
        total = os.fstat(fd).st_blocks * 512
        for _fd, _name, _rel, st in walk(fd):
            total += st.st_blocks * 512
        return total

    def carry_changes(self, other: Workspace) -> list[str]:
        """Copy ``other``'s changes to writable paths into this (fresh) working copy.

        The grading copy for ``submit``: the original plus the agent's changes,
        restricted to paths that are neither read-only nor ignored, as a
        benchmark harness applies a patch to a clean checkout. Contents are
        read from ``other`` through descriptors (no link followed).

        Returns:
            The relative paths written or deleted, sorted.

        Raises:
            WorkspaceError: a path cannot be written here.
        """
        changed = [rel for rel in other.changed_files()
                   if not (self._match(self._readonly, rel) or self._match(self._ignore, rel))]
        for rel in _deletions_first([(rel, other._current(rel) is None) for rel in changed]):
            blob = other._blob(other._tree, rel)  # one file in memory at a time
            try:
                _write_blob(self._tree, rel, blob)
            except OSError as exc:
                raise WorkspaceError(f"could not carry {rel!r} into the grading copy: "
                                     f"{exc.strerror or exc}") from None
        self.refresh()
        return changed

    def cleanup(self) -> None:
        """Delete the working copy. Idempotent."""
        lookahead = getattr(self, "_lookahead", None)
        if lookahead is not None:  # before the overlay goes: it looks up in the merged view
            lookahead.stop()
        for index in (self._index, self._upper):
            if index is not None:
                index.close()
                if index is self._upper:
                    index.tree.close()
        for tree in (self._tree, self._src):
            if tree is not None:
                tree.close()
        if self.overlay is not None:
            self.overlay.close()
        base = getattr(self, "folder", self.root)
        from dgym_tui.core.fs.overlay import open_work

        open_work(str(base))
        if base.exists():
            remove_tree(str(base))


class _LowerStart:
    """An overlay's starting files: the original's, stamped when first asked (a dict's face).

    ``get`` / ``in`` / ``[]`` look at one path of the original (``lstat``, no
    link followed); iterating walks the whole original once (``start_ids``).
    Paths set or removed (after apply-back) are kept aside.
    """

    def __init__(self, src: SafeTree, visible) -> None:
        self._src, self._visible = src, visible
        self._seen: dict[str, Stamp | None] = {}
        self._all: list[str] | None = None
        #: ``lstat`` of each file and link the walk of the whole original found
        self.stats: dict[str, os.stat_result] = {}

    def copy(self) -> _LowerStart:
        twin = _LowerStart(self._src, self._visible)
        twin._seen, twin._all, twin.stats = dict(self._seen), self._all, self.stats
        return twin

    def get(self, rel: str, default: Stamp | None = None) -> Stamp | None:
        if rel not in self._seen:
            st = None
            try:
                with self._src.resolve(rel, follow=False) as leaf:
                    found = leaf.lstat() if leaf.rel == rel else None
                if found is not None and (stat.S_ISREG(found.st_mode)
                                          or stat.S_ISLNK(found.st_mode)):
                    st = stamp(found)
            except (OSError, ValueError):
                st = None
            self._seen[rel] = st
        hit = self._seen[rel]
        return default if hit is None else hit

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and self.get(rel) is not None

    def __getitem__(self, rel: str) -> Stamp:
        hit = self.get(rel)
        if hit is None:
            raise KeyError(rel)
        return hit

    def __setitem__(self, rel: str, value: Stamp) -> None:
        self._seen[rel] = value
        if self._all is not None and rel not in self._all:
            self._all.append(rel)

    def pop(self, rel: str, default: Any = None) -> Any:
        hit = self.get(rel)
        self._seen[rel] = None
        return default if hit is None else hit

    def below(self, folder: str) -> set[str]:
        """Visible files and links of the original below ``folder`` (a relative path)."""
        out: set[str] = set()
        try:
            fd, target = self._src.open_dir(folder)
        except OSError:
            return out
        if target != folder:
            os.close(fd)
            return out
        prefix = folder + "/"
        try:
            for _dfd, _name, rel, st in walk(fd, enter=lambda r, _st: self._visible(prefix + r,
                                                                                   True)):
                if (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) and \
                        self._visible(prefix + rel, False) and self._visible_parents(prefix + rel):
                    out.add(prefix + rel)
        except OSError:
            pass
        finally:
            os.close(fd)
        return out

    def _visible_parents(self, rel: str) -> bool:
        parts = rel.split("/")
        return all(self._visible("/".join(parts[:i]), True) for i in range(1, len(parts)))

    def __iter__(self):
        if self._all is None:
            self._all = sorted(self.below_root())
        return iter([rel for rel in self._all if rel in self])

    def below_root(self) -> set[str]:
        """Every visible file and link of the original; their ``lstat`` goes to
        :attr:`stats` and answers later questions about them (no look of its own)."""
        out: set[str] = set()
        for _dfd, _name, rel, st in walk(self._src.fd, enter=lambda r, _st: self._visible(r, True)):
            if (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)) and \
                    self._visible(rel, False) and self._visible_parents(rel):
                out.add(rel)
                self.stats[rel] = st
                self._seen.setdefault(rel, stamp(st))
        return out

    def keys(self) -> set[str]:
        return set(self)

    def items(self):
        return [(rel, self[rel]) for rel in self]


def _unmapped(source: str, run_as: tuple[int, int] | None,
              owners: dict[tuple[int, int], str]) -> str | None:
    """Why an overlay of ``source`` could not change every entry of ``owners`` (as in
    :class:`.ignorecache.Scan`; one line naming one entry), or None when it could."""
    from dgym_tui.core.fs.overlay import copyable_ids

    ids = copyable_ids(source, run_as)
    if ids is None:
        return None
    other = sorted((rel, owner) for owner, rel in owners.items() if owner != ids)
    if not other:
        return None
    rel, (uid, gid) = other[0]
    return (f"{rel!r} belongs to {uid}:{gid} (uid:gid), and an overlay working copy can "
            f"change only entries of {ids[0]}:{ids[1]}{_and_more(len(other) - 1)}; "
            f"`chown -R {ids[0]}:{ids[1]}` on the original lets one be used")


def _and_more(count: int) -> str:
    return f" (and {count} other owner{'s' if count > 1 else ''})" if count else ""


def _white_out(src: SafeTree, upper: str, paths: list[str],
               owner: tuple[int, int] | None) -> None:
    """Hide ``paths`` of the original in an overlay's (not yet mounted) upper layer.

    Each gets a whiteout (a character device 0/0); the folders above it are made in
    the upper layer with the original's permissions, owner (``owner`` when set) and
    times, so the merged view shows them as the original has them.
    """
    made: dict[str, os.stat_result] = {}
    root = os.open(upper, DIR_FLAGS)
    try:
        for rel in paths:
            *folders, name = rel.split("/")
            fd = os.dup(root)
            try:
                for i, folder in enumerate(folders):
                    here = "/".join(folders[:i + 1])
                    if here not in made:
                        with src.resolve(here, follow=False) as leaf:
                            st = leaf.lstat()
                        if st is None or not stat.S_ISDIR(st.st_mode):
                            raise OSError(errno.ENOTDIR, f"{here!r} is not a folder")
                        os.mkdir(folder, 0o700, dir_fd=fd)
                        made[here] = st
                    sub = os.open(folder, DIR_FLAGS, dir_fd=fd)
                    os.close(fd)
                    fd = sub
                os.mknod(name, stat.S_IFCHR, 0, dir_fd=fd)
                if owner is not None:
                    os.chown(name, *owner, dir_fd=fd, follow_symlinks=False)
            finally:
                os.close(fd)
        for here in sorted(made, key=lambda r: -r.count("/")):  # deepest first: times stay
            st = made[here]
            fd = os.open(here, DIR_FLAGS, dir_fd=root)
            try:
                if owner is not None:
                    os.fchown(fd, *owner)
                _keep_mode_and_times(fd, st)
            finally:
                os.close(fd)
    finally:
        os.close(root)


def _keep_mode_and_times(fd: int, st: os.stat_result) -> None:
    """Give the file or folder open at ``fd`` the permission bits and times of ``st``."""
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))


def _copy_upper(src: str, dst: str, owner: tuple[int, int] | None) -> None:
    """Copy an overlay's upper layer ``src`` into the empty folder ``dst`` (a fork's).

    Walks through folder descriptors without following links: files (holes
    kept), folders (with their "opaque" mark), links, and whiteouts (character
    devices 0/0) are copied; FIFOs, sockets and other device nodes are left
    out. Every entry is given to ``owner`` (the fork's sandbox uid) when set.
    """
    opaque = ("trusted.overlay.opaque" if os.geteuid() == 0 else "user.overlay.opaque")
    stack = [(os.open(src, DIR_FLAGS), os.open(dst, DIR_FLAGS))]
    if owner is not None:
        os.fchown(stack[0][1], *owner)
    while stack:
        sfd, dfd = stack.pop()
        try:
            for name, st in scan_fd(sfd):
                mode = stat.S_IMODE(st.st_mode)
                if stat.S_ISDIR(st.st_mode):
                    sub = open_subdir(sfd, name)
                    if sub is None:
                        continue
                    os.mkdir(name, 0o700, dir_fd=dfd)
                    sub_dst = os.open(name, DIR_FLAGS, dir_fd=dfd)
                    with contextlib.suppress(OSError):
                        os.setxattr(sub_dst, opaque, os.getxattr(sub, opaque))
                    os.fchmod(sub_dst, mode)
                    stack.append((sub, sub_dst))
                elif stat.S_ISREG(st.st_mode):
                    try:
                        fd_in = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
                                        | os.O_CLOEXEC, dir_fd=sfd)
                    except OSError:
                        continue
                    try:
                        fst = os.fstat(fd_in)
                        if not stat.S_ISREG(fst.st_mode):
                            continue
                        fd_out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                                         | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dfd)
                        try:
                            _copy_fd(fd_in, fd_out, fst.st_size)
                            _keep_mode_and_times(fd_out, fst)
                        finally:
                            os.close(fd_out)
                    finally:
                        os.close(fd_in)
                elif stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(name, dir_fd=sfd), name, dir_fd=dfd)
                elif stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:  # a whiteout: a deletion
                    os.mknod(name, stat.S_IFCHR, 0, dir_fd=dfd)
                else:
                    continue
                if owner is not None:
                    os.chown(name, *owner, dir_fd=dfd, follow_symlinks=False)
        finally:
            os.close(sfd)
            os.close(dfd)


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    """What changes whenever a file's content or metadata does (ctime cannot be set back)."""
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _hand_over(dir_fd: int, name: str) -> None:
    """Give entry ``name`` (just made by us) the owner of its folder, without following it.

    When dgym runs as root the sandbox's commands run as another uid that owns
    the working copy; what the host adds must stay theirs to change.
    """
    owner = os.fstat(dir_fd)
    with contextlib.suppress(PermissionError, NotImplementedError):
        os.chown(name, owner.st_uid, owner.st_gid, dir_fd=dir_fd, follow_symlinks=False)


def _deletions_first(paths: list[tuple[str, bool]]) -> list[str]:
    """The paths of ``(rel, deleted)`` pairs in the order to write them: deletions deepest
    first, then the rest by path, so a folder the episode replaced with a file or link
    is emptied before :func:`_write_blob` puts that file or link in its place."""
    return [rel for rel, deleted in sorted(
        paths, key=lambda item: (0, -item[0].count("/"), item[0]) if item[1] else (1, 0, item[0]))]


def _write_blob(tree: SafeTree, rel: str, blob: Blob | None) -> None:
    """Make ``rel`` in ``tree`` hold ``blob`` (None: delete it), through folder descriptors.
    An empty folder at ``rel`` is replaced.

    Raises:
        OSError: it cannot be written.
    """
    if blob is None:
        tree.unlink(rel)
        return
    if tree.kind(rel, follow=False) == "folder":  # a folder replaced: its files went first
        with tree.resolve(rel, follow=False) as leaf:
            os.rmdir(leaf.name, dir_fd=leaf.parent)
    if blob.mode == MODE_LINK:
        with tree.resolve(rel, follow=False, mkdirs=True) as leaf:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(leaf.name, dir_fd=leaf.parent)
            os.symlink(os.fsdecode(blob.data), leaf.name, dir_fd=leaf.parent)
    else:
        if tree.kind(rel, follow=False) == "link":
            tree.unlink(rel)
        tree.write_bytes(rel, blob.data)
        fd, st, _ = tree.open_file(rel)
        os.close(fd)
        perms = stat.S_IMODE(st.st_mode)
        want = (perms | (perms & 0o444) >> 2) if blob.mode == MODE_EXEC else perms & ~0o111
        if want != perms:
            tree.chmod(rel, want)


_SAME: Any = object()
_LOST: Any = object()
