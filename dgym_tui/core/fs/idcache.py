"""Git blob ids of an original repository's files, kept between sessions by file identity;
and the cache files of ours that remember things about an original (:class:`CacheFile`).

A session's trajectory header records the blob id of every visible file at the
start (replay shows an unchanged file from the original only while its id is
the same). An overlay working copy reads nothing at reset, so those ids would
cost a read of every file at each session's start; this cache keeps them per
original (a JSON file in the user's cache folder, ``XDG_CACHE_HOME`` or
``~/.cache``, ``dgym-tui/start-ids/``), keyed by what changes whenever a
file's content may have: device, inode, size, modification and change time
(the change time cannot be set back). A file changed less than
:data:`RACY_SECONDS` before the cache is written is not kept (it may change
again within the same clock tick), as git does for its index. Only the host
reads and writes the cache; no sandbox is shown it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

#: Files changed this recently (seconds) when the cache is saved are not kept.
RACY_SECONDS = 2.0
#: Cache files kept (one per original repository); the least recently written go first.
MAX_FILES = 64
#: Entries of one cache file (more are not kept).
MAX_ENTRIES = 200_000

Key = tuple[int, int, int, int, int]


def key_of(st: os.stat_result) -> Key:
    """The identity of a file's version: ``(device, inode, size, mtime ns, ctime ns)``."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def is_racy(key: Key) -> bool:
    """Whether the version ``key`` changed too recently to be remembered (it may change
    again within the same clock tick without its times moving)."""
    return time.time_ns() - key[4] < RACY_SECONDS * 1e9


def cache_folder(kind: str = "start-ids") -> Path:
    """The folder of the cache files of ``kind`` (not made here)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dgym-tui" / kind


class CacheFile:
    """The JSON file of one ``kind`` of cache for one original repository (host side only).

    Args:
        kind: the cache's folder name under :func:`cache_folder`.
        source: the original's absolute path (names the file).
    """

    def __init__(self, kind: str, source: Path) -> None:
        name = hashlib.sha256(os.fsencode(source)).hexdigest()[:32] + ".json"
        self.path = cache_folder(kind) / name

    def load(self) -> object:
        """The file's JSON value, or None when it is missing or cannot be read."""
        with contextlib.suppress(OSError, ValueError):
            with open(self.path, encoding="utf-8") as f:
                return json.load(f)
        return None

    def save(self, data: object) -> None:
        """Write ``data`` (temporary file + rename); drop the least recently written files
        of this kind past :data:`MAX_FILES`. Never raises."""
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(data, f, separators=(",", ":"))
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime)
            for old in files[:-MAX_FILES]:
                old.unlink()
        except OSError:
            pass


class BlobIdCache:
    """The blob ids known for the files of one original repository.

    Args:
        source: the original's absolute path (names the cache file).

    A cache file that cannot be read counts as empty; one that cannot be
    written is left as it was: the cache only saves reads, never changes an id.
    """

    def __init__(self, source: Path) -> None:
        self._file = CacheFile("start-ids", source)
        self.path = self._file.path
        data = self._file.load()
        self._entries: dict[str, list] = data if isinstance(data, dict) else {}
        self._added = False

    def get(self, rel: str, key: Key) -> str | None:
        """The blob id of ``rel`` when its identity is still ``key``; else None."""
        hit = self._entries.get(rel)
        if isinstance(hit, list) and len(hit) == 6 and tuple(hit[:5]) == key:
            return hit[5] if isinstance(hit[5], str) else None
        return None

    def put(self, rel: str, key: Key, blob: str) -> None:
        """Remember ``blob`` as the id of ``rel`` at identity ``key`` (unless changed just now)."""
        if is_racy(key) or len(self._entries) >= MAX_ENTRIES:
            return
        self._entries[rel] = [*key, blob]
        self._added = True

    def save(self) -> None:
        """Write the cache file (temporary file + rename) when something was added; drop
        the least recently written files past :data:`MAX_FILES`. Never raises."""
        if self._added:
            self._file.save(self._entries)
            self._added = False
