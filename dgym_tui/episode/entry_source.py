"""The entrypoint's script, read from the original repository before the working copy exists.

A live episode's working copy (and so the file a front end shows first) exists only once
the reset has made it, a few hundred milliseconds after the app's first frame. When the
entrypoint runs a script (``python run_tests.py``), :func:`read_entry_script` reads that
script from the original repository, so that the app can show it in its first frame and
replace it with the working copy's view when the copy is ready
(:meth:`~dgym_tui.episode.session.Session.entry_script_preview`). The original is the
user's own folder, which the sandbox never writes; its bytes are still read below the
folder's descriptor (:class:`~dgym_tui.core.fs.safefs.SafeTree`: no link followed) and are
data to show, never markup.

Nothing is read when the working copy might hide the script or show other text
for it: the script is hidden by the repository's ``.debugignore`` or the episode's
``ignore`` patterns (matched as the working copy matches them: gitignore rules, a folder's
pattern hides what is in it), is below a folder the copy never holds or a link, is a link,
is not a regular file, is binary, or is larger than :data:`MAX_BYTES`; or the
``.debugignore`` itself is a link or larger than :data:`MAX_BYTES`.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence

from dgym_tui.core.fs.safefs import SafeTree
from dgym_tui.core.fs.workspace import (
    ALWAYS_IGNORED,
    BINARY_SNIFF_BYTES,
    IGNORE_FILE,
    NOT_COPIED,
    is_binary,
)

#: Largest script (and ``.debugignore``), in bytes, read.
MAX_BYTES = 512 * 1024
#: ``NAME=value`` words before the command.
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
#: The interpreter's name: python, python3, python3.11.
_INTERPRETER = re.compile(r"python[0-9.]*")
#: Interpreter options whose value is the next word.
_OPTION_WITH_VALUE = frozenset({"-W", "-X"})


def entry_script(entrypoint: str) -> str | None:
    """The script a ``python [OPTIONS] SCRIPT.py [ARGS]`` entrypoint runs.

    Args:
        entrypoint: the episode's shell command.

    Returns:
        The script's normalized relative POSIX path, or None for any other command
        (``python -m ...``, ``pytest``, a shell pipeline, an absolute path or one that
        leaves the repository, a file not ending in ``.py``, an unparsable line).
    """
    try:
        words = shlex.split(entrypoint)
    except ValueError:
        return None
    while words and _ASSIGNMENT.match(words[0]):
        words = words[1:]
    if not words or not _INTERPRETER.fullmatch(posixpath.basename(words[0])):
        return None
    rest = iter(words[1:])
    for word in rest:
        if word in ("-m", "-c", "-"):
            return None
        if word in _OPTION_WITH_VALUE:
            next(rest, None)
        elif not word.startswith("-"):
            path = posixpath.normpath(word)
            if (not path.endswith(".py") or path.startswith(("/", "../")) or path == ".."
                    or NOT_COPIED.intersection(path.split("/"))):
                return None
            return path
    return None


def read_entry_script(root: str, entrypoint: str,
                      ignore: Sequence[str] | None) -> tuple[str, str] | None:
    """The text of the entrypoint's script in the original repository, when the working
    copy will show the same text for it (see the module's docstring).

    Args:
        root: the original repository's folder (host path).
        entrypoint: the episode's shell command.
        ignore: the episode's extra ``ignore`` patterns (None when unknown: nothing is read).

    Returns:
        ``(relative path, text)`` of the script (UTF-8, invalid bytes replaced, as the
        working copy reads it), or None. Never raises for a missing, unreadable or
        refused file.
    """
    rel = entry_script(entrypoint)
    if rel is None or ignore is None:
        return None
    try:
        tree = SafeTree(root)
    except OSError:
        return None
    try:
        parts = rel.split("/")
        for depth in range(1, len(parts)):  # the copy does not enter a link to a folder
            if tree.kind("/".join(parts[:depth]), follow=False) != "folder":
                return None
        patterns = list(ignore)
        if tree.kind(IGNORE_FILE, follow=False) is not None:
            rules = tree.read_bytes(IGNORE_FILE, limit=MAX_BYTES + 1, follow=False)
            if len(rules) > MAX_BYTES:
                return None
            patterns += rules.decode("utf-8", "replace").splitlines()
        if patterns and _hidden(rel, [*ALWAYS_IGNORED, *patterns]):
            return None
        data = tree.read_bytes(rel, limit=MAX_BYTES + 1, follow=False)
    except OSError:  # missing, a link, a folder, a FIFO, unreadable
        return None
    finally:
        tree.close()
    if len(data) > MAX_BYTES or is_binary(data[:BINARY_SNIFF_BYTES]):
        return None
    return rel, data.decode("utf-8", "replace")


def _hidden(rel: str, patterns: list[str]) -> bool:
    """Do gitignore ``patterns`` hide file ``rel`` (itself, or a folder it is in)?"""
    import pathspec  # only for a repository with rules: ~40 ms to import

    spec = pathspec.GitIgnoreSpec.from_lines(patterns)
    parts = rel.split("/")
    folders = ("/".join(parts[:depth]) + "/" for depth in range(1, len(parts)))
    return spec.match_file(rel) or any(spec.match_file(folder) for folder in folders)
