"""Preloaded starts: a spare Python that imported pytest ahead of time, ready for the next run.

What a user waits for in an eval or a pdb start is mostly Python, pytest and
its plugins starting. A terminal can start a *spare* of a command ahead of
time (:meth:`LocalTerminal.prewarm`): the same shell lines, environment,
sandbox, limits and user, but its last line, ``python -m pytest ARGS`` or
``python -m pdb ARGS``, replaced by ``python dgym_preload.py FD ROOT
-- -m pytest ARGS``. That script (:mod:`.preload_spare`, copied into the
terminal's read-only plugin folder) imports pytest, the plugins pytest would
import and pdb, never a module of the working copy, and waits. When the same
command is asked for with the same environment and mounts, the terminal hands
it over and the spare becomes that run through the interpreter's own ``-m``
machinery; otherwise the command starts cold, as before.

Why a spare per run and not a fork server: each run still gets a process and,
on ``bwrap``, a sandbox of its own (a fresh ``/tmp``, PID namespace and string
hash seed, nothing left by an earlier run), so a run is a cold run whose
imports happened earlier; nothing of the code under test can reach the next
run through a long-lived server.

The host trusts nothing the spare sends: the control socket is a
``socketpair`` whose other end only that sandbox holds; the host reads single
bytes from it (``R`` ready, ``U`` unfit, ``P`` proceeding, ``C`` stale) and any
other byte, an end of file, or no answer in time means "start cold". No
descriptor or path comes back from the sandbox.

Turned off by ``DGYM_PRELOAD=0`` in the environment (read when a terminal is
made) or ``terminal.preload = False``.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shlex
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The spare script's file name in the terminal's plugin folder.
SCRIPT = "dgym_preload.py"
#: Environment variable that turns preloading off ("0", "off", "no", "false").
SWITCH = "DGYM_PRELOAD"
#: Longest wait for a spare to finish its imports when it is asked for, in seconds;
#: past it the command starts cold.
READY_WAIT = 30.0

#: A Python interpreter named on the command line (a name on PATH or a path).
_PYTHON = re.compile(r"(?:[A-Za-z0-9_./+-]*/)?python(?:3(?:\.\d+)?)?")
#: Characters of the shell the spare's line could not keep the meaning of: the last
#: line is served only when it holds none (quotes are fine: sh and shlex agree then).
_SHELL = frozenset("$`\\;&|<>(){}*?[]~#!\t\r")
#: ``NAME=value`` before the command (sh puts it in the command's environment).
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def enabled() -> bool:
    """Whether preloading is on for terminals made now (:data:`SWITCH` not set to off)."""
    return os.environ.get(SWITCH, "1").strip().lower() not in ("0", "off", "no", "false")


def spare_command(command: str, script: str, fd: int, root: str) -> str | None:
    """The spare's shell command for ``command``, or None when it cannot be served.

    Served: the last line of ``command`` is ``PYTHON -m pytest ARGS`` or
    ``PYTHON -m pdb ARGS`` (``-m pytest ...``, a script, another module), maybe
    after ``NAME=value`` words, with no
    shell syntax but quotes in ARGS (no variables, globs, redirections, ``;``);
    the lines before it are kept as they are (dgym's own exports).

    Args:
        command: the cold command (what ``sh -c`` would run).
        script: the spare script's path as commands see it.
        fd: the control socket's descriptor number in the spare.
        root: the working copy's path as commands see it (no module of it is preloaded).

    Returns:
        ``command`` with its last line's interpreter followed by
        ``SCRIPT FD ROOT --`` (the rest of the line verbatim), or None.
    """
    head, newline, last = command.rpartition("\n")
    if not last.strip() or any(c in _SHELL for c in last):
        return None
    try:
        words = shlex.split(last)
    except ValueError:
        return None
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    if len(words) < i + 3 or not _PYTHON.fullmatch(words[i]) or words[i + 1] != "-m":
        return None
    if words[i + 2] not in ("pytest", "pdb") or len(words) < i + 4 and words[i + 2] == "pdb":
        return None
    raw = last.split(None, i + 1)
    if raw[:i + 1] != words[:i + 1]:  # quotes before the module: not served
        return None
    spare = f"{' '.join(raw[:i + 1])} {shlex.quote(script)} {fd} {shlex.quote(root)} --"
    return f"{head}{newline}{spare} {raw[i + 1]}"


def install(plugin_dir: str) -> None:
    """Write the spare script into ``plugin_dir`` (a folder the terminal made for itself,
    read-only to the commands), unless it is there.

    The file is created ``O_EXCL | O_NOFOLLOW`` through the folder's descriptor.

    Raises:
        OSError: the folder cannot be written.
    """
    folder = os.open(plugin_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        try:
            fd = os.open(SCRIPT, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o644, dir_fd=folder)
        except FileExistsError:
            return
        with os.fdopen(fd, "wb") as f:
            f.write(Path(__file__).with_name("preload_spare.py").read_bytes())
        os.chmod(SCRIPT, 0o644, dir_fd=folder)  # whatever the umask
    finally:
        os.close(folder)


#: what a spare's answers other than the expected one mean
_WHY = {b"U": "unfit: a module of the working copy or an unknown command",
        b"C": "stale: a file it imported, a sys.path folder or the configuration changed, "
              "or the folder holds a module named like one it imported"}


@dataclass
class Spare:
    """One spare process and the host's end of its control socket.

    Attributes:
        command: the cold command it stands in for.
        key: what must be equal when it is used (environment, the terminal's mounts).
        process: ``subprocess.Popen`` (batch) or a pexpect spawn (interactive).
        control: the host's end of the control socket.
    """

    command: str
    key: Any
    process: Any
    control: socket.socket
    #: why :meth:`hand_over` said no ("" after a yes)
    why: str = ""

    def hand_over(self, deadline: float, drain: tuple[int, Callable[[], bool]] | None = None
                  ) -> bool:
        """Wait until the spare is ready, tell it to go, and read its answer.

        Args:
            deadline: ``time.monotonic()`` value after which the answer counts as "no".
            drain: ``(fd, read)`` of the spare's output to keep reading meanwhile
                (``read()`` returns False at the end of file).

        Returns:
            True when the spare became the run; False when it is unfit, stale,
            gone, silent or said anything else (the caller starts cold).
        """
        control = self.control.fileno()
        expected = b"R"
        self.why = "no answer in time"
        with selectors.DefaultSelector() as sel:
            sel.register(control, selectors.EVENT_READ)
            if drain is not None:
                sel.register(drain[0], selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                for key, _ in sel.select(min(left, 1.0)):
                    if drain is not None and key.fd == drain[0]:
                        if not drain[1]():
                            self.why = "its output ended"
                            return False
                        continue
                    try:
                        data = os.read(control, 16)
                    except OSError:
                        data = b""
                    if not data:
                        self.why = "it ended"
                        return False
                    for byte in data:
                        if bytes([byte]) != expected:
                            self.why = _WHY.get(bytes([byte]), "it said something else")
                            return False
                        if expected == b"P":
                            self.why = ""
                            return True
                        try:
                            self.control.sendall(b"G")
                        except OSError:
                            self.why = "it ended"
                            return False
                        expected = b"P"

    def ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the spare to say it is ready; does not consume
        the answer. True when its next byte is ``R``."""
        sel = selectors.DefaultSelector()
        try:
            sel.register(self.control.fileno(), selectors.EVENT_READ)
            if not sel.select(timeout):
                return False
            return self.control.recv(1, socket.MSG_PEEK) == b"R"
        except OSError:
            return False
        finally:
            sel.close()

    def close(self) -> None:
        """Close the host's end of the control socket (the spare then exits if unused)."""
        with contextlib.suppress(OSError):
            self.control.close()
