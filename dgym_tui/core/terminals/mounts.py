"""Which paths of the working copy a sandboxed terminal mounts read-only or masks.

Shared by the ``bwrap`` and ``docker`` terminals: ``.debugreadonly`` paths are
mounted read-only over the working copy, ``.debugignore`` paths are masked
(an empty read-only file or an empty folder over them), so code run in the
sandbox (pdb ``!``, the tests) can neither change the first nor read the second.
"""

from __future__ import annotations

import os
import posixpath

from .base import TerminalError

#: Names never masked: caches Python and pytest write during the episode.
CACHE_NAMES = frozenset({"__pycache__", ".pytest_cache", ".git"})


def normalized(rels) -> list[str]:
    """Workspace-relative paths normalised without touching the disk (sorted, distinct).

    Raises:
        TerminalError: a path is absolute or leads outside the working copy.
    """
    out: set[str] = set()
    for rel in rels:
        norm = posixpath.normpath(str(rel).replace(os.sep, "/"))
        if norm in (".", "..") or posixpath.isabs(norm) or norm.startswith("../"):
            raise TerminalError(f"path {rel!r} must be relative to the working copy")
        out.add(norm)
    return sorted(out)


def inside_paths(host_root: str, rels) -> list[str]:
    """Normalise workspace-relative paths to mount; keep the ones inside the working copy.

    Missing paths are skipped. A symbolic link is replaced by its target when
    the target lies inside the working copy, and skipped otherwise (a mount
    would follow it on the host and expose what it points to).

    Args:
        host_root: host path of the working copy (real path).
        rels: relative paths (POSIX or OS separators).

    Returns:
        Sorted, distinct relative POSIX paths.

    Raises:
        TerminalError: a path is absolute or leads outside the working copy.
    """
    out: set[str] = set()
    for norm in normalized(rels):
        path = os.path.join(host_root, norm)
        if not os.path.lexists(path):
            continue
        real = os.path.realpath(path)
        if os.path.commonpath([real, host_root]) != host_root or real == host_root:
            continue
        out.add(os.path.relpath(real, host_root).replace(os.sep, "/"))
    return sorted(out)


def ignored_paths(workspace) -> list[str]:
    """The topmost paths of the working copy hidden by ``.debugignore`` (files and folders).

    Caches (``__pycache__``, ``.pytest_cache``, ``*.pyc``) are left out: the
    tests write them. A folder that is ignored is listed, not its content.

    Args:
        workspace: a :class:`dgym_tui.core.fs.workspace.Workspace`.

    Returns:
        Sorted relative POSIX paths that exist now.
    """
    root = str(workspace.root)
    found = []
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root).replace(os.sep, "/")
        keep = []
        for name in sorted(dirs):
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            if name in CACHE_NAMES:
                continue
            if workspace.is_ignored(rel):
                found.append(rel)
            else:
                keep.append(name)
        dirs[:] = keep
        for name in files:
            rel = name if rel_folder == "." else f"{rel_folder}/{name}"
            if not name.endswith(".pyc") and workspace.is_ignored(rel):
                found.append(rel)
    return sorted(found)
