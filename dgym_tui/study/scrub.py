"""Remove what names the machine or the person from result files (a study's results).

Observations show what the person's commands print: ``p os.getcwd()`` gives
the working copy's temporary folder, a traceback the Python install under the
home folder, ``sys.path`` the folder dgym was started in. The core already
writes paths inside the working copy relative to it; :func:`scrub_folder`
replaces the rest, in every file of a folder, with placeholders:

========================================  ===============
what                                      written as
========================================  ===============
a working copy (``$TMPDIR/dgym-ws-*``)    ``<repo>``
the Python install (``sys.prefix`` ...)   ``<python>``
the folder dgym was started in            ``<cwd>``
the home folder                           ``~``
the temporary folder                      ``<tmp>``
the host name (3+ characters, a word)     ``<host>``
the user name (3+ characters, a word)     ``<user>``
========================================  ===============

Longer paths are replaced first, so a working copy under the home folder
becomes ``<repo>``, not ``~/...``.
"""

from __future__ import annotations

import getpass
import os
import re
import socket
import sys
import tempfile
from pathlib import Path

from dgym_tui.core.fs.workspace import WS_PREFIX

#: Folders too common to name a machine (a system Python's prefix): left as they are.
_SYSTEM = {"", "/usr", "/usr/local"}
#: Characters that continue a path component or a word.
_GOES_ON = r"(?![\w.-])"


def _path_pattern(path: str) -> str:
    """A regex of ``path`` as a whole path (``/tmp`` matches ``/tmp/x``, not ``/tmpx``)."""
    return r"(?<![\w.-])" + re.escape(path.rstrip("/")) + _GOES_ON


def _word_pattern(word: str) -> str:
    return r"(?<![\w.-])" + re.escape(word) + r"(?![\w-])"


def user_name() -> str:
    """This process's user name ("" when the system cannot tell)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return ""


def machine_patterns() -> list[tuple[re.Pattern[str], str]]:
    """The (pattern, placeholder) pairs :func:`scrub_text` applies, longest path first.

    Returns:
        Compiled patterns with their placeholders (see the module docstring).
    """
    tmp = os.path.realpath(tempfile.gettempdir())
    named: dict[str, str] = {}
    for path, placeholder in [(sys.prefix, "<python>"), (sys.base_prefix, "<python>"),
                              (sys.exec_prefix, "<python>"), (os.getcwd(), "<cwd>"),
                              (str(Path.home()), "~"), (tempfile.gettempdir(), "<tmp>"),
                              (tmp, "<tmp>")]:
        for variant in {path, os.path.realpath(path)}:
            variant = variant.rstrip("/")
            if variant.startswith("/") and variant not in named and variant not in _SYSTEM:
                named[variant] = placeholder
    pairs = [(_path_pattern(p), named[p]) for p in sorted(named, key=len, reverse=True)]
    # any working copy (every one is a dgym-ws-* folder in the temporary folder), also
    # one of another process (a task cut off earlier)
    temps = "|".join(re.escape(t) for t in {tempfile.gettempdir(), tmp})
    workspace = rf"(?:{temps})/{re.escape(WS_PREFIX)}[\w-]+"
    pairs.insert(0, (workspace + _GOES_ON, "<repo>"))
    host = socket.gethostname()
    for name, placeholder in ((host, "<host>"), (host.split(".")[0], "<host>"),
                              (user_name(), "<user>")):
        if len(name) >= 3 and name != "root":  # root: a word of English; /root is the home
            pairs.append((_word_pattern(name), placeholder))
    return [(re.compile(pattern), placeholder) for pattern, placeholder in pairs]


def scrub_text(text: str, patterns: list[tuple[re.Pattern[str], str]]) -> str:
    """``text`` with every pattern of ``patterns`` (from :func:`machine_patterns`) replaced."""
    for pattern, placeholder in patterns:
        text = pattern.sub(placeholder, text)
    return text


def scrub_folder(folder: Path) -> list[Path]:
    """Scrub every file directly in ``folder`` in place (see the module docstring).

    Args:
        folder: e.g. a task's result folder (trajectory, status, patch).

    Returns:
        The files that changed.

    Raises:
        OSError: a file cannot be read or written.
    """
    patterns = machine_patterns()
    changed = []
    for path in sorted(folder.iterdir()):
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        scrubbed = scrub_text(text, patterns)
        if scrubbed != text:
            path.write_text(scrubbed, encoding="utf-8", errors="surrogateescape")
            changed.append(path)
    return changed
