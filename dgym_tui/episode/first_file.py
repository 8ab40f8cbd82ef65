"""The file a front end shows first, read from the original repository before the working
copy exists.

A live episode's working copy (and so the file the app shows first: the first source file
of its visible files) exists only once the reset has made it, a few hundred milliseconds
after the app's first frame. :func:`read_first_file` lists the original repository's
visible files (the working copy's rules: ``.debugignore``, the episode's ``ignore``
patterns, the folders never copied), picks one as the app would pick it from the working
copy, and reads it, so that the first frame can show it; the working copy's view replaces
it when the copy is ready (:meth:`~dgym_tui.episode.session.Session.first_file_preview`).
The original is the user's own folder, which the sandbox never writes; it is still walked
and read below the folder's descriptor (:mod:`dgym_tui.core.fs.safefs`: no link followed)
and its text is data to show, never markup.

Nothing is read for a repository of more than :data:`MAX_ENTRIES` entries (the walk would
cost more than it saves), when the rules cannot be read as the working copy reads them (a
``.debugignore`` that is a link or larger than :data:`MAX_BYTES`), or when the file picked
is binary or larger than :data:`MAX_BYTES`. Links are not listed (the working copy lists a
link to a file as a file): where one would be picked, the working copy's view differs and
replaces the one shown.
"""

from __future__ import annotations

import stat
from collections.abc import Callable, Sequence

from dgym_tui.core.fs import rules
from dgym_tui.core.fs.safefs import SafeTree, walk

#: Largest file (and ``.debugignore``), in bytes, read.
MAX_BYTES = 512 * 1024
#: Most entries (files and folders) walked in the original.
MAX_ENTRIES = 2_000


def visible_files(tree: SafeTree, patterns: Sequence[str]) -> list[str] | None:
    """The regular files of ``tree`` the working copy shows, sorted (None: more than
    :data:`MAX_ENTRIES` entries).

    Args:
        tree: the original repository.
        patterns: the user's gitignore patterns (``.debugignore``'s lines and the
            episode's ``ignore``); :data:`~dgym_tui.core.fs.rules.ALWAYS_IGNORED`
            is added.
    """
    if patterns:
        import pathspec  # only for a repository with rules: ~40 ms to import

        spec = pathspec.GitIgnoreSpec.from_lines([*rules.ALWAYS_IGNORED, *patterns])
        cache: dict[tuple[str, bool], bool] = {}

        def hidden(rel: str, folder: bool) -> bool:
            return rules.pattern_names(spec, cache, rel, folder)
    else:  # ALWAYS_IGNORED alone: these folders, the rule files, bytecode
        def hidden(rel: str, folder: bool) -> bool:
            name = rel.rsplit("/", 1)[-1]
            return name in (rules.IGNORE_FILE, rules.READONLY_FILE) or name.endswith(".pyc") or (
                folder and name in rules.NOT_COPIED)

    files: list[str] = []
    entries = 0
    for _fd, name, rel, st in walk(tree.fd, lambda rel, st: not hidden(rel, True)):
        entries += 1
        if entries > MAX_ENTRIES:
            return None
        if stat.S_ISREG(st.st_mode) and name not in rules.NOT_COPIED and not hidden(rel, False):
            files.append(rel)
    return sorted(files)


def read_first_file(root: str, ignore: Sequence[str] | None,
                    pick: Callable[[list[str]], str | None]) -> tuple[str, str] | None:
    """The file ``pick`` chooses among the original's visible files, and its text.

    Args:
        root: the original repository's folder (host path).
        ignore: the episode's extra ``ignore`` patterns (None when unknown: nothing is read).
        pick: ``pick(files) -> path or None``, the front end's choice of the first file
            among sorted relative POSIX paths.

    Returns:
        ``(relative path, text)`` (UTF-8, invalid bytes replaced, as the working copy
        reads it), or None (see the module's docstring). Never raises for a missing,
        unreadable or refused folder or file.
    """
    if ignore is None:
        return None
    try:
        tree = SafeTree(root)
    except OSError:
        return None
    try:
        patterns = list(ignore)
        if tree.kind(rules.IGNORE_FILE, follow=False) is not None:
            listed = tree.read_bytes(rules.IGNORE_FILE, limit=MAX_BYTES + 1, follow=False)
            if len(listed) > MAX_BYTES:
                return None
            patterns += listed.decode("utf-8", "replace").splitlines()
        files = visible_files(tree, patterns)
        first = pick(files) if files else None
        if first is None:
            return None
        data = tree.read_bytes(first, limit=MAX_BYTES + 1, follow=False)
    except OSError:  # unreadable, changed meanwhile, a link where a file was
        return None
    finally:
        tree.close()
    if len(data) > MAX_BYTES or rules.is_binary(data[:rules.BINARY_SNIFF_BYTES]):
        return None
    return first, data.decode("utf-8", "replace")
