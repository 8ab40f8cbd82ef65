"""Read unified diffs (git style) with :mod:`unidiff` and apply them to text or a folder.

:func:`parse_patch` turns a patch into :class:`FilePatch` objects (our own
small records, so the "No newline at end of file" marker is already folded
into the line texts); :func:`patched_text` applies one file's hunks to a text,
placing each hunk at its line number or, when the file moved, at the nearest
place its context matches. :func:`patched_files` and :func:`apply_patch` do
it for a folder, :func:`reverse` turns a patch around (new -> old) and
:func:`original_texts` recovers what the changed files held before the patch.

Generation of patches lives in :mod:`dgym_tui.core.fs.workspace`; no ``git`` is
needed on the host for either direction.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass, field
from pathlib import Path

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from dgym_tui.core.fs.gitpatch import unquote_path


class PatchError(ValueError):
    """A patch cannot be read or does not apply; the message says where."""


@dataclass(frozen=True)
class Hunk:
    """One ``@@`` block of a unified diff.

    Attributes:
        old_start: first line of the old range (1-based; the line *after which*
            to insert when ``old_len`` is 0).
        old_len: number of old lines replaced.
        lines: the body as ``(kind, text)`` pairs, kind ``" "``, ``"-"`` or
            ``"+"``; ``text`` keeps its ``"\\n"`` unless the diff said
            "No newline at end of file".
    """

    old_start: int
    old_len: int
    lines: tuple[tuple[str, str], ...]
    new_start: int = 0

    @property
    def old_lines(self) -> list[str]:
        """Lines the hunk expects (context and removed)."""
        return [text for kind, text in self.lines if kind != "+"]

    @property
    def new_lines(self) -> list[str]:
        """Lines the hunk leaves (context and added)."""
        return [text for kind, text in self.lines if kind != "-"]


@dataclass
class FilePatch:
    """The changes to one file.

    Attributes:
        old_path: path before the change (None for a created file).
        new_path: path after the change (None for a deleted file).
        hunks: the ``@@`` blocks, in file order.
    """

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The file's path (the new one unless the file is deleted)."""
        return self.new_path or self.old_path or ""


def _name(name: str) -> str | None:
    name = unquote_path(name.split("\t", 1)[0].strip())  # git quotes special names
    if name == "/dev/null":
        return None
    return name[2:] if name[:2] in ("a/", "b/") else name


def parse_patch(text: str, skip_binary: bool = False) -> list[FilePatch]:
    """Read a unified diff (``git diff`` output) into per-file changes.

    Args:
        text: the patch; ``diff --git`` headers are optional, ``---``/``+++``
            lines are required for each file with hunks.
        skip_binary: leave out binary files (``Binary files ... differ``)
            instead of refusing the patch.

    Returns:
        One :class:`FilePatch` per file, in patch order.

    Raises:
        PatchError: a binary file (unless ``skip_binary``) or a malformed patch.
    """
    try:
        patch_set = PatchSet(text)
    except UnidiffParseError as exc:
        raise PatchError(f"malformed patch: {exc}") from None
    files = []
    for patched in patch_set:
        if patched.is_binary_file:
            if skip_binary:
                continue
            raise PatchError(f"{patched.path}: binary patches are not supported")
        hunks = []
        for hunk in patched:
            lines: list[tuple[str, str]] = []
            for line in hunk:
                if line.line_type == "\\":  # "\ No newline at end of file"
                    if lines:
                        lines[-1] = (lines[-1][0], lines[-1][1].removesuffix("\n"))
                    continue
                lines.append((line.line_type, line.value))
            hunks.append(Hunk(hunk.source_start, hunk.source_length, tuple(lines),
                              hunk.target_start))
        files.append(FilePatch(_name(patched.source_file), _name(patched.target_file), hunks))
    return files


def reverse(file_patch: FilePatch) -> FilePatch:
    """Return the patch that undoes ``file_patch`` (turns its new text into its old one)."""
    flip = {"+": "-", "-": "+", " ": " "}
    hunks = [Hunk(h.new_start, len(h.new_lines), tuple((flip[k], t) for k, t in h.lines),
                  h.old_start) for h in file_patch.hunks]
    return FilePatch(file_patch.new_path, file_patch.old_path, hunks)


def _find(lines: list[str], block: list[str], expected: int) -> int:
    """Index where ``block`` occurs in ``lines``, the closest to ``expected``; -1 if nowhere."""
    n = len(block)
    for delta in range(len(lines) + 1):
        for pos in (expected - delta, expected + delta):
            if 0 <= pos <= len(lines) - n and lines[pos:pos + n] == block:
                return pos
        if expected - delta < 0 and expected + delta > len(lines) - n:
            break
    return -1


def locate_hunks(file_patch: FilePatch, old_text: str) -> list[tuple[int, Hunk]]:
    """Return ``(0-based index in the old text, hunk)`` for each hunk, checking its context.

    A hunk is placed at its recorded line when its old lines are there,
    otherwise at the nearest place they are (shifted by the hunks before it).

    Raises:
        PatchError: a hunk's old lines are not found in ``old_text``.
    """
    lines = old_text.splitlines(keepends=True)
    placed = []
    offset = 0
    for hunk in file_patch.hunks:
        start = hunk.old_start - 1 if hunk.old_len else hunk.old_start
        pos = _find(lines, hunk.old_lines, start + offset) if hunk.old_lines else start + offset
        if pos < 0:
            raise PatchError(f"hunk @@ -{hunk.old_start},{hunk.old_len} @@ does not apply "
                             f"to {file_patch.path}")
        offset = pos - start
        placed.append((pos, hunk))
    return placed


def patched_text(file_patch: FilePatch, old_text: str | None) -> str | None:
    """Return the file's text after the patch (None when the patch deletes it).

    Args:
        file_patch: one file of :func:`parse_patch`.
        old_text: the file's text before the patch (None: the file is new).

    Raises:
        PatchError: a hunk does not apply.
    """
    if file_patch.new_path is None:
        return None
    lines = (old_text or "").splitlines(keepends=True)
    for pos, hunk in reversed(locate_hunks(file_patch, old_text or "")):
        lines[pos:pos + len(hunk.old_lines)] = hunk.new_lines
    return "".join(lines)


def patched_files(patch: str, root: str | Path) -> dict[str, str | None]:
    """Return what a patch makes of the files under ``root``, without writing anything.

    Args:
        patch: the unified diff text.
        root: folder the patch's paths are relative to.

    Returns:
        ``{relative path: new text, or None when the patch deletes the file}``
        in patch order (a renamed file's old path maps to None).

    Raises:
        PatchError: the patch is malformed, names a missing file or does not apply.
    """
    root = Path(root)
    out: dict[str, str | None] = {}
    for fp in parse_patch(patch):
        old = None
        if fp.old_path:
            source = root / fp.old_path
            if not source.is_file():
                raise PatchError(f"{fp.old_path} does not exist under {root}")
            old = source.read_text(encoding="utf-8")
            if fp.new_path and fp.new_path != fp.old_path:
                out[fp.old_path] = None
        out[fp.path] = patched_text(fp, old)
    return out


def apply_patch(patch: str, root: str | Path) -> list[str]:
    """Apply a unified diff to the files under ``root`` (in place).

    Every hunk is checked before any file is written, so a patch that does not
    apply leaves ``root`` unchanged.

    Args:
        patch: the unified diff text.
        root: folder the patch's paths are relative to.

    Returns:
        The relative paths written or deleted, in patch order.

    Raises:
        PatchError: the patch is malformed or does not apply.
    """
    root = Path(root)
    files = patched_files(patch, root)
    for rel, text in files.items():
        target = root / rel
        if text is None:
            target.unlink(missing_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return list(files)


def original_texts(patch: str, current: Callable[[str], str | None],
                   skip: Container[str] = ()) -> dict[str, str | None]:
    """Recover the text each file of ``patch`` had before it, from the text it has now.

    Args:
        patch: a unified diff whose new side is the current state.
        current: ``current(rel)`` returns the file's text now (None: it does not exist).
        skip: paths to leave out (already known). Binary files are left out too.

    Returns:
        ``{relative path: text before the patch, or None for a file the patch created}``.

    Raises:
        PatchError: the patch is malformed or does not match the current texts.
    """
    out: dict[str, str | None] = {}
    for fp in parse_patch(patch, skip_binary=True):
        before = fp.old_path
        if before is None or before in skip:
            if fp.new_path is not None and fp.new_path not in skip:
                out[fp.new_path] = None
            continue
        out[before] = patched_text(reverse(fp), current(fp.path) if fp.new_path else None)
    return out
