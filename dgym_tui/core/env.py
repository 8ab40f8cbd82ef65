"""RepoEnv: the Gymnasium-style debugging environment.

An episode starts with :meth:`RepoEnv.reset` (fresh working copy of the
repository, a terminal, one run of the entrypoint) and goes on with
:meth:`RepoEnv.step`, one tool call per step, until ``submit``. Invalid
actions never raise: they come back as a ``StepResult`` with ``error=True``
and an observation saying what to do.

Example::

    from dgym_tui import RepoEnv, ToolCall

    with RepoEnv("path/to/repo", entrypoint="python -m pytest test.py") as env:
        r = env.reset()
        r = env.step(ToolCall(name="view", arguments={"path": "code.py"}))
"""

from __future__ import annotations

import errno
import functools
import json
import logging
import os
import posixpath
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self

from dgym_tui.core.breakpoints import BreakpointStore
from dgym_tui.core.errors import first_line
from dgym_tui.core.evaluation.summary import describe_score, is_resolved, summarize
from dgym_tui.core.safetext import strip_controls
from dgym_tui.core.terminals import cleanup
from dgym_tui.core.terminals.base import DEFAULT_MAX_OUTPUT, RunResult, Terminal, TerminalError
from dgym_tui.core.tools import tools_for
from dgym_tui.core.tools.base import Tool, ToolError, ToolOutput
from dgym_tui.core.types import (
    DEFAULT_TASK,
    EvalSummary,
    StepResult,
    ToolCall,
    WorkspaceError,
    decode_arguments,
    example_arguments,
)

if TYPE_CHECKING:  # the working copy's module is the reset's (the episode's thread)
    from dgym_tui.core.fs.workspace import Workspace

log = logging.getLogger(__name__)

#: Terminal names RepoEnv accepts: ``local`` (trusted code), ``bwrap`` (a local
#: sandbox), ``docker`` (a container per episode).
TERMINALS = ("local", "bwrap", "docker")

#: Tools every environment gets unless ``tools=`` says otherwise.
DEFAULT_TOOLS = ("listdir", "view", "eval", "pdb", "rewrite", "grep", "submit")

#: Default of ``RepoEnv(max_workspace_bytes=...)``: disk space of the working copy, in bytes.
DEFAULT_MAX_WORKSPACE_BYTES = 1 << 30

#: Tools that run code in the sandbox: the working copy's size is measured after them.
CODE_TOOLS = frozenset({"eval", "submit", "pdb", "bash"})

#: Seconds :meth:`RepoEnv.close` from another thread waits for a running step to return
#: after stopping its commands (a step's host-side work is bounded: grep's budget is 10 s).
STEP_GRACE = 60.0

#: Command that runs the tests when none is given (the one default every front end uses).
DEFAULT_ENTRYPOINT = "python -m pytest -q"



class RepoEnv:
    """A debugging environment over a repository folder.

    Args:
        path: the repository folder (host path). It is copied for every
            episode and never written, except by :meth:`apply_to_source`.
        entrypoint: shell command that runs the tests, e.g.
            ``"python -m pytest test.py"``; run in the working copy's root.
        terminal: ``"local"`` (host subprocesses with your rights: trusted code
            only), ``"bwrap"`` (host subprocesses in a bubblewrap sandbox: no
            network, system read-only, ignored files masked), ``"docker"`` (a
            container per episode, needs ``image``), or a ``Terminal`` instance.
        image: Docker image tag for ``terminal="docker"``; None: the sandbox
            image ``dgym-tui/sandbox:test`` (scripts/setup_docker.sh builds it).
        tools: names of registered tools to offer (see ``DEFAULT_TOOLS``).
        debug_entrypoint: command the pdb tool starts; None derives it from
            ``entrypoint``.
        task: text telling the agent what to do; shown in the reset observation.
        ignore: extra gitignore-style patterns hidden from the agent (added to
            the repository's ``.debugignore``).
        readonly: extra gitignore-style patterns the agent may not rewrite
            (added to ``.debugreadonly``).
        eval_timeout: seconds the entrypoint may run.
        pdb_timeout: seconds one pdb command may take.
        max_output: cap on command output kept in observations, in bytes.
        setup_commands: shell commands run in the working copy after the
            terminal starts and before the initial eval.
        terminal_options: extra keyword arguments for the Docker terminal
            (``workdir``, ``network``, ``mem_limit``, ``pids_limit``, ``cpus``,
            ``fork_spare``: "lazy", "eager" or "off", when the container a
            fork adopts starts, see ``DockerTerminal``); e.g.
            ``{"workdir": "/testbed"}`` for images that installed the repository
            there. For bwrap: ``network``, ``limits``. For every terminal given by
            name (local too): ``overlay`` (default True: the working copy is an
            overlay of the original, nothing copied at reset, where the kernel
            allows it, and for docker when dgym runs as root; False: a copy; see
            docs/performance.md and docs/security.md).
        grader: ``grader(result, terminal) -> EvalSummary | None`` scores each
            run of the entrypoint instead of pytest's summary line (e.g. a
            benchmark harness's log parser and resolution rule); ``result`` is
            the entrypoint's ``RunResult``, ``terminal`` the episode's terminal
            (to read a full log the output cap cut). None, or a grader
            returning None, falls back to pytest's summary line.
        mcp_servers: MCP servers whose tools join ``tools`` when the first episode
            starts (see :mod:`dgym_tui.core.tools.mcp_client`); they run on the host,
            outside the sandbox.
        tool_options: ``{tool name: {option: value}}`` for tools' ``settings``
            (e.g. ``{"bash": {"timeout": 30}}``, ``{"pdb": {"auto_list": 3}}``).
        max_workspace_bytes: disk space the working copy may take, in bytes
            (measured after every step of a tool that runs code, and before
            every eval, through folder descriptors); past it the step's
            observation ends saying so and evals refuse to run. None: no limit.
        hidden: host paths (files or folders) that sandboxed commands must not
            read besides the ignored files: the bwrap terminal masks them (the
            Docker terminal never mounts them; the local terminal cannot hide
            anything). E.g. the folder a task was staged from.
        preload: start evals and pdb sessions from a spare Python that imported
            pytest ahead of time, in the same sandbox, environment and working
            folder as a cold start (``local`` and ``bwrap``; see
            :mod:`dgym_tui.core.terminals.preload`); ``False`` always starts cold.
            None: on unless the environment variable ``DGYM_PRELOAD`` is ``0``.
            Each eval's and pdb start's step says which it was (``StepResult.start``).

    Attributes:
        workspace: the episode's :class:`Workspace` (None before reset).
        terminal: the episode's :class:`Terminal` (None before reset).
        tools: ``{name: Tool instance}``.
        breakpoints: the episode's :class:`BreakpointStore`.
        frame: ``(relative path, line)`` of the stopped pdb frame, set by the
            pdb tool; None otherwise.
        generation: incremented by every step that changed a visible file.
        steps: the number of steps of the episode so far (0 after reset).
        last: the last ``StepResult`` (None before reset).
        last_eval: the last eval's summary (None before any eval).
        last_eval_output: the last eval's output text.

    Raises:
        ValueError: ``path`` is not a folder, ``terminal`` is unknown, or a
            tool name is not registered (message lists the known ones).
    """

    def __init__(self, path: str | os.PathLike, entrypoint: str = DEFAULT_ENTRYPOINT,
                 terminal: str | Terminal = "local", image: str | None = None,
                 tools: Sequence[str] = DEFAULT_TOOLS, debug_entrypoint: str | None = None,
                 task: str = "", ignore: Iterable[str] = (), readonly: Iterable[str] = (),
                 eval_timeout: float = 120, pdb_timeout: float = 30,
                 max_output: int = DEFAULT_MAX_OUTPUT,
                 setup_commands: Sequence[str] = (),
                 terminal_options: dict[str, Any] | None = None,
                 grader: Callable[[RunResult, Terminal], EvalSummary | None] | None = None,
                 hidden: Iterable[str | os.PathLike] = (),
                 tool_options: dict[str, dict[str, Any]] | None = None,
                 mcp_servers: Sequence[dict[str, Any]] = (),
                 max_workspace_bytes: int | None = DEFAULT_MAX_WORKSPACE_BYTES,
                 preload: bool | None = None) -> None:
        tools, ignore, readonly, hidden = list(tools), list(ignore), list(readonly), list(hidden)
        setup_commands, mcp_servers = list(setup_commands), list(mcp_servers)
        # what fork() builds its twin from
        self._arguments = {name: value for name, value in locals().items()
                           if name not in ("self", "__class__")}
        self.path = os.fspath(path)
        if not os.path.isdir(self.path):
            what = "is a file, not a folder" if os.path.isfile(self.path) else "does not exist"
            raise ValueError(f"repository folder {self.path!r} {what}; "
                             "give the path of a folder")
        if not isinstance(terminal, Terminal) and terminal not in TERMINALS:
            raise ValueError(f"unknown terminal {terminal!r}; use 'local', 'bwrap', 'docker' "
                             "or a Terminal instance")
        if terminal == "docker" and not image:
            from dgym_tui.core.terminals.docker import DEFAULT_IMAGE

            image = DEFAULT_IMAGE  # the sandbox image scripts/setup_docker.sh builds
        self.entrypoint = entrypoint
        self.debug_entrypoint = debug_entrypoint
        self.terminal_spec = terminal
        self.image = image
        self.task = task or DEFAULT_TASK
        self.ignore = list(ignore)
        self.readonly = list(readonly)
        self.eval_timeout = eval_timeout
        self.pdb_timeout = pdb_timeout
        self.max_output = max_output
        self.max_workspace_bytes = max_workspace_bytes
        self.preload = preload
        #: ``(terminal, command, report path)`` of the next eval, whose spare is warming
        self._next_eval: tuple[Terminal, str, str | None] | None = None
        #: how the last eval's process started: "preloaded" or "cold" ("" before any)
        self.last_eval_start = ""
        self.setup_commands = list(setup_commands)
        self.terminal_options = dict(terminal_options or {})
        self.grader = grader
        self.hidden = [os.fspath(p) for p in hidden]

        registry = tools_for(tools)
        unknown = [name for name in tools if name not in registry]
        if unknown:
            raise ValueError(f"unknown tool(s) {', '.join(unknown)}; known tools: "
                             f"{', '.join(sorted(registry))}")
        self.tool_options = {name: dict(values) for name, values in (tool_options or {}).items()}
        stray = [name for name in self.tool_options if name not in tools]
        if stray:
            raise ValueError(f"tool_options name tool(s) not offered: {', '.join(stray)}; "
                             f"offered: {', '.join(tools)}")
        self.tools: dict[str, Tool] = {name: registry[name](self, **self.tool_options.get(name, {}))
                                       for name in tools}
        self._mcp_specs: list[Any] = []
        if mcp_servers:
            from dgym_tui.core.tools.mcp_client import parse_servers

            self._mcp_specs = parse_servers(mcp_servers)
        #: the ``mcp_servers`` settings, checked (JSON-ready; trajectory headers keep them)
        self.mcp_servers: list[dict[str, Any]] = [spec.to_dict() for spec in self._mcp_specs]
        self._mcp_connections: list[Any] = []

        self.workspace: Workspace | None = None
        self.terminal: Terminal | None = None
        self.breakpoints = BreakpointStore()
        self.frame: tuple[str, int] | None = None
        self.generation = 0
        self.steps = 0
        self.last: StepResult | None = None
        self.last_eval: EvalSummary | None = None
        self.last_eval_output = ""
        self.done = False
        self._closed = False
        # one thread at a time ends an episode (close() from another thread during a reset):
        # the working copy's descriptors are closed once, never a number reused meanwhile
        self._ending = threading.RLock()
        # held by a step, fork, patch, apply-back: close() from another thread waits for it,
        # so the working copy's descriptors are never closed (and their numbers reused)
        # under a running tool
        self._stepping = threading.RLock()
        self._grading_terminal: Terminal | None = None  # while submit grades in a fresh copy

    # --------------------------------------------------------------- episode
    def reset(self, on_copy: Callable[[], None] | None = None, ready: bool = True) -> StepResult:
        """Start a fresh episode: new working copy, terminal, breakpoints; run the entrypoint.

        Args:
            on_copy: called once the working copy exists, before the terminal starts and
                the first eval runs (which may take up to ``eval_timeout``): a front end
                shows the files meanwhile. What it raises is logged and ignored.
            ready: also :meth:`get_ready` for the first step before returning; False
                leaves it to the caller (a front end shows the result first).

        Returns:
            A ``StepResult`` whose observation holds the task, the tool list
            and the initial eval output; score / max_score come from that eval.

        Raises:
            WorkspaceError: the repository cannot be copied.
            TerminalError: the terminal cannot start (e.g. Docker unreachable), or
                :meth:`close` ran from another thread while the episode started (what
                the start had made is removed; whatever failed under it is the cause).
        """
        started = time.monotonic()
        self._end_episode()
        self._closed = False
        try:
            result = self._start_episode(on_copy, started)
            if self._closed:  # during the first eval: its result is cut off
                raise TerminalError("the environment was closed while it started")
            if ready:
                self.get_ready()
            return result
        except Exception as exc:
            if not self._closed:
                raise
            # close() ran meanwhile and may have missed what was not made yet
            self._end_episode()
            cleanup.unregister(self)
            if isinstance(exc, TerminalError):
                raise
            raise TerminalError("the environment was closed while it started") from exc

    def _start_episode(self, on_copy: Callable[[], None] | None, started: float) -> StepResult:
        """:meth:`reset` past ending the last episode (same arguments and result)."""
        if self._mcp_specs and not self._mcp_connections:
            self._open_mcp_servers()
        cleanup.register(self)  # SIGTERM / exit also delete the working copy
        self.workspace = self._new_workspace()
        self.breakpoints = BreakpointStore(self.workspace)
        self.frame = None
        self.generation = 0
        self.steps = 0
        self.last_eval = None
        self.last_eval_output = ""
        self.done = False
        if on_copy is not None:
            try:
                on_copy()
            except Exception:
                log.exception("reset's on_copy callback failed")
        notes = self._start_terminal()
        summary, output = self.run_eval()
        parts = [f"Task:\n{self.task}",
                 f"Tools: {', '.join(self.tools)}",
                 *notes,
                 f"Initial eval of `{self.entrypoint}`:\n{output.rstrip()}",
                 describe_score(summary)]
        self.workspace.refresh()
        self.last = self._result("\n\n".join(parts), None, started)
        self.last.start = self.last_eval_start
        return self.last

    def get_ready(self) -> None:
        """Prepare the first step after :meth:`reset`'s eval (``reset`` calls it unless told
        not to): build the tools' argument checks (jsonschema's import: ~50 ms of CPU; a
        front end resets in a worker: not at step 1, and not before the eval, where they
        shared the GIL with its first frame) and give each tool its head start
        (:meth:`~dgym_tui.core.tools.base.Tool.on_ready`: the pdb tool's preloaded spare).
        A step builds the checks itself when this did not run.

        Raises:
            Whatever building the argument checks raises (a tool's invalid schema).
        """
        self._validators  # noqa: B018
        for tool in self.tools.values():
            try:
                tool.on_ready()
            except Exception:  # noqa: BLE001  a head start only: the step does it anyway
                log.exception("tool %s could not get ready", tool.name)

    def _start_terminal(self, spare: Terminal | None = None) -> list[str]:
        """Start a terminal on the working copy, run the setup commands, reset the tools.

        Args:
            spare: a docker fork spare (``DockerTerminal.take_fork_spare``) the new
                terminal adopts; it owns it from then on.

        Returns:
            Notes for the observation (the terminal's, failed setup commands).
        """
        terminal = self.terminal = self._make_terminal(self.workspace)
        adopt = getattr(terminal, "adopt_spare", None)
        if spare is not None:
            if adopt is not None:
                adopt(spare)
            else:
                spare.close()
        self._stop_if_closed(terminal)
        terminal.start(str(self.workspace.root))
        self._stop_if_closed(terminal)
        from dgym_tui.core.evaluation import pytest_plugin  # the reset's: not an app's first frame

        pytest_plugin.install(self.terminal)
        notes = [*self.terminal.notes, *self._run_setup(self.terminal)]
        for tool in self.tools.values():
            tool.on_reset()
        return notes

    def _stop_if_closed(self, terminal: Terminal) -> None:
        """Close ``terminal`` and raise when :meth:`close` ran from another thread (a give-up
        while the episode starts): close could not see the terminal (not set yet), or closed
        it before its start opened it again. Nothing may outlive the episode.

        Raises:
            TerminalError: the environment was closed.
        """
        if self._closed:
            self.terminal = None
            terminal.close()
            raise TerminalError("the environment was closed while it started")

    def fork(self) -> RepoEnv:
        """Branch the live episode: a new, independent environment at the current state.

        The twin gets a working copy of its own holding the current files
        (copied from this one through folder descriptors, never following a
        link the sandbox planted), the same original (its ``patch()`` equals
        this one's), breakpoints, step count, last result and eval, and a
        terminal of its own (setup commands run again; no eval). When pdb is
        stopped here in a current session, the twin's pdb is started and the
        pdb commands since the last restart are replayed, so it stops at the
        same frame (a program whose path depends on time or chance may stop
        elsewhere: a warning is logged). A bash session is not carried over.
        Each environment then changes alone; close each one.

        Returns:
            The new :class:`RepoEnv` (close it; it outlives nothing of this one).

        Raises:
            RuntimeError: no episode is running, or the terminal was given as
                an instance (it cannot be duplicated).
            WorkspaceError / OSError: the working copy cannot be copied.
            TerminalError: the twin's terminal cannot start.
        """
        with self._stepping:  # close() from another thread waits for the copy
            return self._fork()

    def _fork(self) -> RepoEnv:
        if self.workspace is None or self.terminal is None:
            raise RuntimeError("no episode is running; call reset() first")
        if isinstance(self.terminal_spec, Terminal):
            raise RuntimeError("fork() needs the terminal given by name ('local', 'bwrap', "
                               "'docker'); a Terminal instance cannot be duplicated")
        self._catch_up()
        twin = type(self)(**self._arguments)
        cleanup.register(twin)
        # a docker terminal's spare container (started after its last fork): the twin's
        # terminal adopts it, its working copy shows the files as the spare's user
        take = getattr(self.terminal, "take_fork_spare", None)
        spare = take() if take is not None else None
        try:
            if twin._mcp_specs:
                twin._open_mcp_servers()
            twin.workspace = self.workspace.fork(
                run_as=spare.run_as if spare is not None
                else self._overlay_ids(self.workspace.overlay is not None))
            twin.breakpoints = self.breakpoints.copy(twin.workspace)
            twin.generation, twin.steps, twin.done = self.generation, self.steps, self.done
            twin.last, twin.last_eval = self.last, self.last_eval
            twin.last_eval_output = self.last_eval_output
            twin._start_terminal(spare)
            spare = None  # the twin's terminal owns it
            twin.workspace.refresh()
            mine, theirs = self.tools.get("pdb"), twin.tools.get("pdb")
            if mine is not None and theirs is not None and hasattr(theirs, "fork_from") \
                    and not theirs.fork_from(mine):
                log.warning("the fork's pdb did not reach the frame %s (it is at %s)",
                            self.frame, twin.frame)
        except BaseException:
            twin.close()
            raise
        finally:
            if spare is not None:  # the twin's terminal never got it
                spare.close()
        prepare = getattr(self.terminal, "prepare_fork_spare", None)
        if prepare is not None:  # forked once, likely again: the next fork's container
            prepare()
        return twin

    def step(self, action: ToolCall | dict[str, Any]) -> StepResult:
        """Carry out one tool call and return what happened.

        Args:
            action: a ``ToolCall`` or a dict ``{"name", "arguments", "id"?}``;
                ``arguments`` may be a dict or a JSON string.

        Returns:
            A ``StepResult``. Refused actions (unknown tool, bad arguments,
            a path outside the working copy, ...) have ``error=True`` and an
            observation saying what to do; a crash inside a tool gives
            ``"internal error in tool NAME: ..."`` and the env stays usable.

        Raises:
            RuntimeError: :meth:`reset` was not called (or the env was closed).
        """
        with self._stepping:
            if self.workspace is None or self.terminal is None:
                raise RuntimeError("no episode is running; call reset() first")
            return self._guarded_step(action)

    def _guarded_step(self, action: ToolCall | dict[str, Any]) -> StepResult:
        started = time.monotonic()
        self.steps += 1
        try:
            return self._step(action, started)
        except Exception as exc:  # a step never raises: hostile code can break anything
            log.exception("step failed")
            name = action.name if isinstance(action, ToolCall) else None
            what = f"tool {name}" if isinstance(name, str) else "the step"
            call = action if isinstance(action, ToolCall) else None
            self.last = StepResult(observation=strip_controls(f"internal error in {what}: "
                                                              f"{type(exc).__name__}: {exc}"),
                                   action=call, error=True,
                                   elapsed=time.monotonic() - started)
            return self.last

    def _step(self, action: ToolCall | dict[str, Any], started: float) -> StepResult:
        if isinstance(action, dict):
            if not isinstance(action.get("name"), str):
                return self._refuse("an action needs a tool name: give "
                                    "{\"name\": <tool>, \"arguments\": {...}}", None, started)
            action = ToolCall.from_dict(action)
        arguments, problem = self._check(action)
        if problem:
            return self._refuse(problem, action, started)

        error = False
        try:
            output = self.tools[action.name].run(**arguments)
        except (ToolError, WorkspaceError) as exc:
            output, error = ToolOutput(str(exc)), True
        except TerminalError as exc:  # its commands were stopped (close, stop_commands)
            log.info("tool %s: %s", action.name, exc)
            output, error = ToolOutput(strip_controls(str(exc))), True
        except Exception as exc:  # a tool bug must not end the episode
            log.exception("tool %s failed", action.name)
            output = ToolOutput(f"internal error in tool {action.name}: "
                                f"{type(exc).__name__}: {exc}")
            error = True
        self._catch_up()
        observation = output.observation
        if action.name in CODE_TOOLS:
            over = self._over_size_limit()
            if over:  # (an eval it refused says so already)
                error = True
                if over not in observation:
                    observation = f"{observation}\n\n[{over}]"
        if output.done:
            self.done = True
        self.last = self._result(observation, action, started, error=error,
                                 done=output.done, data=output.data)
        return self.last

    def _over_size_limit(self, workspace: Workspace | None = None) -> str:
        """One line when the working copy takes more than ``max_workspace_bytes``; "" if not."""
        limit = self.max_workspace_bytes
        workspace = workspace or self.workspace
        if not limit or workspace is None:
            return ""
        try:
            used = workspace.disk_usage()
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # safefs.walk: a chain deeper than its descriptors
                return (f"the working copy cannot be measured: {str(exc.strerror)[:160]}; "
                        "evals do not run until they are deleted")
            return (f"the working copy cannot be measured ({first_line(exc, 160)}); "
                    "evals do not run until it can be")
        if used <= limit:
            return ""
        return (f"the working copy takes {_mib(used)}, over its limit of {_mib(limit)}: "
                "evals do not run until what your commands wrote is deleted")

    def _catch_up(self) -> None:
        """Count the file changes since the last look, also those made between steps
        (an editor, a background process): the index sees every change."""
        if self.workspace.refresh():
            self.generation += 1
            self.breakpoints.remap_changed(self.workspace)

    @functools.cached_property
    def _validators(self) -> dict[str, Any]:
        """``{tool name: jsonschema validator of its parameters}``, built by the first
        reset (jsonschema is imported only then, not while a front end starts)."""
        import jsonschema

        return {name: jsonschema.Draft202012Validator(tool.parameters)
                for name, tool in self.tools.items()}

    def _check(self, action: ToolCall) -> tuple[dict[str, Any], str | None]:
        """Return ``(arguments, None)`` or ``({}, message)`` when the call is invalid."""
        tool = self.tools.get(action.name)
        if tool is None:
            return {}, (f"unknown tool {action.name!r}; available tools: "
                        f"{', '.join(self.tools)}")
        try:
            arguments = decode_arguments(action.arguments)
        except ValueError as exc:
            example = json.dumps(example_arguments(tool.parameters))
            return {}, f"the arguments of {action.name} {exc}; e.g. {example}"
        errors = sorted(self._validators[action.name].iter_errors(arguments),
                        key=lambda e: (list(e.absolute_path), e.message))
        if errors:
            first = errors[0]
            where = ".".join(str(p) for p in first.absolute_path)
            msg = f"{where}: {first.message}" if where else first.message
            return {}, (f"invalid arguments for {action.name}: {msg}. "
                        f"Parameters: {describe_parameters(tool)}")
        return arguments, None

    def _refuse(self, message: str, action: ToolCall | None, started: float) -> StepResult:
        self.last = self._result(message, action, started, error=True)
        return self.last

    def _result(self, observation: str, action: ToolCall | None, started: float,
                error: bool = False, done: bool = False,
                data: dict[str, Any] | None = None) -> StepResult:
        summary = self.last_eval
        score = summary.passed if summary else 0
        max_score = summary.total if summary else 0
        return StepResult(  # the one place step results are made: output is data from here on
            observation=strip_controls(observation), action=action, done=done,
            resolved=is_resolved(summary), score=score, max_score=max_score,
            breakpoints=list(self.breakpoints.list()),
            conditions=dict(self.breakpoints.conditions()),
            frame=self.frame, eval=summary, eval_output=self.last_eval_output,
            changed_files=self.workspace.changed_files() if self.workspace else [],
            error=error, elapsed=time.monotonic() - started,
            start=str((data or {}).get("start", "")), data=dict(data or {}))

    # ------------------------------------------------------------------ eval
    def run_eval(self) -> tuple[EvalSummary, str]:
        """Run the entrypoint once in the terminal and remember the result.

        Before the run the read-only files are put back as the task's original
        has them and files added under read-only paths are removed
        (:meth:`Workspace.enforce_readonly`); when that cannot be done the
        eval refuses, with the reason in the summary's ``problem``.

        Returns:
            ``(summary, output)``: the counts and failed tests from pytest's
            structured report (see :func:`dgym_tui.core.evaluation.summary.summarize`:
            a pytest run cut short counts as failed; without a report, pytest's
            summary line or the exit status is used) and the output text,
            truncated to ``max_output`` bytes with a note when longer, after a
            line naming the read-only files put back, if any.

        Raises:
            RuntimeError: no episode is running.
        """
        if self.terminal is None or self.workspace is None:
            raise RuntimeError("no episode is running; call reset() first")
        summary, output = self._eval_in(self.workspace, self.terminal)
        self.last_eval, self.last_eval_output = summary, output
        return summary, output

    def grade_submission(self) -> tuple[EvalSummary, str]:
        """Grade the episode as the ``submit`` tool does, and remember the result.

        The entrypoint runs in a fresh working copy of the original repository
        carrying only the agent's changes to writable paths (never read-only or
        ignored ones), in a fresh terminal of the same kind after the setup
        commands, the way a benchmark harness applies a patch to a clean checkout.
        Nothing of the episode's sandbox (processes, files outside the changes)
        reaches it. A ``Terminal`` instance given to the environment cannot be
        made twice: the eval then runs in place, after :meth:`run_eval`'s
        restoration of the read-only files.

        Returns:
            ``(summary, output)`` as :meth:`run_eval`; the output starts with a
            line saying where it was graded.

        Raises:
            RuntimeError: no episode is running.
        """
        if self.terminal is None or self.workspace is None:
            raise RuntimeError("no episode is running; call reset() first")
        if isinstance(self.terminal_spec, Terminal):
            return self.run_eval()
        grading: Workspace | None = None
        terminal: Terminal | None = None
        try:
            try:
                grading = self._new_workspace()
                carried = grading.carry_changes(self.workspace)
                terminal = self._make_terminal(grading)
                self._grading_terminal = terminal  # close() from another thread ends it too
                terminal.start(str(grading.root))
                from dgym_tui.core.evaluation import pytest_plugin

                pytest_plugin.install(terminal)
                failed = self._run_setup(terminal)
            except Exception as exc:  # noqa: BLE001  a failed grading is a failed eval
                log.exception("grading the submission failed")
                summary = EvalSummary(errors=1, problem=(
                    f"the submission could not be graded in a fresh working copy: "
                    f"{type(exc).__name__}: {first_line(exc, 200)}"))
                self.last_eval, self.last_eval_output = summary, ""
                return summary, ""
            summary, output = self._eval_in(grading, terminal)
            head = (f"[graded in a fresh copy of the original with your changes to "
                    f"{len(carried)} writable file(s)]")
            if failed:
                head += "\n" + "\n".join(failed)
            output = f"{head}\n{output}"
        finally:
            self._grading_terminal = None
            if terminal is not None:
                try:
                    terminal.close()
                except Exception:  # noqa: BLE001  closing must go on
                    log.exception("closing the grading terminal failed")
            if grading is not None:
                grading.cleanup()
        self.last_eval, self.last_eval_output = summary, output
        return summary, output

    def _eval_in(self, workspace: Workspace, terminal: Terminal) -> tuple[EvalSummary, str]:
        """One run of the entrypoint in ``workspace`` through ``terminal``.

        Never raises on anything the sandbox wrote: a report that cannot be
        read, or read-only files that cannot be put back, make a failed eval
        whose ``problem`` says why.
        """
        from dgym_tui.core.evaluation import pytest_plugin
        from dgym_tui.core.fs.lookahead import test_folders

        over = self._over_size_limit(workspace)
        if over:
            return EvalSummary(errors=1, problem=over), f"[{over}]"
        try:
            restored, removed = workspace.enforce_readonly()
        except (WorkspaceError, OSError) as exc:
            problem = strip_controls(f"the read-only files could not be put back as the task "
                                     f"has them ({first_line(exc, 200)}); the eval did not run")
            return EvalSummary(errors=1, problem=problem), f"[{problem}]"
        notes = []
        if restored:
            notes.append(f"[read-only file(s) put back as the task has them: "
                         f"{_some(restored)}]")
        if removed:
            notes.append(f"[file(s) added under read-only paths removed: {_some(removed)}]")
        reserved = self._next_eval
        if reserved is not None and reserved[0] is terminal:
            self._next_eval = None
            command, report_path = reserved[1], reserved[2]
            pytest_plugin.forget(terminal, report_path)
        else:
            command, report_path = pytest_plugin.prepare(terminal, self.entrypoint)
        # a fresh overlay's first lookups, while the command starts
        workspace.look_ahead(test_folders(self.entrypoint))
        res = terminal.run(command, timeout=self.eval_timeout, max_output=self.max_output)
        self.last_eval_start = res.start
        if terminal is self.terminal:  # the next eval's spare imports pytest meanwhile
            following = pytest_plugin.prepare(terminal, self.entrypoint)
            if terminal.prewarm(following[0]):
                self._next_eval = (terminal, *following)
        output = res.output
        if res.timed_out:
            output += (f"\n[the entrypoint was stopped after {self.eval_timeout:g} s; "
                       "look for an endless loop or a hanging call]")
        if notes:
            output = "\n".join(notes) + "\n" + output
        report = pytest_plugin.read(report_path)
        try:
            summary = self._grade(res, terminal)
            if summary is None:
                summary = summarize(res.output, res.exit_code, res.timed_out, report,
                                    terminal.to_relative)
            elif report is not None and not summary.failures:  # the grader's counts, our places
                summary.failures = summarize(res.output, res.exit_code, res.timed_out, report,
                                             terminal.to_relative).failures
        except Exception as exc:  # noqa: BLE001  the report is the sandbox's data
            log.exception("summarizing the eval failed")
            summary = EvalSummary(errors=1, exit_code=res.exit_code, timed_out=res.timed_out,
                                  problem=f"the test report cannot be used "
                                          f"({type(exc).__name__}); counted as failed")
        output = strip_controls(output)
        summary.problem = strip_controls(summary.problem)
        for failure in summary.failures:  # shown by the front ends beside the output
            failure.test_id, failure.message = (strip_controls(failure.test_id),
                                                strip_controls(failure.message))
        return summary, output

    def _grade(self, res: RunResult, terminal: Terminal) -> EvalSummary | None:
        """The grader's summary of one entrypoint run; None without a grader or when it fails."""
        if self.grader is None:
            return None
        try:
            return self.grader(res, terminal)
        except Exception:  # a grader bug must not break the step: fall back to pytest's line
            log.exception("grader failed; scoring from pytest's summary line instead")
            return None

    # ------------------------------------------------------------- utilities
    def to_abs(self, rel: str) -> str:
        """Map a workspace-relative path to the path the terminal's commands see."""
        workdir = self.terminal.workdir if self.terminal else str(self.workspace.root)
        return posixpath.join(workdir, rel) if rel != "." else workdir

    def to_relative(self, path: str) -> str | None:
        """Map a path as the terminal sees it to a workspace-relative one (None if outside)."""
        if self.terminal is None:
            return None
        return self.terminal.to_relative(path)

    @property
    def terminal_name(self) -> str:
        """The terminal the episode runs in: ``"local"``, ``"bwrap"``, ``"docker"``, or a
        custom terminal's class name."""
        spec = self.terminal_spec
        if isinstance(spec, str):
            return spec
        from dgym_tui.core.terminals.bwrap import BwrapTerminal
        from dgym_tui.core.terminals.docker import DockerTerminal
        from dgym_tui.core.terminals.local import LocalTerminal

        for cls, name in ((BwrapTerminal, "bwrap"), (DockerTerminal, "docker"),
                          (LocalTerminal, "local")):
            if isinstance(spec, cls):
                return name
        return type(spec).__name__

    def tool_schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas of the offered tools, in offer order."""
        return [tool.schema() for tool in self.tools.values()]

    def instructions(self) -> str:
        """The offered tools' instructions, one ``name: text`` paragraph each."""
        return "\n\n".join(f"{name}: {tool.instructions}" for name, tool in self.tools.items())

    def patch(self) -> str:
        """Git-style unified diff of the working copy against the original ("" if none)."""
        with self._stepping:  # close() from another thread waits (descriptors in use)
            return self.workspace.patch() if self.workspace else ""

    def apply_to_source(self) -> list[str]:
        """Write the episode's changes into the original repository. Returns changed paths.

        Raises:
            RuntimeError: no episode is running.
        """
        with self._stepping:  # close() from another thread waits (descriptors in use)
            if self.workspace is None:
                raise RuntimeError("no episode is running; call reset() first")
            return self.workspace.apply_to_source()

    def _run_setup(self, terminal: Terminal) -> list[str]:
        """Run the setup commands in ``terminal``; one note per command that failed."""
        notes = []
        for command in self.setup_commands:
            res = terminal.run(command, timeout=self.eval_timeout, max_output=self.max_output)
            if res.exit_code != 0:
                status = "timed out" if res.timed_out else f"exit code {res.exit_code}"
                notes.append(f"Setup command failed ({status}): {command}\n{res.output}")
        return notes

    @property
    def _overlay_allowed(self) -> bool:
        """The working copy may be an overlay: every terminal given by name, unless
        ``overlay: false``."""
        return self.terminal_spec in ("local", "bwrap", "docker") \
            and bool(self.terminal_options.get("overlay", True))

    def _overlay_ids(self, overlay: bool = True) -> tuple[int, int] | None:
        """The uid / gid of a new overlay's sandbox (None: a copy (``overlay`` False), or
        dgym runs as a user)."""
        if not overlay or self.terminal_spec == "local" or (
                self.terminal_spec == "docker" and self.terminal_options.get("user") == "root"):
            return None  # commands run as dgym's own user (or root in a container)
        from dgym_tui.core.terminals.identity import sandbox_ids

        return sandbox_ids()

    def _new_workspace(self) -> Workspace:
        """A fresh working copy of the original: an overlay when :attr:`_overlay_allowed` and
        overlays can be mounted here (docker's needs dgym to run as root), else a copy.

        The working copy's own overlay tells whether they can: only when it fails does the
        probe (:func:`~dgym_tui.core.fs.overlay.overlay_problem`, an overlay of an empty
        folder) tell a machine that mounts none (a copy then, a warning logged once, and
        no overlay tried again in this process) from this repository's failure (raised).
        The probe first, as before, was a second overlay (its processes and a fork of this
        process) before every process's first eval, and on the session's thread while the
        app draws its first frame. An original holding entries the overlay could not
        change (:class:`~dgym_tui.core.fs.overlay.UnmappedOwners`) gets a copy too, with
        a warning logged once saying which entry and how to give it one owner.

        Raises:
            OSError: the overlay failed where the probe mounts one; or the copy failed.
            WorkspaceError: as :class:`Workspace`.
        """
        from dgym_tui.core.fs.overlay import UnmappedOwners, overlay_problem, probed_problem

        bindable = self.terminal_spec == "docker"
        overlay = self._overlay_allowed and probed_problem(bindable) is None
        try:
            return self._workspace(overlay, bindable)
        except UnmappedOwners as exc:  # found before mounting: a copy can change every file
            _warn_once(f"the working copy of {self.path} is a copy, not an overlay: {exc}")
            return self._workspace(False, bindable)
        except OSError:
            if not overlay or (problem := overlay_problem(bindable)) is None:
                raise
        _warn_once(f"the working copy is a copy, not an overlay: {problem}")
        return self._workspace(False, bindable)

    def _workspace(self, overlay: bool, bindable: bool) -> Workspace:
        from dgym_tui.core.fs.workspace import Workspace

        return Workspace(self.path, ignore=self.ignore, readonly=self.readonly,
                         overlay=overlay, run_as=self._overlay_ids(overlay), bindable=bindable)

    def _make_terminal(self, workspace: Workspace | None) -> Terminal:
        spec = self.terminal_spec
        if isinstance(spec, Terminal):
            return spec
        terminal = self._new_terminal(spec, workspace)
        if self.preload is not None and hasattr(terminal, "preload"):
            terminal.preload = bool(self.preload)
        return terminal

    def _new_terminal(self, spec: str, workspace: Workspace | None) -> Terminal:
        if spec in ("docker", "bwrap"):
            readonly = ([p for p in workspace.files() if workspace.is_readonly(p)]
                        if workspace.has_readonly_rules else [])  # no listing of every file
            # Ignored files are not in the working copy; masking their paths
            # keeps ones the agent writes there from other commands' sight.
            ignored = list(workspace.ignored_at_start)
        if spec == "docker":
            from dgym_tui.core.terminals.docker import DockerTerminal

            options = {k: v for k, v in self.terminal_options.items() if k != "overlay"}
            return DockerTerminal(image=self.image, readonly=readonly, ignored=ignored,
                                  overlay=workspace.overlay, run_as=workspace.run_as, **options)
        if spec == "bwrap":
            from dgym_tui.core.terminals.bwrap import BwrapTerminal

            # The original repository's ignored files too: the system is visible read-only.
            hidden = [str(workspace.source / rel) for rel in ignored] + self.hidden
            network = bool(self.terminal_options.get("network", False))
            return BwrapTerminal(readonly=readonly, ignored=ignored, hidden=hidden,
                                 network=network, source=str(workspace.source),
                                 limits=self.terminal_options.get("limits"),
                                 overlay=workspace.overlay, run_as=workspace.run_as)
        from dgym_tui.core.terminals.local import LocalTerminal

        return LocalTerminal(workspace.overlay if workspace is not None else None)

    def _open_mcp_servers(self) -> None:
        """Connect to the ``mcp_servers`` and add their allowed tools (first reset only).

        Raises:
            McpServerError: a server cannot be reached or its tools cannot join.
        """
        from dgym_tui.core.tools.mcp_client import McpConnection, remote_tools

        taken = set(self.tools)
        try:
            for spec in self._mcp_specs:
                connection = McpConnection(spec)
                connection.open()
                self._mcp_connections.append(connection)
                for cls in remote_tools(connection, taken):
                    self.tools[cls.name] = cls(self)
        except Exception:
            self._close_mcp_servers()
            raise

    def _close_mcp_servers(self) -> None:
        for connection in self._mcp_connections:
            try:
                connection.close()
            except Exception:  # closing must go on
                log.exception("closing MCP server %s failed", connection.spec.name)
        self._mcp_connections = []
        for name in [n for n, tool in self.tools.items() if tool.server]:
            del self.tools[name]
        self.__dict__.pop("_validators", None)  # built again with the tools of the next reset

    def stop_commands(self) -> None:
        """Kill every command running for this episode, from any thread: its terminal's and
        those of a submission being graded in a fresh copy. The step that ran them returns
        (a failed eval); :meth:`close` must still be called. Never raises."""
        for terminal in (self._grading_terminal, self.terminal):
            if terminal is None:
                continue
            try:
                terminal.close()
            except Exception:  # noqa: BLE001  best effort: close() follows
                log.exception("closing a terminal on stop failed")

    def _end_episode(self) -> None:
        with self._ending:
            self._end_episode_now()

    def _end_episode_now(self) -> None:
        grading = self._grading_terminal  # a submit being graded (close() from another thread)
        if grading is not None:
            try:
                grading.close()
            except Exception:
                log.exception("closing the grading terminal failed")
        for tool in self.tools.values():
            try:
                tool.close()
            except Exception:  # closing must go on
                log.exception("closing tool %s failed", tool.name)
        if self.terminal is not None:
            try:
                self.terminal.close()
            except Exception:
                log.exception("closing the terminal failed")
            self.terminal = None
        if self.workspace is not None:
            self.workspace.cleanup()
            self.workspace = None
        self.frame = None

    def close(self) -> None:
        """End the episode: stop tools and terminal, delete the working copy. Idempotent."""
        if self._closed:
            return
        self._closed = True
        waited = self._stepping.acquire(blocking=False)
        if not waited:  # a step runs in another thread: end its commands, let it return
            self.stop_commands()
            waited = self._stepping.acquire(timeout=STEP_GRACE)
            if not waited:
                log.warning("a step still runs %g s after close(); ending the episode under it",
                            STEP_GRACE)
        try:
            self._end_episode()
        finally:
            if waited:
                self._stepping.release()
        self._close_mcp_servers()
        cleanup.unregister(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:  # best effort: never leave temp folders behind
        try:
            self.close()
        except Exception:
            log.debug("closing a dropped RepoEnv failed", exc_info=True)


@functools.cache
def _warn_once(message: str) -> None:
    log.warning("%s", message)


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.1f} MiB"


def _some(paths: list[str], most: int = 5) -> str:
    """``"a, b, c"`` or ``"a, b, c, d, e and 7 more"`` for observations."""
    shown = ", ".join(paths[:most])
    return shown if len(paths) <= most else f"{shown} and {len(paths) - most} more"


def describe_parameters(tool: Tool) -> str:
    """Return e.g. ``"path (string, required), start (integer)"`` for a tool's schema."""
    props = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", []))
    if not props:
        return "none (call it with {})"
    items = []
    for name, spec in props.items():
        kind = spec.get("type", "any")
        if isinstance(kind, list):
            kind = "|".join(kind)
        items.append(f"{name} ({kind}{', required' if name in required else ''})")
    return ", ".join(items)
