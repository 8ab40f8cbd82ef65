"""A persistent bash shell in a terminal, driven one command at a time.

A :class:`ShellSession` starts ``bash`` through :meth:`Terminal.spawn` (so it
runs in the episode's sandbox, like pdb) and keeps it between commands: ``cd``,
variables and functions persist. Each command is sent as one ``eval`` of an
ANSI-C quoted string (so no byte of it is interpreted before ``eval`` sees it,
and no physical line is longer than the terminal's line limit), with standard
input from ``/dev/null`` (a command cannot swallow what follows), then a
trailer that prints a sentinel::

    eval $'...'\\
    $'...' </dev/null; builtin printf '\\n%s:%s\\n' TOKEN "$?"

``TOKEN`` is fresh random text for every command (never printed by the
command line itself: the terminal does not echo), so output of the program
cannot end a command early or forge its exit status. Memory stays
O(``max_output``) however much a command prints.

On a timeout the session sends Ctrl-C and resynchronises with a new sentinel;
the shell survives. When it does not come back (the command ignores SIGINT,
redirected the shell's output, ...), the session kills the shell: the caller
starts a new one.

This module knows nothing of workspaces or tools; the ``bash`` tool
(``dgym_tui.core.tools.bash``) builds on it.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from .base import DEFAULT_MAX_OUTPUT, child_alive
from .output import BoundedOutput, read_until

#: The shell the session starts (``--noediting``: no readline, so nothing is echoed).
SHELL = ("command -v bash >/dev/null 2>&1 || { echo 'bash is not installed in the sandbox'; "
         "exit 127; }; exec bash --noprofile --norc --noediting")
#: Run once at start: no job control (no "[1]+ Done" lines), no history, no prompts.
INIT = ("set +m +o history; unset HISTFILE PROMPT_COMMAND; PS1=''; PS2=''; PS0=''; "
        "stty -echo 2>/dev/null")
#: Environment of the shell.
SHELL_ENV = {"PS1": "", "PS2": "", "TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat",
             "PYTHONUNBUFFERED": "1"}
#: Characters of a command per physical line sent (terminals cut canonical lines at 4095).
CHUNK = 512
#: Seconds to wait for the shell after Ctrl-C (twice) before it is killed.
INTERRUPT_GRACE = 5.0
_SAFE = frozenset(chr(c) for c in range(0x20, 0x7f)) - {"\\", "'"}


class ShellStartError(RuntimeError):
    """The shell did not start (bash missing, the sandbox refused, no reply in time).

    Attributes:
        output: what the process printed (bounded).
    """

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


@dataclass
class ShellReply:
    """What one command produced.

    Attributes:
        output: stdout and stderr interleaved, ``\\r\\n`` normalized to ``\\n``,
            bounded to the session's ``max_output`` (head + tail + a note).
        status: ``"done"`` (the command finished; the shell waits),
            ``"timeout"`` (stopped with Ctrl-C after the deadline; the shell
            kept), ``"killed"`` (timed out and did not stop: the shell was
            killed) or ``"exited"`` (the shell itself ended, e.g. ``exit``).
        exit_code: the command's exit status (``"done"``, or ``"timeout"`` when
            the shell reported one), the shell's for ``"exited"`` when known;
            None otherwise.
        elapsed: seconds from sending the command to the end of the reply.
        truncated_bytes: bytes of output dropped by the bound.
    """

    output: str
    status: str
    exit_code: int | None = None
    elapsed: float = 0.0
    truncated_bytes: int = 0


def quote(text: str) -> list[str]:
    """Quote ``text`` as bash ANSI-C strings of printable ASCII, split into pieces.

    Args:
        text: any text (encoded as UTF-8; every other byte is written ``\\xHH``).

    Returns:
        Words like ``$'...'`` of at most about :data:`CHUNK` characters each;
        written one after the other they are one word holding ``text``.
    """
    pieces, current = [], []
    size = 0
    for char in text:
        if char in _SAFE:
            enc = char
        else:
            enc = "".join(f"\\x{b:02x}" for b in char.encode("utf-8", "surrogatepass"))
        current.append(enc)
        size += len(enc)
        if size >= CHUNK:
            pieces.append("$'" + "".join(current) + "'")
            current, size = [], 0
    if current or not pieces:
        pieces.append("$'" + "".join(current) + "'")
    return pieces


class ShellSession:
    """One bash process in a terminal, kept between commands.

    Args:
        terminal: a started ``Terminal`` (``spawn`` returns a pexpect object
            opened with ``encoding="utf-8"``).
        max_output: cap in bytes on the output kept per command.

    Use :meth:`start`, then :meth:`run` per command; :meth:`close` kills the shell.
    """

    def __init__(self, terminal, max_output: int = DEFAULT_MAX_OUTPUT) -> None:
        self.terminal = terminal
        self.max_output = max_output
        self.child: Any = None  # the pexpect process while started
        self._pending = ""

    @property
    def alive(self) -> bool:
        """True while the shell runs."""
        return child_alive(self.child)

    def start(self, timeout: float) -> None:
        """Start the shell and wait until it answers.

        Args:
            timeout: seconds to wait for the first answer.

        Raises:
            ShellStartError: the shell exited or did not answer in time (it is
                killed before raising).
        """
        self.close()
        self.child = self.terminal.spawn(SHELL, env=dict(SHELL_ENV))
        self.child.delaybeforesend = None  # pexpect's default sleeps 50 ms per send
        self._pending = ""
        token = _token()
        self.child.send(f"{INIT}; {_trailer(token)}\n")
        reply = self._read(token, time.monotonic() + timeout, time.monotonic())
        if reply.status != "done":
            self.close()
            what = ("did not answer within " + f"{timeout:g} s" if reply.status == "timeout"
                    else "exited at start")
            raise ShellStartError(f"bash {what}", reply.output)

    def run(self, command: str, timeout: float) -> ShellReply:
        """Run ``command`` (any bash text, several lines allowed) and read its output.

        Args:
            command: the command text.
            timeout: seconds before the command is stopped with Ctrl-C.

        Returns:
            The :class:`ShellReply`. After ``"killed"`` or ``"exited"`` the
            session is closed; :meth:`start` makes a new shell.

        Raises:
            RuntimeError: the session is not started.
        """
        if self.child is None:
            raise RuntimeError("shell not started; call start() first")
        started = time.monotonic()
        token = _token()
        words = quote(command)
        lines = "\\\n".join(words)
        try:
            self.child.send(f"builtin eval {lines} </dev/null; {_trailer(token)}\n")
        except OSError:
            self.close()
            return ShellReply("", "exited", elapsed=time.monotonic() - started)
        reply = self._read(token, started + timeout, started)
        if reply.status == "timeout":
            reply = self._stop(token, reply, started)
        if reply.status in ("exited", "killed"):
            if reply.status == "exited" and reply.exit_code is None:
                with contextlib.suppress(Exception):  # collect the status (pexpect sets it)
                    self.child.isalive()
                reply.exit_code = getattr(self.child, "exitstatus", None)
            self.close()
        return reply

    def close(self) -> None:
        """Kill the shell (and its process group). Idempotent."""
        child, self.child = self.child, None
        self._pending = ""
        if child is not None:
            with contextlib.suppress(Exception):  # already gone
                child.close(force=True)

    # -- internals ---------------------------------------------------------
    def _stop(self, token: str, reply: ShellReply, started: float) -> ShellReply:
        """Ctrl-C the running command and find the shell's prompt again (or kill it)."""
        parts = [reply.output]
        dropped = reply.truncated_bytes
        for _ in range(2):
            with contextlib.suppress(Exception):  # the shell may be gone already
                self.child.sendintr()
            sync = _token()
            with contextlib.suppress(OSError):
                self.child.send(f"{_trailer(sync)}\n")
            after = self._read(sync, time.monotonic() + INTERRUPT_GRACE, started)
            parts.append(after.output)
            dropped += after.truncated_bytes
            if after.status in ("done", "exited"):
                status = "timeout" if after.status == "done" else "exited"
                break
        else:
            status = "killed"
        text = "".join(parts)
        code = None
        for match in re.finditer(rf"\n?{token}:(\d+)\n", text):  # the trailer ran after all
            code = int(match[1])
        text = re.sub(rf"\n?{token}:\d+\n", "", text)
        return ShellReply(text, status, code, time.monotonic() - started, dropped)

    def _read(self, token: str, deadline: float, started: float) -> ShellReply:
        """Read up to ``token``'s sentinel line, the deadline, or the end of the shell."""
        out = BoundedOutput(self.max_output)
        marker = re.compile(rf"\r?\n{token}:(\d+)\r?\n")
        buf, self._pending = self._pending, ""
        # keep back enough that a sentinel split across reads stays whole
        status, match, rest = read_until(self.child, buf, out, marker.search, len(token) + 24,
                                         deadline)
        code = None
        if status == "found":
            status, code, self._pending = "done", int(match[1]), rest
        text = out.text().replace("\r\n", "\n").replace("\r", "")
        return ShellReply(text, status, code, time.monotonic() - started, out.dropped)


def _token() -> str:
    return "__dgym_" + secrets.token_hex(16)


def _trailer(token: str) -> str:
    # printf's arguments keep the sentinel's text (TOKEN:STATUS) out of the command line.
    return f"builtin printf '\\n%s:%s\\n' {token} \"$?\""
