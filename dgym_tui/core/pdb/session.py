"""Drive one interactive pdb process through pexpect, event-driven.

A :class:`PdbSession` starts a debug entrypoint (``python -m pdb ...``) in a
terminal and sends it one command at a time. Reading is driven by the prompt:
each reply is everything pdb prints until its next ``(Pdb) `` prompt. The
reader blocks in ``select`` on the pseudo-terminal (pexpect's
``read_nonblocking`` with the time left until the deadline), so a reply is
returned as soon as the prompt arrives: no sleeps, no polling interval, no
extra commands per step. Output is kept in a :class:`BoundedOutput` (head and
tail), so a program printing in a loop cannot exhaust memory.

This module knows pdb's output formats (frame lines, breakpoint replies, the
end-of-program messages) and nothing about workspaces or breakpoint policy;
the ``pdb`` tool (``dgym_tui.core.tools.pdb``) builds on it.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from dgym_tui.core.pdb import fastcontinue
from dgym_tui.core.terminals.base import DEFAULT_MAX_OUTPUT, child_alive
from dgym_tui.core.terminals.output import BoundedOutput, read_until

#: pdb's own prompt (Python 3.8 - 3.13 print exactly this and wait for a line). Only
#: the first one is read as it is: the session then gives pdb a random one (below).
PROMPT = "(Pdb) "

#: Interactive questions pdb asks inside a command, and the answer we give.
#: ``clear`` with no argument asks before deleting every breakpoint.
CONFIRMATIONS = {"Clear all breaks? ": "y"}

_PROMPT_RE = re.compile(re.escape(PROMPT))
#: pdb's prompt after the start: ``(dgym-<32 hex digits>) `` (nested ``debug``
#: sessions add parentheses). Made per session and set in pdb's memory, never on
#: its command line or in a file, so a program printing ``(Pdb) `` (or an old
#: session's prompt) is just output: it cannot end a reply early and shift the
#: replies of later commands.
_TOKEN_PROMPT = re.compile(r"\(+(dgym-[0-9a-f]{32})\)+ ")
#: Longest prompt kept unread at a buffer's end (it may be split across reads).
_KEEP = max(48, *(len(q) for q in CONFIRMATIONS)) - 1


#: Give the debugger of each pdb process the cheap ``continue`` of
#: :mod:`dgym_tui.core.pdb.fastcontinue` at its start (tests compare with it off).
FAST_CONTINUE = True


def _prompt_setter(prompt: str, fast_continue: bool = True, script: str = "") -> str:
    """The pdb command giving every debugger of the process ``prompt`` and, with
    ``fast_continue``, the cheap ``continue`` (:data:`fastcontinue.SCRIPT`, read from the
    file ``script`` as the process sees it when given, else carried compressed); prints
    nothing."""
    loader = f"exec(open({script!r}).read())\n" if script else fastcontinue.compact()
    code = ("import gc, pdb\n"
            + (loader if fast_continue else "")
            + "for o in gc.get_objects():\n"
            " if isinstance(o, pdb.Pdb):\n"
            f"  o.prompt = {prompt!r}\n"
            + ("  install(o)\n" if fast_continue else ""))
    return f"!exec({code!r}, {{}})"

_ML = re.MULTILINE
#: "> /abs/file.py(12)func()" (pdb's current-frame line; "->value" may follow on return).
#: pytest's progress characters (". F E s x X") may stand before it on the same line.
FRAME_RE = re.compile(r"^[.FEsxX]*> (?P<path>.+?)\((?P<line>\d+)\)(?P<func>[^\s(]*)\(\)", _ML)
#: a frame line or a stack entry of ``where``: "> /abs/f.py(12)func()" or "  /abs/f.py(12)func()"
STACK_RE = re.compile(r"^[> ] (?P<path>.+?)\((?P<line>\d+)\)(?P<func>[^\s(]*)\(\)", _ML)
#: "Breakpoint 3 at /abs/file.py:12"
BREAK_RE = re.compile(r"^Breakpoint (?P<num>\d+) at (?P<path>.+):(?P<line>\d+)\s*$", _ML)
#: "Deleted breakpoint 3 at /abs/file.py:12" (clear, or a tbreak that was hit)
DELETED_RE = re.compile(r"^Deleted breakpoint (?P<num>\d+) at (?P<path>.+):(?P<line>\d+)\s*$",
                        _ML)
#: "Disabled breakpoint 3 at /abs/file.py:12" / "Enabled breakpoint ..."
TOGGLED_RE = re.compile(
    r"^(?P<what>Disabled|Enabled) breakpoint (?P<num>\d+) at (?P<path>.+):(?P<line>\d+)\s*$", _ML)

#: Messages pdb prints when the debugged program ends; pdb then restarts it in-process.
ENDED_MARKERS = (
    ("The program finished and will be restarted", "the program finished"),
    ("The program exited via sys.exit()", "the program exited via sys.exit()"),
    ("Post mortem debugger finished", "the post-mortem session ended"),
)
#: pdb entered post-mortem debugging after an uncaught exception (still usable).
POST_MORTEM_MARKER = "Uncaught exception. Entering post mortem debugging"


class PdbStartError(RuntimeError):
    """pdb did not reach its first prompt (it exited or timed out).

    Attributes:
        output: what the process printed (bounded), for the observation.
        timed_out: True when the deadline passed, False when the process exited.
    """

    def __init__(self, message: str, output: str = "", timed_out: bool = False) -> None:
        super().__init__(message)
        self.output = output
        self.timed_out = timed_out


@dataclass
class Frame:
    """A frame line printed by pdb: ``> path(line)func()``.

    Attributes:
        path: the path as the pdb process sees it (absolute, or ``<string>``).
        line: 1-based line number.
        func: function name (``<module>`` at module level).
    """

    path: str
    line: int
    func: str


@dataclass
class PdbReply:
    """What one command (or the session start) produced.

    Attributes:
        output: pdb's output up to the next prompt, ``\\r\\n`` normalized to
            ``\\n``, bounded to the session's ``max_output`` (head + tail + note).
        status: ``"prompt"`` (pdb waits for the next command), ``"timeout"``
            (no prompt before the deadline; the process still runs) or
            ``"exited"`` (the process ended).
        elapsed: seconds from sending the command to the end of the reply.
        truncated_bytes: bytes of output dropped by the bound.
    """

    output: str
    status: str
    elapsed: float = 0.0
    truncated_bytes: int = 0

    @property
    def ok(self) -> bool:
        """True when pdb is back at its prompt."""
        return self.status == "prompt"


def normalize(text: str) -> str:
    """Turn terminal line endings (``\\r\\n``, stray ``\\r``) into ``\\n``."""
    return text.replace("\r\n", "\n").replace("\r", "")


def last_frame(text: str) -> Frame | None:
    """Return the last ``> path(line)func()`` frame line in ``text``, or None."""
    match = None
    for match in FRAME_RE.finditer(text):  # noqa: B007  keep the last one
        pass
    if match is None:
        return None
    return Frame(match["path"], int(match["line"]), match["func"])


def stack_frames(text: str) -> list[Frame]:
    """Every frame named in ``text`` (frame lines and ``where`` entries), outermost first."""
    return [Frame(m["path"], int(m["line"]), m["func"]) for m in STACK_RE.finditer(text)]


def program_ended(text: str) -> str | None:
    """If ``text`` holds one of pdb's end-of-program messages, return a short reason."""
    for marker, reason in ENDED_MARKERS:
        if marker in text:
            return reason
    return None


@dataclass
class PdbSession:
    """One pdb process started in a terminal, driven command by command.

    Args:
        terminal: a started ``Terminal`` (its ``spawn`` returns a pexpect object
            opened with ``encoding="utf-8"``).
        command: the debug entrypoint, e.g. ``"python -m pdb -m pytest -s"``.
        env: extra environment variables for the process.
        max_output: cap in bytes on the output kept per reply.

    Use :meth:`start` once, then :meth:`send` / :meth:`send_many`; :meth:`close`
    kills the process (also used after a timeout).
    """

    terminal: Any
    command: str
    env: dict[str, str] = field(default_factory=dict)
    max_output: int = DEFAULT_MAX_OUTPUT
    child: Any = None
    _pending: str = ""
    #: the session's prompt token ("" until pdb took it: its own prompt counts then)
    _token: str = ""
    #: commands written by :meth:`post` whose replies are not read yet (oldest first)
    _owed: list[str] = field(default_factory=list)
    #: how the process started: "preloaded" (a spare of the terminal became it) or "cold"
    started_as: str = ""

    @property
    def alive(self) -> bool:
        """True while the pdb process runs."""
        return child_alive(self.child)

    def start(self, timeout: float) -> PdbReply:
        """Start the process and wait for pdb's first prompt.

        Args:
            timeout: seconds to wait for the first prompt.

        Returns:
            The reply with what pdb printed before its first prompt
            (normally the first frame line).

        Raises:
            PdbStartError: the process exited or did not prompt in time; the
                process is killed before raising.
        """
        self.close()
        self.child = self.terminal.spawn(self.command, env=self._process_env())
        self.started_as = getattr(self.child, "dgym_start", "cold")
        self.child.delaybeforesend = None  # pexpect's default sleeps 50 ms per send
        self._pending = ""
        self._token = ""
        self._owed = []
        started = time.monotonic()
        deadline = started + timeout
        reply = self._read_reply(deadline, started)
        if reply.ok:
            # Nothing of the program ran yet: this prompt is pdb's. From now on
            # pdb prompts with a token only this session knows.
            token = f"dgym-{secrets.token_hex(16)}"
            self.child.send(_prompt_setter(f"({token}) ", FAST_CONTINUE,
                                           self._fast_continue_file()) + "\n")
            self._token = token
            switched = self._read_reply(deadline, started, accept_plain=True)
            if switched.ok:
                reply.output += switched.output
            else:
                reply = switched
        if not reply.ok:
            self.close()
            what = (f"did not reach the (Pdb) prompt within {timeout:g} s"
                    if reply.status == "timeout" else "exited before its first prompt")
            raise PdbStartError(f"pdb {what}", reply.output, reply.status == "timeout")
        reply.elapsed = time.monotonic() - started
        self.prewarm()  # the next start's spare imports pytest while pdb waits
        return reply

    def _fast_continue_file(self) -> str:
        """:data:`fastcontinue.SCRIPT`'s path in the terminal's plugin folder as pdb sees
        it ("" where there is none: the command then carries the script)."""
        write = getattr(self.terminal, "write_plugin_file", None)
        if not FAST_CONTINUE or write is None:
            return ""
        try:
            return write(fastcontinue.FILE, fastcontinue.SCRIPT.encode())
        except OSError:  # the terminal closed meanwhile: the command carries it
            return ""

    def _process_env(self) -> dict[str, str]:
        return {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", **self.env}

    def prewarm(self) -> bool:
        """Have the terminal start a spare of this session's command, so that the next
        :meth:`start` (of any session with the same command) is preloaded.

        Returns:
            True when a spare was started (see ``Terminal.prewarm``).
        """
        prewarm = getattr(self.terminal, "prewarm", None)
        if prewarm is None:
            return False
        return bool(prewarm(self.command, env=self._process_env(), interactive=True))

    def send(self, command: str, timeout: float) -> PdbReply:
        """Send one command line and read pdb's reply up to the next prompt.

        Args:
            command: one pdb command (a single line, without the newline).
            timeout: seconds to wait for the prompt.

        Returns:
            The :class:`PdbReply`. On ``"timeout"`` the process still runs:
            call :meth:`interrupt` and/or :meth:`close`.

        Raises:
            RuntimeError: the session is not started.
        """
        return self.send_many([command], timeout)[0]

    def send_many(self, commands: list[str], timeout: float) -> list[PdbReply]:
        """Send several command lines at once and read one reply per command.

        All lines are written in one go (pdb reads them in order), so N
        commands cost about one round trip. Reading stops at the first reply
        that does not end at a prompt; later replies are then absent. Replies
        still owed to :meth:`post` are read (and dropped) first; when one of them
        does not end at a prompt, it is returned as the only reply and nothing is
        sent.

        Args:
            commands: pdb command lines.
            timeout: seconds for the whole batch.

        Returns:
            One :class:`PdbReply` per command answered (fewer on timeout / exit).
        """
        if self.child is None:
            raise RuntimeError("pdb session not started; call start() first")
        started = time.monotonic()
        deadline = started + timeout
        for cmd in commands:
            if "\n" in cmd or "\r" in cmd:
                raise ValueError("a pdb command is a single line")
        while self._owed:
            owed = self.collect(max(0.0, deadline - time.monotonic()))
            if owed is not None and not owed.ok:
                return [owed]
        self.child.send("".join(cmd + "\n" for cmd in commands))
        replies = []
        for _ in commands:
            reply = self._read_reply(deadline, started)
            replies.append(reply)
            if not reply.ok:
                break
        return replies

    def post(self, command: str) -> None:
        """Write one command line now and read its reply later with :meth:`collect`.

        pdb starts on it at once (e.g. while the caller records the previous
        step); :meth:`send_many` reads owed replies before it sends anything, so
        the replies of later commands stay in order.

        Raises:
            RuntimeError: the session is not started.
            ValueError: the command is not a single line.
        """
        if self.child is None:
            raise RuntimeError("pdb session not started; call start() first")
        if "\n" in command or "\r" in command:
            raise ValueError("a pdb command is a single line")
        self.child.send(command + "\n")
        self._owed.append(command)

    @property
    def owed(self) -> tuple[str, ...]:
        """The posted commands whose replies are not read yet, oldest first."""
        return tuple(self._owed)

    def collect(self, timeout: float) -> PdbReply | None:
        """Read the reply of the oldest command written by :meth:`post`.

        Args:
            timeout: seconds to wait for its prompt.

        Returns:
            The :class:`PdbReply` (on ``"timeout"`` the command still runs: call
            :meth:`interrupt`), or None when no reply is owed.
        """
        if not self._owed or self.child is None:
            return None
        self._owed.pop(0)
        started = time.monotonic()
        return self._read_reply(started + timeout, started)

    def interrupt(self, grace: float = 1.0) -> PdbReply:
        """Send Ctrl-C (SIGINT through the terminal) and read what follows.

        pdb stops a running ``continue`` with "Program interrupted" and a frame
        line; elsewhere a KeyboardInterrupt traceback shows where the program
        was. Waits at most ``grace`` seconds for a prompt or the end.
        """
        if not self.alive:
            return PdbReply("", "exited")
        try:
            self.child.sendintr()
        except Exception:  # noqa: BLE001  best effort: the caller kills the process next
            return PdbReply("", "exited")
        started = time.monotonic()
        return self._read_reply(started + grace, started)

    def close(self) -> None:
        """Kill the pdb process (and its process group) and close the terminal. Idempotent."""
        child, self.child = self.child, None
        self._pending = ""
        self._owed = []
        if child is None:
            return
        with contextlib.suppress(Exception):  # already gone
            child.close(force=True)  # the terminals' spawns kill their whole group at once

    # -- reading ---------------------------------------------------------
    def _read_reply(self, deadline: float, started: float,
                    accept_plain: bool = False) -> PdbReply:
        """Read up to the next prompt, the deadline, or the end of the process.

        Before the token is set (and, with ``accept_plain``, while it is being
        set: pdb may refuse it) pdb's own ``(Pdb) `` counts as the prompt.
        """
        out = BoundedOutput(self.max_output)
        buf, self._pending = self._pending, ""

        def find(text: str):
            if self._token:
                for match in _TOKEN_PROMPT.finditer(text):
                    if match.group(1) == self._token:
                        return match
                if not accept_plain:
                    return None
            plain = _PROMPT_RE.search(text)
            if plain is not None:
                self._token = ""  # pdb kept its own prompt
            return plain

        status, _, rest = read_until(self.child, buf, out, find, _KEEP, deadline,
                                     on_read=self._confirm)
        if status == "found":
            status, self._pending = "prompt", rest
        return PdbReply(normalize(out.text()), status, time.monotonic() - started, out.dropped)

    def _confirm(self, buf: str) -> str:
        """Answer a question pdb asks inside a command (:data:`CONFIRMATIONS`)."""
        for question, answer in CONFIRMATIONS.items():
            if buf.endswith(question):
                self.child.send(answer + "\n")
                buf += answer + "\n"  # show the answer, as a terminal would
        return buf
