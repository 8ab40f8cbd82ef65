"""The working copy of a repository for one episode.

The original repository (``source``) is copied into a temporary folder
(``root``, without ``.git``) and never written during the episode. Every path
an action names goes through :meth:`Workspace.resolve`, which refuses paths
that leave the working copy (``..``, absolute paths, symlinks pointing
outside) and paths hidden by ``.debugignore``.

Two gitignore-syntax files at the repository root shape what the agent sees:

- ``.debugignore``: matching files are invisible (listdir, view, grep) and
  cannot be read or written through the workspace.
- ``.debugreadonly``: matching files are visible but cannot be written.

Both files, ``.git``, and the caches Python and pytest write
(``__pycache__/``, ``*.pyc``, ``.pytest_cache/``) are always ignored.
"""

from __future__ import annotations

import difflib
import filecmp
import os
import posixpath
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

import pathspec

IGNORE_FILE = ".debugignore"
READONLY_FILE = ".debugreadonly"

#: Patterns always ignored, whatever the repository's files say.
ALWAYS_IGNORED = (".git/", IGNORE_FILE, READONLY_FILE, "__pycache__/", "*.pyc",
                  ".pytest_cache/")

#: Bytes read to decide whether a file is binary (a NUL byte in them means binary).
BINARY_SNIFF_BYTES = 8192

_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+")


class WorkspaceError(Exception):
    """A path is refused (outside the working copy, hidden, read-only, binary, ...).

    The message is one line the agent can act on.
    """


def _read_patterns(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return []


def is_binary(data: bytes) -> bool:
    """Return True when ``data`` (the start of a file) looks binary: NUL byte or not UTF-8."""
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A multi-byte character cut at the end of the sample is still text.
        return exc.start < len(data) - 4
    return False


class Workspace:
    """A temporary working copy of ``source`` with ignore / read-only rules.

    The copy leaves out ``.git``, ``__pycache__`` and ``.pytest_cache`` folders.

    Args:
        source: path of the original repository (a folder); never written
            except by :meth:`apply_to_source`.
        ignore: extra gitignore-style patterns hiding files from the agent.
        readonly: extra gitignore-style patterns making files read-only.

    Attributes:
        source: absolute ``Path`` of the original repository.
        root: absolute ``Path`` of the working copy (a fresh temporary folder).

    Raises:
        WorkspaceError: ``source`` is not an existing folder.
    """

    def __init__(self, source: str | os.PathLike, ignore: Iterable[str] = (),
                 readonly: Iterable[str] = ()) -> None:
        self.source = Path(source).resolve()
        if not self.source.is_dir():
            raise WorkspaceError(f"repository folder {str(source)!r} does not exist; "
                                 "give the path of a folder")
        self._ignore = pathspec.GitIgnoreSpec.from_lines(
            [*ALWAYS_IGNORED, *_read_patterns(self.source / IGNORE_FILE), *ignore])
        self._readonly = pathspec.GitIgnoreSpec.from_lines(
            [*_read_patterns(self.source / READONLY_FILE), *readonly])
        self.root = Path(tempfile.mkdtemp(prefix="dgym-ws-")).resolve()
        try:
            shutil.copytree(self.source, self.root, symlinks=True, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns(".git", "__pycache__", ".pytest_cache"))
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise
        self._real_root = os.path.realpath(self.root)
        # Stat of every file right after the copy: a file whose stat is unchanged
        # was not written, so changed_files() need not read it.
        self._initial = self.stat_snapshot()

    # ------------------------------------------------------------------ rules
    @staticmethod
    def _normalize(rel: str) -> str:
        """Return ``rel`` as a normalized POSIX path relative to the root, or raise."""
        if not isinstance(rel, str):
            raise WorkspaceError(f"a path must be a string, got {type(rel).__name__}")
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
        return (self.root / rel).is_dir() and spec.match_file(rel + "/")

    def is_ignored(self, rel: str) -> bool:
        """Return True when ``rel`` (a relative POSIX path) is hidden from the agent."""
        return self._match(self._ignore, self._normalize(rel))

    def is_readonly(self, rel: str) -> bool:
        """Return True when ``rel`` (a relative POSIX path) may not be written by the agent."""
        return self._match(self._readonly, self._normalize(rel))

    def relative(self, path: str | os.PathLike) -> str | None:
        """Map a host path to its workspace-relative POSIX path; None when outside the root."""
        real = os.path.realpath(path)
        if real == self._real_root:
            return "."
        if real.startswith(self._real_root + os.sep):
            return Path(real).relative_to(self._real_root).as_posix()
        return None

    def resolve(self, rel: str, must_exist: bool = False) -> Path:
        """Return the host path of ``rel`` inside the working copy.

        Args:
            rel: path relative to the repository root (POSIX or OS separators).
            must_exist: also refuse paths that do not exist.

        Returns:
            The absolute host ``Path`` (symlinks resolved).

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
        real = os.path.realpath(self.root / norm)
        target = self.relative(real)
        if target is None:
            raise WorkspaceError(f"path {rel!r} leads outside the repository (through a "
                                 "symbolic link); only files inside it can be used")
        if target != norm and self._match(self._ignore, target):
            raise hidden
        if must_exist and not os.path.exists(real):
            raise hidden
        return Path(real)

    # ------------------------------------------------------------- file access
    def read_text(self, rel: str) -> str:
        """Return the text of file ``rel`` (UTF-8, invalid bytes replaced).

        Raises:
            WorkspaceError: the path is refused by :meth:`resolve`, is a folder,
                or is a binary file.
        """
        path = self.resolve(rel, must_exist=True)
        if path.is_dir():
            raise WorkspaceError(f"{self._normalize(rel)!r} is a folder; use listdir to see "
                                 "its content")
        data = path.read_bytes()
        if is_binary(data[:BINARY_SNIFF_BYTES]):
            raise WorkspaceError(f"{self._normalize(rel)!r} is a binary file; only text files "
                                 "can be shown")
        return data.decode("utf-8", "replace")

    def write_text(self, rel: str, text: str) -> Path:
        """Write ``text`` (UTF-8) to file ``rel``, creating parent folders as needed.

        Returns:
            The host path written.

        Raises:
            WorkspaceError: the path is refused by :meth:`resolve`, is a folder,
                or is read-only (``.debugreadonly`` or ``readonly=``).
        """
        norm = self._normalize(rel)
        if self._match(self._ignore, norm):
            raise WorkspaceError(f"{norm!r} is hidden by .debugignore and cannot be "
                                 "written; choose another path")
        path = self.resolve(norm)
        target = self.relative(path) or norm
        if self._match(self._readonly, norm) or self._match(self._readonly, target):
            raise WorkspaceError(f"{norm!r} is read-only (.debugreadonly); change other "
                                 "files instead")
        if path.is_dir():
            raise WorkspaceError(f"{norm!r} is a folder; give the path of a file")
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        return path

    def children(self, rel: str = ".") -> list[tuple[str, bool]]:
        """Return the visible entries directly inside folder ``rel``.

        Returns:
            Sorted ``(relative POSIX path, is_folder)`` pairs. Hidden entries
            and symlinks pointing outside the working copy are left out.

        Raises:
            WorkspaceError: ``rel`` is refused by :meth:`resolve` or is a file.
        """
        folder = self.resolve(rel, must_exist=True)
        if not folder.is_dir():
            raise WorkspaceError(f"{self._normalize(rel)!r} is a file, not a folder; use "
                                 "view to read it")
        return self._children(folder)

    def _entries(self, folder: str) -> list[tuple[str, os.DirEntry]]:
        """Visible ``(relative path, DirEntry)`` pairs directly inside host folder ``folder``."""
        base = self.relative(folder)
        prefix = "" if base == "." else base + "/"
        match = self._ignore.match_file
        out = []
        with os.scandir(folder) as entries:
            for entry in entries:
                child = prefix + entry.name
                is_dir = entry.is_dir()
                # The folder itself was checked already: only the entry's own name matters.
                if match(child) or (is_dir and match(child + "/")):
                    continue
                if entry.is_symlink():
                    target = self.relative(entry.path)
                    if target is None or self._match(self._ignore, target):
                        continue
                out.append((child, entry))
        return out

    def _children(self, folder: Path | str) -> list[tuple[str, bool]]:
        return sorted((child, entry.is_dir()) for child, entry in self._entries(str(folder)))

    def _walk_files(self, start: str):
        """Yield ``(relative path, DirEntry)`` of every visible file below host folder ``start``.

        Symlinked folders inside the working copy are followed once.
        """
        stack, seen = [start], {start}
        while stack:
            for child, entry in self._entries(stack.pop()):
                if not entry.is_dir():
                    yield child, entry
                    continue
                real = os.path.realpath(entry.path) if entry.is_symlink() else entry.path
                if real not in seen:
                    seen.add(real)
                    stack.append(real)

    def _start_folder(self, rel: str) -> str:
        start = self.resolve(rel, must_exist=True)
        if not start.is_dir():
            raise WorkspaceError(f"{self._normalize(rel)!r} is a file, not a folder")
        return str(start)

    def files(self, rel: str = ".") -> list[str]:
        """Return the visible files below folder ``rel``: sorted relative POSIX paths.

        Symlinked folders inside the working copy are followed once.

        Raises:
            WorkspaceError: ``rel`` is refused by :meth:`resolve` or is a file.
        """
        return sorted(child for child, _ in self._walk_files(self._start_folder(rel)))

    def stat_snapshot(self) -> dict[str, tuple[int, int]]:
        """Return ``{relative path: (mtime_ns, size)}`` of every visible file.

        Cheap (no file is read); two snapshots differ when a file was written,
        created or deleted in between.
        """
        snap = {}
        for child, entry in self._walk_files(str(self.root)):
            try:
                st = entry.stat()
            except OSError:
                continue
            snap[child] = (st.st_mtime_ns, st.st_size)
        return snap

    # ----------------------------------------------------------------- changes
    def changed_files(self, snapshot: dict[str, tuple[int, int]] | None = None) -> list[str]:
        """Return visible files that differ from the original: sorted relative paths.

        Added, deleted and modified files count. Files hidden by
        ``.debugignore`` (and Python / pytest caches) never count.

        Args:
            snapshot: a fresh :meth:`stat_snapshot` to reuse (saves a walk).
        """
        now = self.stat_snapshot() if snapshot is None else snapshot
        candidates = set(self._initial) ^ set(now)
        candidates.update(p for p, st in now.items() if self._initial.get(p, st) != st)
        return sorted(p for p in candidates if self._differs(p))

    def _differs(self, path: str) -> bool:
        src, dst = self.source / path, self.root / path
        if src.is_file() != dst.is_file():
            return True
        if not src.is_file():
            return False
        return not filecmp.cmp(src, dst, shallow=False)

    def patch(self) -> str:
        """Return a git-style unified diff (``a/`` ``b/`` prefixes) of the changes.

        The diff turns the original repository into the working copy and is
        accepted by ``git apply`` / ``patch -p1``. Binary files get a
        ``Binary files ... differ`` line. Returns "" when nothing changed.
        """
        return "".join(_file_diff(self.source, self.root, p) for p in self.changed_files())

    def apply_to_source(self) -> list[str]:
        """Write the changed files back into the original repository.

        Returns:
            The relative paths written or deleted in ``source``.
        """
        changed = self.changed_files()
        for rel in changed:
            src, dst = self.root / rel, self.source / rel
            if src.is_file():
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src, dst)
            elif dst.is_file() or dst.is_symlink():
                dst.unlink()
        return changed

    def cleanup(self) -> None:
        """Delete the working copy. Idempotent."""
        root = getattr(self, "root", None)
        if root is not None and root.exists():
            def _retry(func, path, _exc):
                # A read-only folder (made by a test, say) blocks deletion: open it up.
                os.chmod(os.path.dirname(path), stat.S_IRWXU)
                func(path)
            try:
                if sys.version_info >= (3, 12):
                    shutil.rmtree(root, onexc=_retry)
                else:
                    shutil.rmtree(root, onerror=_retry)
            except OSError:
                shutil.rmtree(root, ignore_errors=True)


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines at "\\n" only, keeping the line ends (as git and pdb count)."""
    return _LINE_RE.findall(text)


def text_diff(rel: str, old: str | None, new: str | None) -> str:
    """Return the unified diff body turning ``old`` into ``new`` for file ``rel``.

    ``None`` stands for a missing file (``/dev/null``). Headers use git's
    ``a/`` ``b/`` prefixes; a last line without newline gets git's
    ``\\ No newline at end of file`` marker. Returns "" when the texts are equal.
    """
    old_name = f"a/{rel}" if old is not None else "/dev/null"
    new_name = f"b/{rel}" if new is not None else "/dev/null"
    out = []
    for line in difflib.unified_diff(split_lines(old or ""), split_lines(new or ""),
                                     old_name, new_name):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def _file_diff(old_root: Path, new_root: Path, rel: str) -> str:
    """Return the git-style diff of one file between two folders."""
    old, new = old_root / rel, new_root / rel
    old_data = old.read_bytes() if old.is_file() else None
    new_data = new.read_bytes() if new.is_file() else None
    head = [f"diff --git a/{rel} b/{rel}\n"]
    if old_data is None:
        head.append("new file mode 100644\n")
    elif new_data is None:
        head.append("deleted file mode 100644\n")
    if is_binary((old_data or b"")[:BINARY_SNIFF_BYTES]) or is_binary(
            (new_data or b"")[:BINARY_SNIFF_BYTES]):
        old_name = f"a/{rel}" if old_data is not None else "/dev/null"
        new_name = f"b/{rel}" if new_data is not None else "/dev/null"
        return "".join(head) + f"Binary files {old_name} and {new_name} differ\n"

    def text(data: bytes | None) -> str | None:
        return None if data is None else data.decode("utf-8", "replace")

    return "".join(head) + text_diff(rel, text(old_data), text(new_data))
