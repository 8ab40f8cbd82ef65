"""The working copy's rules for names: the files that hide or protect paths, what is always
hidden or never copied, and how a file is judged binary.

Their own small module: :mod:`dgym_tui.episode.first_file` lists and reads the original
with them before an app's first frame, without the working copy's module (its change
index, patches, blob ids and their hashing are the reset's). :mod:`.workspace` exports
them too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

IGNORE_FILE = ".debugignore"
READONLY_FILE = ".debugreadonly"

#: Patterns always ignored, whatever the repository's files say.
ALWAYS_IGNORED = (".git/", IGNORE_FILE, READONLY_FILE, "__pycache__/", "*.pyc",
                  ".pytest_cache/")
#: Names never copied into the working copy.
NOT_COPIED = frozenset({".git", "__pycache__", ".pytest_cache"})

#: Bytes read to decide whether a file is binary (a NUL byte in them means binary).
BINARY_SNIFF_BYTES = 8192


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


def pattern_names(spec: pathspec.PathSpec, cache: dict[tuple[str, bool], bool], rel: str,
                  is_dir: bool) -> bool:
    """Does a pattern of ``spec`` name entry ``rel`` itself (a folder also as ``rel/``)?
    Answers are kept in ``cache`` (at most 200,000)."""
    key = (rel, is_dir)
    hit = cache.get(key)
    if hit is None:
        hit = bool(spec.match_file(rel) or (is_dir and spec.match_file(rel + "/")))
        if len(cache) < 200_000:
            cache[key] = hit
    return hit
