"""pdb: run one pdb command in a persistent debugging session of the debug entrypoint.

The session (a :class:`~dgym_tui.core.pdb.session.PdbSession`) starts lazily on
the first command and is restarted, with every stored breakpoint re-issued,
when the program ends, when a command times out, when pdb exits, and before
the next command after any file of the working copy changed
(``env.generation``). Breakpoint commands (``b``/``break``/``tbreak``,
``cl``/``clear``, ``disable``/``enable``, ``condition``) update the episode's
:class:`~dgym_tui.core.breakpoints.BreakpointStore` from pdb's own replies, so
the store holds exactly what pdb resolved.

Observation format: pdb's output with the working copy's absolute path
prefix removed (paths relative to the repository root), followed or preceded
by notes in square brackets about what the tool did, e.g.
``[pdb session restarted: the files changed since it started; 2 breakpoints
re-issued]`` or ``[timeout: `c` did not return to the (Pdb) prompt within
10 s ...]``.
"""

from __future__ import annotations

import re
import shlex
from typing import TYPE_CHECKING, Any, ClassVar

from dgym_tui.core.breakpoints import Breakpoint, BreakpointStore
from dgym_tui.core.tools.base import (
    EXAMPLE_FILE,
    EXAMPLE_LINE,
    Tool,
    ToolError,
    ToolOutput,
    register,
)
from dgym_tui.core.tools.view import numbered_lines
from dgym_tui.core.types import WorkspaceError

if TYPE_CHECKING:
    from dgym_tui.core.pdb.inspect import Inspection
    from dgym_tui.core.pdb.session import PdbReply, PdbSession

# The pdb session and the inspection (pexpect, the session's patterns) are imported at
# their first use, in the episode's thread, not with the tool: an app builds its
# environment (and so this tool) before its first frame.

#: pdb command aliases the tool treats specially, by canonical name.
ALIASES = {
    "b": "break", "break": "break", "tbreak": "tbreak",
    "cl": "clear", "clear": "clear",
    "disable": "disable", "enable": "enable", "condition": "condition",
    "restart": "restart", "run": "restart",
    "q": "quit", "quit": "quit", "exit": "quit",
    "commands": "refused", "interact": "refused", "debug": "refused",
}
_REFUSED_WHY = {
    "commands": "it reads several lines; use a conditional breakpoint "
                "(b file.py:LINE, CONDITION) instead",
    "interact": "it opens a Python prompt; evaluate expressions with p EXPR or !STATEMENT",
    "debug": "it opens a nested debugger; step into the call with s instead",
}
#: pdb's listing commands: no auto_list lines after them (they show the code already).
LIST_VERBS = frozenset({"l", "list", "ll", "longlist", "source"})
#: Seconds to wait for pdb to show where it was after Ctrl-C on a timeout.
INTERRUPT_GRACE = 1.0
#: Seconds a structured inspection (front ends' variables pane) may take.
INSPECT_TIMEOUT = 3.0
_PY_RE = re.compile(r"^python(\d+(\.\d+)?)?$")
_PY_OPTS_WITH_VALUE = {"-W", "-X", "--check-hash-based-pycs"}


def debug_command(entrypoint: str) -> str:
    """Derive the debug entrypoint (a pdb command line) from the entrypoint.

    Rules: ``python -m pytest ARGS`` (or ``pytest ARGS``) becomes
    ``python -m pdb -m pytest -s -p no:cacheprovider ARGS`` (``-s``: pytest
    must not capture the debugger's terminal; no cache files written into the
    working copy); ``python -m MOD ARGS`` becomes ``python -m pdb -m MOD ARGS``;
    ``python X.py ARGS`` becomes ``python -m pdb X.py ARGS``. Leading
    ``VAR=value`` assignments and interpreter options are kept.

    Args:
        entrypoint: the shell command that runs the tests or program.

    Returns:
        The command line that starts it under pdb.

    Raises:
        ToolError: the entrypoint is not one of the forms above (set
            ``debug_entrypoint`` explicitly).
    """
    try:
        words = shlex.split(entrypoint)
    except ValueError as exc:
        raise ToolError(f"cannot parse the entrypoint {entrypoint!r} ({exc}); "
                        "set debug_entrypoint explicitly") from None
    i = 0
    while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i]):
        i += 1
    prefix = words[:i]
    rest = words[i:]
    if rest and rest[0] == "pytest":
        rest = ["python", "-m", "pytest", *rest[1:]]
    if not rest or not _PY_RE.match(rest[0].rsplit("/", 1)[-1]):
        raise ToolError(f"cannot derive a pdb command from the entrypoint {entrypoint!r}; "
                        "set debug_entrypoint, e.g. 'python -m pdb -m pytest -s'")
    j = 1
    while j < len(rest) and rest[j].startswith("-") and rest[j] not in ("-m", "-c"):
        j += 2 if rest[j] in _PY_OPTS_WITH_VALUE else 1
    if j >= len(rest) or rest[j] == "-c" or (rest[j] == "-m" and j + 1 >= len(rest)):
        raise ToolError(f"cannot derive a pdb command from the entrypoint {entrypoint!r}; "
                        "set debug_entrypoint, e.g. 'python -m pdb script.py'")
    target = rest[j:]
    if target[0] == "-m" and target[1] == "pytest":
        args = target[2:]
        extra = [] if "-s" in args or "--capture=no" in args else ["-s"]
        if "no:cacheprovider" not in args:
            extra += ["-p", "no:cacheprovider"]
        target = ["-m", "pytest", *extra, *args]
    out = [*prefix, *rest[:j], "-m", "pdb", *target]
    return " ".join(shlex.quote(w) for w in out)


@register
class PdbTool(Tool):
    """Runs one pdb command per call in a session that persists across steps."""

    name = "pdb"
    instructions = (
        "Run ONE pdb command in a persistent debugging session of the program (started on "
        "the first call, stopped at its first line). Examples: "
        f"'b {EXAMPLE_FILE}:{EXAMPLE_LINE}' (breakpoint; "
        "add ', CONDITION' for a conditional one), 'c' (continue), 'n' (next line), "
        "'s' (step into), 'p EXPR' (print), 'l' / 'll' (list code), 'w' (stack), 'up' / "
        f"'down', 'cl 3' or 'cl {EXAMPLE_FILE}:{EXAMPLE_LINE}' (clear), 'b' (list breakpoints), "
        "'disable 2', 'restart'. Breakpoints persist across restarts and follow the code "
        "when files change. The session restarts when the program ends, when a command "
        "runs too long, or after any file changed.")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "command": {"type": "string",
                        "description": f"one pdb command, e.g. 'b {EXAMPLE_FILE}:{EXAMPLE_LINE}', "
                                       "'c', 'p x'"},
        },
        "required": ["command"],
        "additionalProperties": False,
    }
    #: ``auto_list``: after a command that stops pdb in a repository file, show this many
    #: lines before and after the frame's line (as ``view`` does); 0: off.
    settings: ClassVar[dict[str, Any]] = {"auto_list": 0}

    def __init__(self, env: Any, **options: Any) -> None:
        super().__init__(env, **options)
        self._stopped = False  # this step's output showed a frame line in the repository
        self._listing = True  # this step may end with the auto_list lines
        self.session: PdbSession | None = None
        self._generation: int | None = None
        self._numbers: dict[int, tuple[str, int]] = {}
        #: the pdb commands sent since the session last (re)started, as given (replayed
        #: by :meth:`fork_from`)
        self.history: list[str] = []
        self._issued: list[Breakpoint] = []  # the breakpoints that (re)start re-issued
        #: a front end reads pdb's current frame after every stop (:meth:`inspect`): ask for
        #: it as soon as pdb stops, so pdb prepares it while the step is being recorded
        self._read_ahead = False
        #: the session whose process keeps the inspection's compiled code (short commands)
        self._code_in: PdbSession | None = None

    # -- hooks -----------------------------------------------------------
    def on_reset(self) -> None:
        self._stop()

    def on_ready(self) -> None:
        from dgym_tui.core.pdb.session import PdbSession

        try:
            command = self.command
        except ToolError:
            return  # an entrypoint pdb cannot start: the first step says so
        PdbSession(self.env.terminal, command, max_output=self.env.max_output).prewarm()

    def close(self) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.session is not None:
            self.session.close()
        self.session = None
        self._generation = None
        self._numbers.clear()
        self.history, self._issued = [], []
        self.env.frame = None

    # -- paths -----------------------------------------------------------
    @property
    def command(self) -> str:
        """The debug entrypoint this tool starts."""
        return self.env.debug_entrypoint or debug_command(self.env.entrypoint)

    def _prefix(self) -> str:
        return self.env.to_abs(".").rstrip("/") + "/"

    def _relativize(self, text: str) -> str:
        return text.replace(self._prefix(), "")

    def _rel(self, path: str) -> str | None:
        """Workspace-relative path of a path pdb printed; None if outside or ignored."""
        rel = self.env.to_relative(path)
        if rel is None or rel == "." or self.env.workspace.is_ignored(rel):
            return None
        return rel

    def _workspace_file(self, name: str) -> str:
        """Resolve a file named in a command to a relative path; ToolError if refused."""
        ws = self.env.workspace
        if name.startswith("/"):
            rel = self.env.to_relative(name)
            if rel is None:
                raise ToolError(f"{name} is outside the repository; breakpoints can only be "
                                "set in repository files (give a path relative to its root)")
            name = rel
        rel = ws.canonical(name, must_exist=True)  # WorkspaceError: hidden / escapes
        if ws.kind(rel) == "folder":
            raise ToolError(f"{rel} is a folder; give a file, e.g. b {rel}/module.py:12")
        return rel

    # -- the session -----------------------------------------------------
    def _start(self, notes: list[str], why: str) -> PdbReply | None:
        """(Re)start the session and re-issue breakpoints; None if pdb could not start."""
        from dgym_tui.core.pdb.session import PdbSession, PdbStartError

        if self.session is not None:
            self.session.close()
        self._numbers.clear()
        self.history, self._issued = [], []
        self.env.frame = None
        self._generation = self.env.generation
        self.session = PdbSession(self.env.terminal, self.command,
                                  max_output=self.env.max_output)
        try:
            first = self.session.start(self.env.pdb_timeout)
        except PdbStartError as exc:
            self.session = None
            self._generation = None
            out = self._relativize(exc.output).rstrip()
            notes.append(f"[pdb could not start `{self.command}`: {exc}. The next pdb command "
                         f"tries again.]" + (f"\n{out}" if out else ""))
            return None
        count = self._reissue(notes)
        self._issued = self.env.breakpoints.entries()
        bps = f"; {count} breakpoint{'s' if count != 1 else ''} re-issued" if count else ""
        notes.append(f"[pdb session {why}{bps}]")
        self._set_frame(first.output)
        return first

    def _reissue(self, notes: list[str]) -> int:
        """Send every stored breakpoint in one batch; return how many pdb accepted."""
        from dgym_tui.core.pdb.session import BREAK_RE

        store = self.env.breakpoints
        entries = store.entries()
        if not entries:
            return 0
        replies = self.session.send_many(store.pdb_commands(self.env.to_abs),
                                         self.env.pdb_timeout)
        accepted, disable = 0, []
        for bp, reply in zip(entries, replies, strict=False):
            match = BREAK_RE.search(reply.output)
            if match:
                self._numbers[int(match["num"])] = (bp.path, bp.line)
                accepted += 1
                if not bp.enabled:
                    disable.append(match["num"])
            else:
                store.remove(bp.path, bp.line)
                why = self._relativize(reply.output).strip() or reply.status
                notes.append(f"[breakpoint {bp.key} could not be re-created and was removed: "
                             f"{why}]")
        if disable:
            self.session.send(f"disable {' '.join(disable)}", self.env.pdb_timeout)
        return accepted

    def _set_frame(self, output: str) -> None:
        from dgym_tui.core.pdb.session import last_frame

        frame = last_frame(output)
        if frame is not None:
            rel = self._rel(frame.path)
            self.env.frame = (rel, frame.line) if rel else None
            self._stopped = self._stopped or rel is not None

    # -- the tool --------------------------------------------------------
    def run(self, command: str = "", **_: Any) -> ToolOutput:
        """Run one pdb command; see the module docstring for the observation format.

        Args:
            command: one pdb command line.

        Returns:
            ToolOutput with the observation; ``data`` holds ``frame``
            (``[path, line]`` or None), ``restarted`` (bool) and, when pdb
            (re)started, ``start`` (``"preloaded"`` or ``"cold"``).

        Raises:
            ToolError: empty or multi-line command, a command that needs several
                lines, or a breakpoint outside the repository / in a hidden file.
        """
        from dgym_tui.core.pdb.session import POST_MORTEM_MARKER, program_ended

        command = command.strip()
        if not command:
            raise ToolError("empty pdb command; give one command, e.g. 'b file.py:12', 'c', "
                            "'n', 's', 'p x', 'l', 'w'")
        if "\n" in command or "\r" in command:
            raise ToolError("one pdb command per call; send the lines one at a time")
        verb, _sep, arg = command.partition(" ")
        arg = arg.strip()
        kind = ALIASES.get(verb)
        if kind == "refused":
            raise ToolError(f"the pdb command '{verb}' is not supported here: "
                            f"{_REFUSED_WHY[verb]}")
        notes: list[str] = []
        restarted = False
        self._stopped, self._listing = False, verb not in LIST_VERBS
        self._settle()

        # file edits made outside any step (another process, the user's editor)
        moves = self.env.breakpoints.remap_changed(self.env.workspace)
        if moves:
            notes.append("[files changed outside the tools; breakpoints moved: " + ", ".join(
                f"{m.path}:{m.old_line} -> " + (str(m.new_line) if m.new_line else "removed")
                for m in moves) + "]")
            if self.session is not None:
                self._generation = None  # pdb's breakpoints are at the old lines: restart
        alive = self.session is not None and self.session.alive
        if kind == "quit":
            self._stop()
            return ToolOutput("[pdb session ended; the next pdb command starts a new one]",
                              data={"frame": None, "restarted": False})
        if kind == "restart" or not alive or self._generation != self.env.generation:
            why = ("restarted" if kind == "restart" else
                   "started" if self.session is None else
                   "restarted: pdb had exited" if not alive else
                   "restarted: the files changed since it started")
            first = self._start(notes, why)
            restarted = True
            if first is None:
                return self._output(notes, "", [], restarted)
            if kind == "restart":
                return self._output(notes, first.output, [], restarted)
            head = self._relativize(first.output).rstrip()
            if head:
                notes.append(head)

        sent = self._translate(kind, arg, command)
        reply = self.session.send(sent, self.env.pdb_timeout)
        self.history.append(command)  # a restart below empties it again
        after: list[str] = []
        body = reply.output
        if reply.status == "timeout":
            body, restarted = self._on_timeout(command, reply, after), True
        elif reply.status == "exited":
            self._start(after, "restarted: pdb exited")
            restarted = True
        else:
            self._track(kind, arg, reply.output, after)
            self._set_frame(reply.output)
            ended = program_ended(reply.output)
            if ended:
                body = _cut_after_end(body)
                first = self._start(after, f"restarted: {ended}")
                restarted = True
                if first is not None:
                    after.append(self._relativize(first.output).rstrip())
            elif POST_MORTEM_MARKER in reply.output:
                after.append("[post-mortem: pdb stopped where the uncaught exception was "
                             "raised; inspect with p / w / up / down; c restarts the program]")
            if not ended and self._read_ahead and self.session.alive:
                self.session.post(self._inspect_command())
        return self._output(notes, body, after, restarted)

    def _output(self, before: list[str], body: str, after: list[str],
                restarted: bool) -> ToolOutput:
        parts = [*before, self._relativize(body).rstrip("\n"), *after, self._auto_list()]
        text = "\n".join(p for p in parts if p)
        if not text:
            text = "[pdb printed nothing]"
        frame = list(self.env.frame) if self.env.frame else None
        data: dict[str, Any] = {"frame": frame, "restarted": restarted}
        if restarted and self.session is not None and self.session.started_as:
            data["start"] = self.session.started_as
        return ToolOutput(text, data=data)

    def _auto_list(self) -> str:
        """The ``auto_list`` lines around the frame pdb stopped at in this step; "" when off,
        when pdb did not stop in a repository file, or after a listing command."""
        around = int(self.options.get("auto_list") or 0)
        frame = self.env.frame
        if around <= 0 or not self._stopped or not self._listing or frame is None:
            return ""
        rel, line = frame
        try:
            rel, lines, _ = self.env.workspace.read_lines(rel, max(1, line - around),
                                                              line + around)
        except (WorkspaceError, OSError, ValueError):
            return ""
        first = max(1, line - around)
        rows, _ = numbered_lines(self.env, rel, first, lines)
        return "\n".join([f"[lines around {rel}:{line}]", *rows]) if rows else ""

    def _on_timeout(self, command: str, reply: PdbReply, after: list[str]) -> str:
        """Interrupt the runaway command, say where it was, restart the session."""
        from dgym_tui.core.pdb.session import stack_frames

        stopped = self.session.interrupt(INTERRUPT_GRACE)
        text = stopped.output
        if stopped.ok:  # pdb stopped inside its own signal handler: ask for the stack once
            text += self.session.send("where", INTERRUPT_GRACE).output
        frames = stack_frames(text)
        ours = [f for f in frames if self._rel(f.path)]
        where = ""
        if ours or frames:
            frame = (ours or frames)[-1]
            rel = self._rel(frame.path) or frame.path
            where = f" It was at {rel}:{frame.line} in {frame.func}()."
        after.append(f"[timeout: `{command}` did not return to the (Pdb) prompt within "
                     f"{self.env.pdb_timeout:g} s (an endless loop, or waiting for input?)."
                     f"{where} The pdb session was killed.]")
        self._start(after, "restarted")
        return reply.output

    # -- breakpoint commands ---------------------------------------------
    def _translate(self, kind: str | None, arg: str, command: str) -> str:
        """Rewrite file locations in breakpoint commands to the paths pdb sees; refuse others."""
        if kind in ("break", "tbreak") and arg:
            loc, comma, cond = arg.partition(",")
            loc = loc.strip()
            if ":" in loc:
                name, _, line = loc.rpartition(":")
                rel = self._workspace_file(name.strip())
                loc = f"{self.env.to_abs(rel)}:{line.strip()}"
            elif loc.isdigit() and self.env.frame is None:
                raise ToolError("pdb is not stopped in a repository file, so a bare line number "
                                "has no file; give one: b path/to/file.py:LINE")
            return f"{kind} {loc}{', ' + cond.strip() if comma else ''}"
        if kind == "clear" and ":" in arg:
            name, _, line = arg.rpartition(":")
            rel = self._workspace_file(name.strip())
            return f"clear {self.env.to_abs(rel)}:{line.strip()}"
        return command

    def _track(self, kind: str | None, arg: str, output: str, after: list[str]) -> None:
        """Update the breakpoint store from pdb's reply to any command."""
        from dgym_tui.core.pdb.session import BREAK_RE, DELETED_RE, TOGGLED_RE

        store = self.env.breakpoints
        if kind in ("break", "tbreak") and arg:
            match = BREAK_RE.search(output)
            if match:
                num, line = int(match["num"]), int(match["line"])
                rel = self._rel(match["path"])
                if rel is None:  # e.g. `b json.dumps`: resolved outside the repository
                    self.session.send(f"clear {num}", self.env.pdb_timeout)
                    after.append(f"[breakpoint {num} at {match['path']}:{line} removed: only "
                                 "files of the repository can have breakpoints]")
                else:
                    _, comma, cond = arg.partition(",")
                    store.add(rel, line, cond.strip() if comma else None,
                              temporary=kind == "tbreak")
                    self._replace_older(num, rel, line, after)
                    self._numbers[num] = (rel, line)
        for match in DELETED_RE.finditer(output):
            loc = self._numbers.pop(int(match["num"]), None)
            if loc is not None and loc not in self._numbers.values():
                store.remove(*loc)
        for match in TOGGLED_RE.finditer(output):
            loc = self._numbers.get(int(match["num"]))
            if loc is not None:
                store.set_enabled(*loc, match["what"] == "Enabled")
        if kind == "condition":
            number, _, cond = arg.partition(" ")
            loc = self._numbers.get(int(number)) if number.isdigit() else None
            bp = store.get(*loc) if loc else None
            if bp is not None and ("New condition set" in output or "now unconditional" in output):
                store.add(bp.path, bp.line, cond.strip() or None, enabled=bp.enabled,
                          temporary=bp.temporary)


    def _replace_older(self, num: int, rel: str, line: int, after: list[str]) -> None:
        """Keep one breakpoint per line, as the store does: a new one replaces older ones."""
        older = [n for n, loc in self._numbers.items() if loc == (rel, line) and n != num]
        if not older:
            return
        self.session.send(f"clear {' '.join(map(str, older))}", self.env.pdb_timeout)
        for n in older:
            del self._numbers[n]
        after.append(f"[breakpoint {', '.join(map(str, older))} at {rel}:{line} replaced by "
                     f"breakpoint {num}]")


    # -- forking -----------------------------------------------------------
    def fork_from(self, parent: PdbTool) -> bool:
        """Bring this tool (of a just-forked environment) to where ``parent``'s pdb stands.

        When ``parent``'s session is alive and current (no file changed since it
        started), a session is started here with the breakpoints ``parent``'s
        started with, and every pdb command ``parent`` ran since is run again
        (outputs dropped); this environment's breakpoint store is kept as it
        was given. Otherwise nothing starts: the next pdb command starts pdb.
        A program whose path depends on time or chance may stop elsewhere.

        Args:
            parent: the pdb tool of the environment this one was forked from.

        Returns:
            True when the replayed session stands at ``parent``'s frame (or
            nothing needed replaying); False when it started elsewhere or not at all.
        """
        session = parent.session
        if session is None or not session.alive or parent._generation != parent.env.generation:
            return True
        given = self.env.breakpoints
        first = BreakpointStore(self.env.workspace)
        for bp in parent._issued:
            first.add(bp.path, bp.line, bp.condition, enabled=bp.enabled,
                      temporary=bp.temporary)
        self.env.breakpoints = first
        try:
            if self._start([], "started") is None:
                return False
            for command in parent.history:
                try:
                    self.run(command)
                except (ToolError, WorkspaceError):  # refused the same way in the parent
                    continue
        finally:
            self.env.breakpoints = given
        return self.env.frame == parent.env.frame

    # -- structured inspection (front ends only; never an observation) ------
    def inspect(self, frame: int | None = None, scope: str = "locals",
                timeout: float = INSPECT_TIMEOUT) -> Inspection | None:
        """Read the stack, a frame's variables and pdb's breakpoints as data.

        One hidden command (:func:`~dgym_tui.core.pdb.inspect.inspect_command`)
        is sent to the running session; nothing is recorded, the session is
        never started or restarted for it, and pdb's current frame stays.
        Once pdb's current frame was read this way (a front end's panes), every
        later command that leaves pdb stopped also asks for it as soon as pdb
        answers (:meth:`PdbSession.post`), and the next such call reads that
        answer: pdb prepares it while the step is recorded. The first inspection of
        a pdb process keeps the compiled code there; the next ones send a short line
        (``inspect_command(cached=True)``; the whole code again when that reply holds
        no inspection). An agent's episode, which never calls this, never runs it.

        Args:
            frame: stack index whose variables to read (None: pdb's current frame).
            scope: ``"locals"`` or ``"globals"``.
            timeout: seconds to wait; a hostile ``__repr__`` that runs longer is
                interrupted (pdb then prints where it was) and None is returned.

        Returns:
            The :class:`~dgym_tui.core.pdb.inspect.Inspection` (paths relative
            to the repository where they lie inside it), or None when no pdb
            session is stopped at a prompt or the reply held no inspection.
        """
        from dgym_tui.core.pdb.inspect import parse_inspection

        session = self.session
        if session is None or not session.alive or self._generation != self.env.generation:
            return None
        current = frame is None and scope == "locals"
        self._read_ahead = self._read_ahead or current
        command = self._inspect_command(frame, scope)
        if current and session.owed == (command,):
            reply = session.collect(timeout)  # asked for when pdb stopped (run)
        else:
            self._settle()
            reply = session.send(command, timeout)
        for attempt in (1, 2):
            if reply is None:
                return None
            if reply.status == "timeout":
                session.interrupt(INTERRUPT_GRACE)
                return None
            if not reply.ok:
                return None
            found = parse_inspection(reply.output, self._rel, scope)
            if found is not None:
                self._code_in = session  # kept there (or already was)
                return found
            if self._code_in is not session or attempt == 2:
                return None
            # the kept code is gone or was replaced (the program's doing): send it all
            self._code_in = None
            reply = session.send(self._inspect_command(frame, scope), timeout)
        return None

    def _inspect_command(self, frame: int | None = None, scope: str = "locals") -> str:
        """The inspection's command line: short once this session's process keeps the code."""
        from dgym_tui.core.pdb.inspect import inspect_command

        return inspect_command(frame=frame, scope=scope, cached=self._code_in is self.session)

    def _settle(self) -> None:
        """Read and drop an inspection asked for ahead that nobody read (a step came
        first); interrupt it when it runs longer than :data:`INSPECT_TIMEOUT`."""
        session = self.session
        if session is None or not session.owed:
            return
        reply = session.collect(INSPECT_TIMEOUT)
        if reply is not None and reply.status == "timeout":
            session.interrupt(INTERRUPT_GRACE)


def _cut_after_end(output: str) -> str:
    """Drop what pdb printed after its end-of-program line (its own in-process restart)."""
    from dgym_tui.core.pdb.session import ENDED_MARKERS

    cut = len(output)
    for marker in (m for m, _ in ENDED_MARKERS if m in output):
        eol = output.find("\n", output.find(marker))
        cut = min(cut, len(output) if eol < 0 else eol + 1)
    return output[:cut]


__all__ = ["PdbTool", "debug_command"]
