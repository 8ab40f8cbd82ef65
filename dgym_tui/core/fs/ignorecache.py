"""The entries of an original repository an overlay must white out, kept between resets.

An overlay working copy hides, in its upper layer, every entry of the original
the sandbox must not see (``.git`` folders, the rule files, what
``.debugignore`` hides). Finding them is one walk of the names of the whole
original: the only host-side part of a reset whose cost grows with the
repository (at 10,000 files in 200 folders, 9 ms for the names alone and 35 ms
with the owners below, load 1.9). This module does that walk
and keeps its answer per original (an :class:`.idcache.CacheFile`,
``ignored-names/``), with the identity of every folder it listed (device,
inode, size, modification and change time: a folder's change time moves
whenever an entry is added to it, removed, renamed or replaced, or its
permissions change, and it cannot be set back) and a digest of the ignore
rules. A later reset checks those folders, one ``lstat`` each (0.2 ms for
those 200 folders), and walks again on any difference.

The same walk notes who owns the entries it shows (one ``lstat`` each, the
first walk only): an overlay can copy up, that is change, only the files of the
ids its user namespace maps (:func:`.overlay.copyable_ids`). An owner is kept
with the folders' identities: ``chown`` of a folder moves its change time; of a
file alone, it does not, and the cached owners miss it until a folder changes.

The answer is not kept when a folder could not be listed (its content was not
seen) or changed less than :data:`.idcache.RACY_SECONDS` before the save (it
may change again within the same clock tick without its times moving). Only
the host reads and writes the cache: it lives in the user's cache folder, which
no sandbox is shown, and a file that is malformed or names a path outside a
listed folder counts as missing.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from dgym_tui.core.fdtree import open_subdir
from dgym_tui.core.fs.idcache import CacheFile, Key, is_racy, key_of

#: Bumped when what the walk finds changes for the same rules.
VERSION = 2
#: Folders of one original past which nothing is kept.
MAX_FOLDERS = 200_000
#: Names the walk neither reports nor enters: the tests' caches (they write them).
CACHES = ("__pycache__", ".pytest_cache")


class Scan(NamedTuple):
    """What a walk of an original's names found.

    Attributes:
        found: sorted relative paths of the topmost hidden entries.
        owners: ``{(uid, gid): relative path of one entry they own}`` for every
            entry the walk shows (not hidden, not a cache), the root excluded.
    """

    found: list[str]
    owners: dict[tuple[int, int], str]


def walk_ignored(fd: int, hidden: Callable[[str, bool], bool]
                 ) -> tuple[list[str], dict[str, Key] | None, dict[tuple[int, int], str]]:
    """The topmost entries below folder ``fd`` that ``hidden(rel, is_dir)`` names.

    ``d_type`` tells folders; an entry that is shown is ``lstat``-ed for its
    owner. Folders are opened one level at a time without following links;
    caches (``__pycache__``, ``.pytest_cache``, ``*.pyc``) are skipped.

    Args:
        fd: an open folder (not closed here).
        hidden: ``hidden(relative path, is a folder) -> bool``.

    Returns:
        ``(sorted relative paths, {folder's relative path ("" for the root): its
        identity when listed}, owners as in :class:`Scan`)``; the identities are
        None when a folder could not be opened or listed.
    """
    found: list[str] = []
    owners: dict[tuple[int, int], str] = {}
    folders: dict[str, Key] | None = {}
    stack = [(os.dup(fd), "")]
    while stack:
        fd, prefix = stack.pop()
        try:
            if folders is not None:  # before the listing: a later change moves its times
                folders[prefix[:-1]] = key_of(os.fstat(fd))
            with os.scandir(fd) as entries:
                for entry in entries:
                    name = entry.name
                    if name in CACHES or name.endswith(".pyc"):
                        continue
                    is_dir = entry.is_dir(follow_symlinks=False)
                    rel = prefix + name
                    if hidden(rel, is_dir):
                        found.append(rel)
                        continue
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:  # gone meanwhile: keep listing, keep nothing
                        folders = None
                    else:
                        owners.setdefault((st.st_uid, st.st_gid), rel)
                    if is_dir:
                        sub = open_subdir(fd, name)
                        if sub is None:
                            folders = None
                        else:
                            stack.append((sub, rel + "/"))
        except OSError:
            folders = None
        finally:
            os.close(fd)
    return sorted(found), folders, owners


def _rules_digest(rules: Sequence[str], user_rules: bool) -> str:
    return hashlib.sha256(json.dumps([VERSION, user_rules, list(rules)]).encode()).hexdigest()


def _is_relative(rel: object) -> bool:
    return (isinstance(rel, str) and "\0" not in rel
            and all(part not in ("", ".", "..") for part in rel.split("/")))


def _owners(data: object) -> dict[tuple[int, int], str] | None:
    """The owners of a cache file's ``[[uid, gid, path], ...]``, or None when malformed."""
    if not isinstance(data, list):
        return None
    owners: dict[tuple[int, int], str] = {}
    for item in data:
        if not (isinstance(item, list) and len(item) == 3 and _is_relative(item[2])
                and all(type(n) is int and n >= 0 for n in item[:2])):
            return None
        owners[item[0], item[1]] = item[2]
    return owners


def _cached(data: object, digest: str, fd: int) -> Scan | None:
    """The cached answer in ``data`` when it is well formed, made under the same rules,
    and every folder it listed is unchanged; else None."""
    if not isinstance(data, dict) or data.get("rules") != digest:
        return None
    found, folders = data.get("found"), data.get("folders")
    owners = _owners(data.get("owners"))
    if not isinstance(found, list) or not isinstance(folders, dict) or "" not in folders \
            or owners is None:
        return None
    if not all(_is_relative(rel) and posixpath.dirname(rel) in folders for rel in found):
        return None
    for rel, key in folders.items():
        if rel and not _is_relative(rel):
            return None
        try:
            st = os.stat(rel or ".", dir_fd=fd, follow_symlinks=False)
        except (OSError, ValueError, TypeError):
            return None
        if not stat.S_ISDIR(st.st_mode) or list(key_of(st)) != key:
            return None
    return Scan(list(found), owners)


def ignored_entries(source: Path, fd: int, rules: Sequence[str], user_rules: bool,
                    hidden: Callable[[str, bool], bool]) -> Scan:
    """:func:`walk_ignored`'s paths and owners for the original ``source`` (open as folder
    ``fd``), from the cache when no folder it listed changed since, else walked (and cached).

    Args:
        source: the original's absolute path (names the cache file).
        fd: the original, an open folder (not closed here).
        rules: every ignore pattern ``hidden`` applies, in order (part of the cache's key).
        user_rules: whether ``hidden`` applies rules besides the fixed ones (key too).
        hidden: as for :func:`walk_ignored`; a function of ``rules`` only.

    Returns:
        The :class:`Scan`.
    """
    cache = CacheFile("ignored-names", source)
    digest = _rules_digest(rules, user_rules)
    hit = _cached(cache.load(), digest, fd)
    if hit is not None:
        return hit
    found, folders, owners = walk_ignored(fd, hidden)
    if folders is not None and len(folders) <= MAX_FOLDERS and \
            not any(is_racy(key) for key in folders.values()):
        cache.save({"rules": digest, "found": found,
                     "folders": {rel: list(key) for rel, key in folders.items()},
                     "owners": [[*ids, rel] for ids, rel in sorted(owners.items())]})
    return Scan(found, owners)


def forget(source: Path) -> None:
    """Drop what is kept for the original ``source``: its next working copy walks it again
    (e.g. after an owner the cache missed showed up, see the module's notes). Never raises."""
    CacheFile("ignored-names", source).save(None)
