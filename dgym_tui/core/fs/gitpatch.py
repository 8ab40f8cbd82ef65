"""Patches in git's exact format, so ``git apply`` always takes them.

``git diff --full-index --binary`` is the model: ``diff --git`` headers with
git's name quoting (tabs, newlines, quotes, backslashes and non-ASCII bytes
as C escapes inside double quotes), ``new file mode`` / ``deleted file mode``
/ ``old mode`` + ``new mode`` lines, a full ``index`` line (blob ids), text
hunks for UTF-8 text, and ``GIT binary patch`` literals (zlib + git's base85)
for everything else. Symbolic links are mode ``120000`` blobs holding the
target. A change of type (file <-> link) is a deletion plus an addition, as
git writes it.
"""

from __future__ import annotations

import base64
import difflib
import hashlib
import os
import re
import subprocess
import tempfile
import zlib
from dataclasses import dataclass

from dgym_tui.core import tempdirs

MODE_FILE = 0o100644
MODE_EXEC = 0o100755
MODE_LINK = 0o120000
NULL_ID = "0" * 40

_ESCAPES = {0x07: "a", 0x08: "b", 0x09: "t", 0x0A: "n", 0x0B: "v", 0x0C: "f", 0x0D: "r",
            0x22: '"', 0x5C: "\\"}
#: Bytes per line of a binary literal (git's limit).
_BINARY_LINE = 52
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+")


@dataclass(frozen=True)
class Blob:
    """One side of a file change: git mode (``MODE_FILE``/``MODE_EXEC``/``MODE_LINK``) and bytes."""

    mode: int
    data: bytes


def git_mode(st_mode: int, is_link: bool = False) -> int:
    """The git mode of a file: 120000 for links, 100755 when any execute bit is set, else 100644."""
    if is_link:
        return MODE_LINK
    return MODE_EXEC if st_mode & 0o111 else MODE_FILE


def quote_path(name: str, force: bool = False) -> str:
    """Quote a path as git does (``core.quotePath`` on): plain if safe, else C-style in quotes;
    ``force`` quotes a safe one too."""
    raw = os.fsencode(name)
    if not force and not any(b < 0x20 or b in (0x22, 0x5C) or b >= 0x7F for b in raw):
        return raw.decode("ascii")
    out = []
    for b in raw:
        if b in _ESCAPES:
            out.append("\\" + _ESCAPES[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


def unquote_path(text: str) -> str:
    """Undo :func:`quote_path`: a C-style quoted name becomes the file name; others pass."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    body, out, i = text[1:-1], bytearray(), 0
    reverse = {v: k for k, v in _ESCAPES.items()}
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out += ch.encode("utf-8")
            i += 1
        elif body[i + 1] in "01234567":
            out.append(int(body[i + 1:i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(reverse.get(body[i + 1], ord(body[i + 1])))
            i += 2
    return os.fsdecode(bytes(out))


def blob_id(data: bytes) -> str:
    """Git's object id (SHA-1) of a blob holding ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_text(data: bytes) -> bool:
    """True when ``data`` can go in a text hunk: UTF-8 without NUL bytes."""
    if b"\0" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def file_patch(rel: str, old: Blob | None, new: Blob | None) -> str:
    """The git diff of one path from ``old`` to ``new`` (None = missing); "" when equal
    (both missing too: a path the sandbox made and removed again)."""
    if old is None and new is None:
        return ""
    if old is not None and new is not None:
        if old == new:
            return ""
        if (old.mode == MODE_LINK) != (new.mode == MODE_LINK):
            return file_patch(rel, old, None) + file_patch(rel, None, new)
    # git apply cannot split an unquoted header whose name holds a space when no ---/+++
    # lines follow (an empty file added or deleted, a mode change): quoted, it can
    spaced = " " in rel
    a, b = quote_path("a/" + rel, spaced), quote_path("b/" + rel, spaced)
    head = [f"diff --git {a} {b}\n"]
    old_id = blob_id(old.data) if old is not None else NULL_ID
    new_id = blob_id(new.data) if new is not None else NULL_ID
    if old is None:
        head.append(f"new file mode {new.mode:06o}\n")
        head.append(f"index {old_id}..{new_id}\n")
    elif new is None:
        head.append(f"deleted file mode {old.mode:06o}\n")
        head.append(f"index {old_id}..{new_id}\n")
    elif old.mode != new.mode:
        head.append(f"old mode {old.mode:06o}\nnew mode {new.mode:06o}\n")
        if old_id != new_id:
            head.append(f"index {old_id}..{new_id}\n")
    else:
        head.append(f"index {old_id}..{new_id} {old.mode:06o}\n")
    old_data = old.data if old is not None else b""
    new_data = new.data if new is not None else b""
    if old_data == new_data:
        return "".join(head)
    if is_text(old_data) and is_text(new_data):
        return "".join(head) + _text_hunks(rel, old, new)
    return "".join(head) + "GIT binary patch\n" + _literal(new_data) + _literal(old_data)


def _text_hunks(rel: str, old: Blob | None, new: Blob | None) -> str:
    # git ends a name holding a space with a tab, so `patch` reads it whole
    tab = "\t" if " " in rel else ""
    return unified_diff(quote_path("a/" + rel) + tab if old is not None else "/dev/null",
                        quote_path("b/" + rel) + tab if new is not None else "/dev/null",
                        old.data.decode("utf-8") if old is not None else "",
                        new.data.decode("utf-8") if new is not None else "")


def split_lines(text: str) -> list[str]:
    """Split ``text`` into lines at "\\n" only, keeping the line ends (as git and pdb count)."""
    return _LINE_RE.findall(text)


def unified_diff(old_name: str, new_name: str, old: str, new: str) -> str:
    """The unified diff turning text ``old`` into ``new``, its ``---`` / ``+++`` lines
    naming ``old_name`` / ``new_name``; a last line without newline gets git's
    ``\\ No newline at end of file`` marker. Returns "" when the texts are equal."""
    out = []
    for line in difflib.unified_diff(split_lines(old), split_lines(new), old_name, new_name):
        out.append(line)
        if not line.endswith("\n"):
            out.append("\n\\ No newline at end of file\n")
    return "".join(out)


def text_diff(rel: str, old: str | None, new: str | None) -> str:
    """Return the unified diff body turning ``old`` into ``new`` for file ``rel``.

    ``None`` stands for a missing file (``/dev/null``). Headers use git's
    ``a/`` ``b/`` prefixes; a last line without newline gets git's
    ``\\ No newline at end of file`` marker. Returns "" when the texts are equal.
    """
    return unified_diff(f"a/{rel}" if old is not None else "/dev/null",
                        f"b/{rel}" if new is not None else "/dev/null", old or "", new or "")


def _literal(data: bytes) -> str:
    """One ``literal`` hunk of a git binary patch: size, then base85 lines of zlib data."""
    packed = zlib.compress(data, 9)
    out = [f"literal {len(data)}\n"]
    for i in range(0, len(packed), _BINARY_LINE):
        chunk = packed[i:i + _BINARY_LINE]
        n = len(chunk)
        prefix = chr(ord("A") + n - 1) if n <= 26 else chr(ord("a") + n - 27)
        out.append(prefix + base64.b85encode(chunk, pad=True).decode("ascii") + "\n")
    out.append("\n")
    return "".join(out)


def merge3(base: bytes, ours: bytes, theirs: bytes) -> bytes | None:
    """Three-way merge of text with ``git merge-file``; None on a conflict or binary input.

    Args:
        base: the common ancestor's content.
        ours: one side's content (the session's working copy).
        theirs: the other side's content (the original as it is now).

    Returns:
        The merged bytes, or None when the sides conflict, a side is not
        text, or git is not available.
    """
    if not all(is_text(d) for d in (base, ours, theirs)):
        return None
    with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("merge")) as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(tmp, name)
            with open(path, "wb") as fh:
                fh.write(data)
            paths.append(path)
        try:
            proc = subprocess.run(["git", "merge-file", "-p", "--quiet", *paths],
                                  capture_output=True, check=False, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return None
    return proc.stdout if proc.returncode == 0 else None
