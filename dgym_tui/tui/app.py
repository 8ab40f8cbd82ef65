"""The dgym-tui Textual app: watch, step, approve, edit, reject or take over each turn.

Every action, human or agent, goes through :class:`dgym_tui.session.Session`;
the app never calls ``env.step`` or a tool itself. Session calls block (pdb,
eval, Docker, LLM), so they run in thread workers; a
:class:`~dgym_tui.tui.bridge.SessionBridge` turns the session's events into
typed messages (:mod:`dgym_tui.tui.messages`) whose payload (files, patch,
source text, pdb's stack and variables) is read in the worker under the
session's lock, so the UI thread never touches the environment.

Replay mode shows a recorded trajectory step by step (no environment); "fork
here" rebuilds the task, re-executes the recorded actions up to the step in a
fresh environment and continues live.
"""

from __future__ import annotations

import dataclasses
import gc
import logging
import threading
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, TabbedContent, TabPane, TextArea

from dgym_tui.core.errors import first_line
from dgym_tui.core.types import StepResult, ToolCall
from dgym_tui.tui.actions import console_action, pdb_call
from dgym_tui.tui.bridge import SessionBridge, read_source
from dgym_tui.tui.keys import QuietKeys, action_name, with_quiet_twins
from dgym_tui.tui.locate import first_source_file, locate_failure, no_tests_hint
from dgym_tui.tui.messages import (
    AgentThinking,
    EpisodeEnded,
    FileRead,
    Inspected,
    ModeChanged,
    PatchApplied,
    ProposalReady,
    SessionFailed,
    SessionStarted,
    SourceText,
    StepStarted,
    TurnRecorded,
    WorkspaceState,
)
from dgym_tui.tui.proposal_preview import preview_of
from dgym_tui.tui.screens.modals import (
    CodeEditScreen,
    ConfirmScreen,
    EditActionScreen,
    HelpScreen,
    PromptScreen,
    QuitScreen,
    RejectScreen,
    describe,
)
from dgym_tui.tui.themes import load_themes
from dgym_tui.tui.widgets.approve_panel import ApprovePanel
from dgym_tui.tui.widgets.breakpoints import BreakpointsPane
from dgym_tui.tui.widgets.console import PdbConsole
from dgym_tui.tui.widgets.debug_panel import DebugPanel
from dgym_tui.tui.widgets.diff_view import DiffView
from dgym_tui.tui.widgets.file_tree import FileTree
from dgym_tui.tui.widgets.footer import KeyFooter
from dgym_tui.tui.widgets.source_view import SourceView
from dgym_tui.tui.widgets.stack import StackPane
from dgym_tui.tui.widgets.status_bar import StatusBar
from dgym_tui.tui.widgets.transcript import Transcript, format_action
from dgym_tui.tui.widgets.variables import VariablesPane

log = logging.getLogger(__name__)


def tool_syntax(name: str, parameters: dict[str, Any]) -> str:
    """Console syntax of a tool call, e.g. ``rewrite path=.. start=N end=N new_code=".."``."""
    props = parameters.get("properties", {}) if isinstance(parameters, dict) else {}
    required = set(parameters.get("required", [])) if isinstance(parameters, dict) else set()
    samples = {"integer": "N", "number": "N", "boolean": "true"}
    parts = [name]
    for key, spec in props.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(kind, list):  # e.g. ["integer", "null"]
            kind = next((k for k in kind if k != "null"), None)
        value = samples.get(kind, '".."') if isinstance(kind, str) else '".."'
        parts.append(f"{key}={value}" if key in required else f"[{key}={value}]")
    return " ".join(parts)


def _first_line(tool: Any) -> str:
    text = (getattr(tool, "instructions", "") or getattr(tool, "__doc__", "") or "").strip()
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= 70 else line[:67] + "..."


#: Busy labels per tool name (shown next to the spinner).
_BUSY = {"eval": "running eval", "pdb": "pdb", "rewrite": "rewriting", "submit": "submitting"}


class CallDone(Message):
    """A session call of a worker returned (posted after the call's own events)."""


class Forked(Message):
    """Replay's fork is live: ``session`` (started) and its state read in the worker."""

    def __init__(self, session: Any, state: WorkspaceState, source: SourceText | None,
                 inspection: Any) -> None:
        self.session = session
        self.state = state
        self.source = source
        self.inspection = inspection
        super().__init__()


class DgymApp(QuietKeys, App[int]):
    """The dgym-tui app.

    Args:
        session: a live :class:`~dgym_tui.session.Session` (not started; the
            app starts it in a worker). Mutually exclusive with ``replay``.
        replay: a :class:`~dgym_tui.tui.replay_model.ReplayModel` to browse.
        fork: ``fork(step) -> Session`` building a live session whose first
            ``step`` actions were re-executed (replay mode's ``f``); None
            disables forking.
        ask_apply: offer to apply the patch to the original repository when
            the episode ends.
        can_apply: False when the original is not the user's (a benchmark
            task's scratch copy): ``w`` is off and nothing is offered.
        theme_name: theme to start with (default ``dgym-dark``).

    The app's return code (``app.return_code``) is 2 when the episode could
    not start (the message says why), else 0.
    """

    CSS_PATH = "app.tcss"
    #: Below 100 columns the file tree and the side column start hidden ([ and ] show them).
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-short"), (32, "-tall")]
    TITLE = "dgym-tui"
    ENABLE_COMMAND_PALETTE = True

    #: Keys that leave the footer while an agent drives (approve / auto); they still work.
    QUIET: ClassVar[frozenset[str]] = frozenset({"ask_agent", "run_eval", "show_diff",
                                                 "apply_patch"})

    #: The app's keys (help and command palette); BINDINGS adds their hidden twins.
    KEYS: ClassVar[list[Binding]] = [
        Binding("q", "quit_app", "Quit"),
        Binding("ctrl+c", "quit_app", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Keys"),
        # Decision keys clash with no pdb key of the source view (n s c r u d b), so
        # pdb keeps working while a proposal waits; check_action disables them while
        # typing or in a dialog.
        Binding("a", "approve", "Approve", priority=True),
        Binding("e", "edit", "Edit", priority=True),
        Binding("R", "reject", "Reject", priority=True),
        Binding("shift+r", "reject", "Reject", show=False, priority=True),
        Binding("t", "take_over", "Take over", priority=True),
        Binding("g", "go", "Go (auto)", priority=True),
        Binding("space", "pause", "Pause", priority=True),
        Binding("m", "ask_agent", "Ask agent"),
        Binding("m", "no_agent", "Ask agent", show=False),
        Binding("x", "run_eval", "Eval"),
        Binding("p", "show_diff", "Diff"),
        Binding("w", "apply_patch", "Apply patch"),
        Binding("colon", "focus_console(':')", "Console", show=False),
        Binding("i", "focus_console('')", "Console", show=False),
        Binding("z", "zoom", "Zoom", show=False),
        Binding("left_square_bracket", "toggle_pane('tree')", "Files", show=False),
        Binding("right_square_bracket", "toggle_pane('side')", "Side", show=False),
        Binding("o", "focus_source", "Source", show=False),
        Binding("escape", "focus_source", "Source", show=False),
        Binding("h", "replay_step(-1)", "Back"),
        Binding("l", "replay_step(1)", "Forward"),
        Binding("0", "replay_goto(0)", "First", show=False),
        Binding("dollar_sign", "replay_goto(-1)", "Last", show=False),
        Binding("f", "fork", "Fork here"),
    ]
    BINDINGS: ClassVar[list[BindingType]] = with_quiet_twins(KEYS, QUIET)

    #: Descriptions for the help screen and the command palette, per action.
    ACTION_HELP: ClassVar[dict[str, str]] = {
        "quit_app": "quit: finish the episode, close the environment, keep the trajectory",
        "help": "show this key help",
        "approve": "approve the agent's proposed action",
        "edit": "edit the proposed action's arguments, then run it",
        "reject": "reject the proposal with a note for the agent",
        "take_over": "take over: switch to human mode",
        "go": "go: let the agent run on its own (auto mode)",
        "pause": "auto mode: pause after the current step (back to approve)",
        "ask_agent": "approve mode: ask the agent for a proposal (again, after an error)",
        "no_agent": "ask the agent (needs --agent NAME --llm NAME)",
        "run_eval": "run the entrypoint (eval)",
        "show_diff": "show the diff of the working copy",
        "apply_patch": "apply the patch to the original repository (asks first)",
        "focus_console(':')": "console, starting with ':' (:41 goes to line 41; :p x is p x)",
        "focus_console('')": "focus the pdb console",
        "zoom": "zoom the focused pane to the whole screen (z again: back)",
        "toggle_pane('tree')": "show / hide the file tree (hidden below 100 columns)",
        "toggle_pane('side')": "show / hide the side column: Debug, Transcript, Diff "
                               "(hidden below 100 columns)",
        "focus_source": "focus the source view (escape leaves the console)",
        "replay_step(-1)": "replay: one step back",
        "replay_step(1)": "replay: one step forward",
        "replay_goto(0)": "replay: first step",
        "replay_goto(-1)": "replay: last step",
        "fork": "replay: fork here (re-execute up to this step, then continue live)",
        "edit_code": "edit the selected source lines (the cursor line) and rewrite them",
    }

    SOURCE_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("n / s / c / r", "pdb next / step / continue / return"),
        ("u / d", "pdb up / down the stack"),
        ("b or gutter click", "toggle a breakpoint at the cursor line"),
        ("E", "edit the selected lines (else the cursor line); ctrl+s rewrites, esc cancels"),
        ("V, then j / k", "select lines (vim visual-line); V or esc ends the selection"),
        ("up / down / pgup / pgdn / home / end", "move the cursor"),
        ("left / right", "scroll long lines")]

    def __init__(self, session: Any = None, replay: Any = None,
                 fork: Callable[[int], Any] | None = None, ask_apply: bool = True,
                 theme_name: str = "dgym-dark", can_apply: bool = True) -> None:
        super().__init__()
        if (session is None) == (replay is None):
            raise ValueError("give exactly one of session= or replay=")
        self.session = session
        self.replay = replay
        self.fork_factory = fork
        self.ask_apply = ask_apply
        self.can_apply = can_apply
        self.step_index = 0  # replay position
        self.busy = False
        self.started = False
        self.start_error: str | None = None
        self._closed = False
        self._close_lock = threading.Lock()
        self._calls = 0  # session calls running in worker threads
        self._idle = threading.Event()
        self._idle.set()
        self._pause_requested = False
        self._current_path: str | None = None
        self._last_result: StepResult | None = None
        self._asked_apply = False
        self._applied_patch: str | None = None  # the patch `w` last wrote to the original
        self._quit_after_apply = False
        self._quit_confirmed = False  # "quit anyway" was answered
        self._gc_frozen = False
        self._agent_error: str | None = None  # the last failed proposal's error
        self._agent_failures = 0  # failed proposals in a row (backoff)
        self._retry_timer: Any = None
        self._hinted_no_tests = False
        self._frame_stale = False  # files changed under a stopped pdb: it restarts
        self._workspace = WorkspaceState([], frozenset(), "")  # as the last message said
        self._inspection: Any = None  # pdb's stack / variables at the last stop
        self._bridge: SessionBridge | None = None
        if replay is not None:
            # The loaded trajectory (thousands of records) and the imported modules live
            # as long as the replay: keep them out of the garbage collector's full
            # passes, which otherwise re-scan them several times while the view is
            # built (a third of the time to open a 1,000-step trajectory).
            gc.freeze()
            self._gc_frozen = True
        for theme in load_themes():
            self.register_theme(theme)
        if theme_name in self.available_themes:
            # Set before the first paint: on_mount would re-parse all CSS and restyle
            # every widget a second time.
            self.theme = theme_name

    # -- layout --------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield FileTree(id="tree")
            with Vertical(id="center"):
                yield SourceView(id="source")
                yield ApprovePanel(id="approve")
                yield PdbConsole(id="console")
            human = self.session is not None and self.session.policy is None
            with TabbedContent(id="side", initial="tab-debug" if human else "tab-transcript") as side:
                side.ALLOW_MAXIMIZE = True  # z zooms the whole column
                with TabPane("Debug", id="tab-debug"):
                    yield DebugPanel(id="debug")
                with TabPane("Transcript", id="tab-transcript"):
                    yield Transcript(id="transcript")
                with TabPane("Diff", id="tab-diff"):
                    yield DiffView(id="diff")
        yield StatusBar(id="status")
        yield KeyFooter()

    @property
    def source_view(self) -> SourceView:
        return self.query_one(SourceView)

    @property
    def pdb_console(self) -> PdbConsole:
        return self.query_one(PdbConsole)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def transcript(self) -> Transcript:
        return self.query_one(Transcript)

    @property
    def debug_panel(self) -> DebugPanel:
        return self.query_one(DebugPanel)

    @property
    def env(self) -> Any:
        return self.session.env if self.session is not None else None

    def on_mount(self) -> None:
        self.source_view.focus()
        if self.replay is not None:
            self._mount_replay()
        else:
            self._mount_session()

    # -- live session ----------------------------------------------------------
    def _mount_session(self) -> None:
        session = self.session
        self.sub_title = session.task_name or ""
        self.status.update_status(task=session.task_name, budget=session.max_steps,
                                  mode=session.mode, agent=session.policy is not None)
        self._subscribe(session)
        self._set_busy("starting the episode (copy, terminal, eval)")
        self._start_session()

    def _subscribe(self, session: Any) -> SessionBridge:
        self._bridge = SessionBridge(session, self.post_message, lambda: self._current_path)
        session.subscribe(self._bridge)
        return self._bridge

    def _calling(self, running: bool) -> None:
        """Count session calls running in worker threads (any thread may call this)."""
        with self._close_lock:
            self._calls += 1 if running else -1
            if self._calls:
                self._idle.clear()
            else:
                self._idle.set()

    def _to_ui(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``callback`` on the app's thread from a worker, unless the app is closing.

        While the app quits, its event loop may be waiting for this very
        worker (or already be gone), so nothing is handed over any more.
        """
        if self._closed:
            return
        try:
            self.call_from_thread(callback, *args, **kwargs)
        except RuntimeError:  # the app stopped meanwhile
            log.debug("app gone before %s", getattr(callback, "__name__", callback))

    @work(thread=True, group="session", exit_on_error=False)
    def _start_session(self) -> None:
        self._calling(True)
        try:
            self.session.start()
        except Exception as exc:  # noqa: BLE001  shown as one line, exit code 2
            message = first_line(exc)
            self._to_ui(self._start_failed, message)
            return
        finally:
            self._calling(False)
        self.post_message(CallDone())

    def _start_failed(self, message: str) -> None:
        self._set_busy(None)
        if self._closed:  # quit while starting: not an error
            return
        self.start_error = f"dgym-tui: could not start the episode: {message}"
        self.exit(2, return_code=2)

    def _set_busy(self, label: str | None) -> None:
        self.busy = label is not None
        self.status.set_busy(label)

    def _session_call(self, label: str, fn: Callable[[], Any],
                      failed: Callable[[str], None] | None = None) -> bool:
        """Run ``fn`` (a blocking Session call) in a thread worker unless one is running.

        Args:
            label: what the spinner says.
            fn: the call.
            failed: called on the UI thread with the error's first line when ``fn``
                raises (default: an error notification).

        Returns:
            False (and a notification) when another call is still running.
        """
        if self.session is None:
            return False
        if self.busy:
            self.notify("busy: wait for the current step to finish", severity="warning")
            return False
        if not self.started:
            self.notify("the episode has not started yet", severity="warning")
            return False
        if self.session.done:
            self.notify("the episode is over", severity="warning")
            return False
        self._set_busy(label)
        self.source_view.set_preview(None)  # a decision (or a step) ends the preview
        self._run_session_call(fn, failed or self._step_failed)
        return True

    @work(thread=True, group="session", exit_on_error=False)
    def _run_session_call(self, fn: Callable[[], Any], failed: Callable[[str], None]) -> None:
        self._calling(True)
        try:
            fn()
        except Exception as exc:  # noqa: BLE001  the session already emitted "error"
            text = first_line(exc)
            self._to_ui(failed, text)
        finally:
            self._calling(False)
            self.post_message(CallDone())

    def _step_failed(self, text: str) -> None:
        self.notify(text, severity="error", title="step failed")

    # -- asking the agent, with a backoff after errors ----------------------------
    #: Seconds before the agent is asked again after 1, 2, 3+ failed proposals in a row.
    AGENT_RETRY: ClassVar[tuple[float, ...]] = (5.0, 20.0, 60.0)

    def _ask_agent(self) -> bool:
        """Ask the agent for a proposal in a worker (errors back off, see AGENT_RETRY)."""
        self._cancel_retry()
        return self._session_call("asking the agent", self.session.propose,
                                  failed=self._agent_failed)

    def _agent_failed(self, text: str) -> None:
        """A proposal failed: say so once, keep every key live, ask again later."""
        first = self._agent_error is None
        self._agent_error = text
        self._agent_failures += 1
        delay = self.AGENT_RETRY[min(self._agent_failures, len(self.AGENT_RETRY)) - 1]
        self.query_one(ApprovePanel).show_error(text, self._agent_failures, delay)
        if first:
            self.notify(f"{text}; asking again in {delay:.0f} s (m: now, t: take over)",
                        severity="error", title="the agent failed")
        self._cancel_retry()
        self._retry_timer = self.set_timer(delay, self._retry_agent)

    def _cancel_retry(self) -> None:
        if self._retry_timer is not None:
            self._retry_timer.stop()
            self._retry_timer = None

    def _clear_agent_error(self) -> None:
        self._cancel_retry()
        self._agent_error = None
        self._agent_failures = 0

    def _retry_agent(self) -> None:
        self._retry_timer = None
        session = self.session
        if (session is None or self._closed or session.done or self._agent_error is None
                or session.mode != "approve" or session.pending is not None):
            return
        if self.busy:  # a person's step runs: try once it is done
            self._retry_timer = self.set_timer(2.0, self._retry_agent)
            return
        self._ask_agent()

    @on(CallDone)
    def _after_session_call(self) -> None:
        self._set_busy(None)
        session = self.session
        if session is None or self._closed:
            return
        if session.done:
            self._offer_apply()
            return
        if session.mode == "auto":
            # The auto loop returned without ending the episode: paused, or the agent /
            # the step failed. Hand the decision back to the person.
            self._pause_requested = False
            session.mode = "approve"
        if session.mode == "approve":
            if session.pending is not None:
                self._show_proposal(session.pending)
            elif self._agent_error is None:  # after an error the retry timer asks
                self._ask_agent()

    def act(self, action: ToolCall) -> bool:
        """Run a human action through the session (in a worker). Returns False if busy."""
        self.pdb_console.write(f"› {format_action(action)}", style="bold")
        if self.session is not None and self.session.done:
            why = f"the episode is over ({self.session.reason or 'done'}): nothing runs; " \
                  "p shows the diff, q quits"
            self.pdb_console.write(why, style="italic")
            self.notify(why, severity="warning")
            return False
        if action.name == "pdb" and self._frame_stale:
            action = self._after_restart(action)
        self.query_one(ApprovePanel).hide()
        return self._session_call(_BUSY.get(action.name, action.name),
                                  lambda: self.session.act(action))

    # -- session events (typed messages from the bridge) ------------------------
    @on(SessionStarted)
    def _started(self, message: SessionStarted) -> None:
        self.started = True
        result = message.result
        self._last_result = result
        self._workspace = message.workspace
        self._refresh_tree(result)
        if message.location is not None:
            self._open(message.location[0], message.location[1], message.source)
        self._refresh_marks(result)
        self._update_status(result)
        self.debug_panel.show(None, result)
        self.pdb_console.write(result.observation, style="")
        self._check_entrypoint(result)

    @on(AgentThinking)
    def _agent_thinking(self) -> None:
        if self.busy:  # events may arrive after the worker already finished
            self.status.set_busy("asking the agent")

    @on(ProposalReady)
    def _proposal_ready(self, message: ProposalReady) -> None:
        proposal = message.proposal
        self._clear_agent_error()
        self._update_status(self._last_result)
        if self.session.mode == "approve" and self.session.pending is proposal:
            self._show_proposal(proposal)

    @on(StepStarted)
    def _step_started(self, message: StepStarted) -> None:
        if self.busy:
            self.status.set_busy(_BUSY.get(message.action.name, message.action.name))

    @on(TurnRecorded)
    def _turn_recorded(self, message: TurnRecorded) -> None:
        turn = message.turn
        self.query_one(ApprovePanel).hide()
        self.transcript.add_turn(turn)
        if turn.action is not None and turn.actor == "agent":
            self.pdb_console.write(f"› {format_action(turn.action)}  ({turn.decision})",
                                   style="bold")
        if turn.note:
            self.pdb_console.write(f"note: {turn.note}", style="italic")
        if getattr(turn, "error", ""):
            self.pdb_console.write(f"invalid proposal: {turn.error}", style="red")
        result = turn.result
        if message.workspace is not None:
            self._workspace = message.workspace
        if result is not None:
            self.pdb_console.write(result.observation, style="red" if result.error else "")
            self._last_result = result
            self._after_step(result, turn.action, message)
            if turn.action is not None and turn.action.name == "eval":
                self._check_entrypoint(result)
        self._update_status(result or self._last_result)

    @on(ModeChanged)
    def _mode_changed(self, message: ModeChanged) -> None:
        self.status.update_status(mode=message.mode)
        if message.mode != "approve":
            self.query_one(ApprovePanel).hide()
        self.refresh_bindings()

    @on(EpisodeEnded)
    def _episode_ended(self, message: EpisodeEnded) -> None:
        reason = message.footer.get("reason") or ""
        self.status.update_status(extra=f"done: {reason}" if reason else "done")
        if isinstance(self.focused, Input) and self.focused.id == "console-input":
            self.source_view.focus()  # the console is of no use now; q / ? work again
        self.refresh_bindings()
        if reason and not self._closed:
            self.notify(f"episode over ({reason}); q quits", title="done")

    @on(SessionFailed)
    def _session_failed(self, message: SessionFailed) -> None:
        self.pdb_console.write(f"error: {message.text}", style="bold red")

    def _check_entrypoint(self, result: StepResult) -> None:
        """Warn when the entrypoint could not run at all (a typo in --entrypoint), or ran
        no test (pytest collects only ``test_*.py`` / ``*_test.py``: name the candidates)."""
        summary = result.eval
        if summary is None:
            return
        if summary.exit_code in (126, 127) and summary.passed == 0:
            self.notify(f"the entrypoint could not run (exit code {summary.exit_code}); "
                        "check --entrypoint", severity="error", timeout=10)
        elif summary.total == 0 and not self._hinted_no_tests and self.env is not None:
            self._hinted_no_tests = True
            hint = no_tests_hint(self._workspace.files, self.env.entrypoint)
            self.pdb_console.write(hint, style="bold yellow")
            self.notify(hint, severity="warning", timeout=15)

    def _after_restart(self, action: ToolCall) -> ToolCall:
        """pdb restarts at this command (the code changed under it): a step key would step
        through the test runner's start, so n / s / r / u / d run to the breakpoints (c)."""
        command = str(action.arguments.get("command", "")).strip()
        breakpoints = self._last_result.breakpoints if self._last_result else []
        if command in ("n", "s", "r", "u", "d", "next", "step", "return") and breakpoints:
            self.pdb_console.write(f"[pdb restarts on the changed code: `c` to your breakpoint "
                                   f"instead of `{command}`]", style="italic")
            return pdb_call("c")
        return action

    def _show_proposal(self, proposal: Any) -> None:
        self.query_one(ApprovePanel).show(proposal, len(self.session.turns) + 1)
        self.refresh_bindings()
        frame = self._last_result.frame if self._last_result is not None else None
        preview = preview_of(proposal.action, frame[0] if frame else None)
        self.source_view.set_preview(preview)
        if preview is not None and preview.path != self._current_path:
            self._open(preview.path, preview.line)

    # -- views -----------------------------------------------------------------
    def _after_step(self, result: StepResult, action: ToolCall | None,
                    message: TurnRecorded) -> None:
        changed = message.changed
        if action is not None and action.name == "pdb":
            self._frame_stale = False
        elif changed and result.frame is not None:
            # pdb still stands on the old code: it restarts at the next pdb command
            self._frame_stale = True
            self.pdb_console.write("[the code changed: pdb restarts at your next pdb command; "
                                   "n / s / r go back to your breakpoint first]", style="italic")
        if self._frame_stale:
            result = dataclasses.replace(result, frame=None)
        if changed:
            self._refresh_tree(result)
            if self._workspace.patch is not None:
                self.query_one(DiffView).set_patch(self._workspace.patch)
        source = message.source
        if result.frame is not None:
            path, line = result.frame
            if path != self._current_path or changed:
                self._open(path, line, source)
        elif changed and self._current_path is not None and source is not None:
            self._open(self._current_path, None, source)
        self._refresh_marks(result)
        if action is not None and action.name == "pdb" or self._frame_stale:
            self._inspection = None if self._frame_stale else message.inspection
            self._show_debug(self._inspection, result)
        else:
            self.debug_panel.show_breakpoints(result)

    def _show_debug(self, inspection: Any, result: StepResult | None) -> None:
        """Hand one stop to the Debug tab's panes; the console completes its names."""
        self.debug_panel.show(inspection, result)
        if inspection is not None:
            self.pdb_console.input.complete_names([v.name for v in inspection.variables])

    def _open(self, path: str, line: int | None, source: SourceText | None = None) -> None:
        """Show ``path`` at ``line``: replay reads the model; live uses ``source`` (read in
        a worker) or reads the file in a worker first (:class:`FileRead`)."""
        if self.replay is not None:
            text = self.replay.source_at(path, self.step_index)
        elif source is not None and source.path == path:
            text = source.text
        else:
            self._read_file(path, line)
            return
        view = self.source_view
        if text is None:
            why = (self.replay.unavailable if self.replay is not None else "") or (
                "source not available at this step")
            view.placeholder = f"({path}: {why})"
            view.load(None, "")
            self._current_path = None
            return
        self._current_path = path
        view.load(path, text, line)
        view.border_title = path
        self.query_one(FileTree).select_path(path)
        if self._last_result is not None:
            self._refresh_marks(self._last_result, follow=False)

    @work(thread=True, group="read", exit_on_error=False)
    def _read_file(self, path: str, line: int | None) -> None:
        session = self.session
        if session is None or self._closed:
            return
        with session.lock:
            if session.env.workspace is None:
                return
            source = read_source(session.env, path)
        self.post_message(FileRead(source, line))

    @on(FileRead)
    def _file_read(self, message: FileRead) -> None:
        if self.replay is None and message.source is not None:
            self._open(message.source.path, message.line, message.source)

    def _refresh_marks(self, result: StepResult, follow: bool = True) -> None:
        path = self._current_path
        marks: dict[int, str | None] = {}
        for bp_path, line in result.breakpoints:
            if bp_path == path:
                marks[int(line)] = result.conditions.get(f"{bp_path}:{line}")
        frame = result.frame[1] if result.frame and result.frame[0] == path else None
        self.source_view.set_marks(marks, frame, follow=follow)

    def _refresh_tree(self, result: StepResult) -> None:
        tree = self.query_one(FileTree)
        if self.replay is not None:
            files = self.replay.files()
            readonly = {f for f in files if self.replay.is_readonly(f)}
        else:
            files, readonly = self._workspace.files, set(self._workspace.readonly)
        tree.set_files(files, readonly, set(result.changed_files))

    def _update_status(self, result: StepResult | None) -> None:
        changes: dict[str, Any] = {}
        if result is not None and result.eval is not None:
            changes.update(evaluated=True, passed=result.eval.passed, total=result.eval.total)
        if self.session is not None:
            usage = self.session.usage
            if self.session.pending is not None:  # spent on the undecided proposal
                usage = usage + self.session.pending.usage
            changes.update(step=len(self.session.turns), mode=self.session.mode,
                           tokens=usage.prompt_tokens + usage.completion_tokens,
                           cost=usage.cost)
        self.status.update_status(**changes)

    # -- widget messages ---------------------------------------------------------
    @on(SourceView.PdbCommand)
    def _pdb_key(self, message: SourceView.PdbCommand) -> None:
        if self.replay is None:
            self.act(pdb_call(message.command))

    @on(SourceView.BreakpointToggle)
    def _toggle_breakpoint(self, message: SourceView.BreakpointToggle) -> None:
        if self.replay is not None:
            return
        verb = "cl" if message.present else "b"
        self.act(pdb_call(f"{verb} {message.path}:{message.line}"))

    @on(SourceView.SearchPrompt)
    def _search_prompt(self) -> None:
        console_input = self.pdb_console.input
        console_input.value = "/"
        console_input.cursor_position = 1
        console_input.focus()

    @on(SourceView.GotoFrame)
    def _goto_frame(self) -> None:
        result = self._last_result
        frame = self._inspection.frame if self._inspection is not None else None
        if result is not None and result.frame is not None and not self._frame_stale:
            self._open(result.frame[0], result.frame[1])
        elif frame is not None and frame.relative is None:
            self.notify(f"frame outside the repository: {frame.path}:{frame.line}")
        else:
            self.notify("pdb is not stopped in a frame", severity="warning")

    def _navigate(self, text: str) -> bool:
        """Console lines that move the view, not pdb: ``:N`` (go to line N), ``/text``
        (search). Returns True when ``text`` was one of them."""
        view = self.source_view
        if text.startswith("/") and len(text) > 1:
            if view.search(text[1:]) is None:
                self.notify(f"not found: {text[1:]}", severity="warning")
            else:
                view.focus()
            return True
        number = text[1:].strip() if text.startswith(":") else ""
        if number.isdigit():
            view.go_to(int(number))
            view.focus()
            return True
        return False

    @on(PdbConsole.Submitted)
    def _console_line(self, message: PdbConsole.Submitted) -> None:
        if self._navigate(message.text):
            return
        text = message.text[1:].strip() if message.text.startswith(":") else message.text
        if not text:
            return
        if self.replay is not None:
            self.notify("replay: fork (f) to act", severity="warning")
            return
        tools = self.env.tools if self.env is not None else {}
        try:
            action = console_action(text, list(tools),
                                    {name: tool.parameters for name, tool in tools.items()})
        except ValueError as exc:
            self.pdb_console.write(f"error: {exc}", style="bold red")
            return
        self.act(action)

    @on(SourceView.EditCode)
    def _edit_code_key(self, message: SourceView.EditCode) -> None:
        self.edit_code(message.path, message.start, message.end)

    @on(FileTree.FileChosen)
    def _file_chosen(self, message: FileTree.FileChosen) -> None:
        self._open(message.path, 1)

    # -- actions -----------------------------------------------------------------
    _REPLAY_ONLY = frozenset({"replay_step", "replay_goto", "fork"})
    _LIVE_ONLY = frozenset({"approve", "edit", "reject", "take_over", "go", "pause",
                            "ask_agent", "no_agent", "run_eval", "apply_patch"})
    #: Keys that mean nothing once the episode is over.
    _RUNNING_ONLY = frozenset({"approve", "edit", "reject", "take_over", "go", "pause",
                               "ask_agent", "run_eval"})

    def action_available(self, action: str) -> bool:
        """True when the action (name without arguments) makes sense in the current state."""
        if action in self._REPLAY_ONLY:
            return self.replay is not None
        if action in self._LIVE_ONLY:
            if self.session is None:
                return False
            pending = self.session.pending is not None and self.session.mode == "approve"
            agent = self.session.policy is not None
            if action in self._RUNNING_ONLY and self.session.done:
                return False
            if action == "no_agent":
                return not agent
            if action in ("approve", "edit", "reject"):
                return pending
            if action == "take_over":
                return agent and self.session.mode != "human"
            if action in ("go", "ask_agent"):
                return agent and self.session.mode != "auto"
            if action == "pause":
                return self.session.mode == "auto"
            if action == "apply_patch":
                return self.can_apply
        return True

    @property
    def keys_quiet(self) -> bool:
        """True while an agent drives (approve / auto) or the episode is over: the footer
        shows the keys that matter then (the others still work and say why)."""
        return self.session is not None and (self.session.mode != "human" or self.session.done)

    def check_key(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enable only the keys that make sense now (the footer shows those).

        Session keys are off while a dialog is open or a text field has the focus.
        """
        if not self.action_available(action):
            return False
        return not (action in self._LIVE_ONLY and self._typing_or_modal())

    def _typing_or_modal(self) -> bool:
        """True while a dialog is open or a text field has the focus."""
        if len(self.screen_stack) > 1:
            return True
        return isinstance(self.focused, (Input, TextArea))

    async def action_quit_app(self) -> None:
        """Finish the episode, close the environment (in a thread), then exit.

        A step still running is cut short: closing the environment ends its
        pdb / terminal processes, so quitting never waits for a step's timeout.
        """
        if self._closed:
            return
        if (self._unapplied_fix() and not self._quit_confirmed
                and not isinstance(self.screen, QuitScreen)):  # ctrl+c there: quit anyway
            self.push_screen(QuitScreen(str(self.env.path), self._last_result.changed_files),
                             self._quit_answer)
            return
        self._set_busy("closing")
        import asyncio

        await asyncio.to_thread(self.close_session, "quit")
        self.exit(self.return_code or 0)

    def _unapplied_fix(self) -> bool:
        """True when the last eval passed and its patch was not written to the original
        with ``w`` (only where ``w`` applies and the apply prompt is on)."""
        result = self._last_result
        patch = self._workspace.patch or ""
        return bool(self.session is not None and self.started and self.can_apply
                    and self.ask_apply and result is not None and result.resolved
                    and patch.strip() and patch != self._applied_patch)

    def _quit_answer(self, answer: str | None) -> None:
        """The quit question's answer: apply then quit, quit anyway, or stay (None)."""
        if answer == "quit":
            self._quit_confirmed = True
            self.call_later(self.action_quit_app)
        elif answer == "apply":
            self._quit_after_apply = True
            self._apply_patch(str(self.env.path))

    def close_session(self, reason: str = "quit", timeout: float = 10.0) -> None:
        """Write the trajectory footer and close the environment / replay. Idempotent.

        Safe from any thread except the one running a session call. When no
        step runs, the footer is written first (with the final patch), then
        the environment is closed. When a step runs, the environment is
        closed first: that ends the step's processes, the step returns (or
        fails) and is recorded as usual, and then the footer is written.

        Args:
            reason: the footer's reason (``"quit"``, ``"error: ..."``).
            timeout: seconds to wait for a cut-short step to return before
                the footer is written anyway.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
            running = self._calls > 0
        session = self.session
        if session is not None:
            if running:
                self._close_env(session)
                if not self._idle.wait(timeout):
                    log.warning("a step did not return %.0f s after the environment closed",
                                timeout)
                self._finish(session, reason, timeout)
            else:
                self._finish(session, reason, timeout)
                self._close_env(session)
        if self.replay is not None:
            self.replay.close()
        self._unfreeze_gc()

    def _unfreeze_gc(self) -> None:
        """Hand the objects frozen for the replay back to the garbage collector."""
        if self._gc_frozen:
            self._gc_frozen = False
            gc.unfreeze()

    @staticmethod
    def _finish(session: Any, reason: str, timeout: float) -> None:
        """``session.finish(reason)`` in a helper thread, waiting at most ``timeout`` s."""
        finisher = threading.Thread(target=session.finish, args=(reason,), daemon=True)
        finisher.start()
        finisher.join(timeout)

    @staticmethod
    def _close_env(session: Any) -> None:
        try:
            session.env.close()
        except Exception:
            log.exception("closing the environment failed")

    def action_help(self) -> None:
        """Show the keys that work now, the source view's keys and the console's syntax."""
        rows: list[tuple[str, str]] = []
        seen: set[str] = set()
        for b in self.KEYS:
            name = action_name(b.action)
            if b.action in seen or (name in self._REPLAY_ONLY and self.replay is None):
                continue
            if name in self._LIVE_ONLY and (self.session is None or (
                    name in ("ask_agent", "no_agent", "approve", "edit", "reject", "take_over",
                             "go", "pause") and self.session.policy is None)):
                continue
            seen.add(b.action)
            keys = " / ".join(self._key_label(k) for k in self.KEYS if k.action == b.action)
            text = self.ACTION_HELP.get(b.action, b.description)
            if not self.action_available(name):
                text += "  (not now)"
            rows.append((keys, text))
        sections = [("App", rows), ("Source view (focused)", self.SOURCE_KEYS)]
        if self.replay is None:
            sections.append(("Console (: or i)", self._console_help()))
        self.push_screen(HelpScreen(sections))

    def _console_help(self) -> list[tuple[str, str]]:
        """Rows describing what the console accepts, one per tool of the environment."""
        rows = [("p x / n / b f.py:12", "any other line is one pdb command"),
                ("up / down / tab", "history / accept the grey completion")]
        tools = getattr(self.env, "tools", None) or {}
        for name, tool in tools.items():
            if name == "pdb":
                continue
            rows.append((tool_syntax(name, tool.parameters), _first_line(tool)))
        rows.append(("", "values with spaces go in quotes: grep pattern=\"def main\""))
        rows.append(("", 'several lines: rewrite {"path": "f.py", "start": 3, "end": 3, '
                         '"new_code": "a = 1\\nb = 2"}  (JSON: \\n is a newline), or E'))
        return rows

    @staticmethod
    def _key_label(binding: Binding) -> str:
        names = {"question_mark": "?", "dollar_sign": "$", "colon": ":", "space": "space"}
        return " / ".join(names.get(k, k) for k in binding.key.split(","))

    def action_approve(self) -> None:
        proposal = self.session.pending
        if proposal is not None:
            self._session_call("approved step", lambda: self.session.approve(proposal))

    def action_edit(self) -> None:
        proposal = self.session.pending
        if proposal is None or self.busy:
            return
        action = proposal.action or ToolCall(name="pdb", arguments={"command": ""})

        def done(edited: ToolCall | None) -> None:
            if edited is not None:
                self._session_call("edited step", lambda: self.session.edit(proposal, edited))

        self.push_screen(EditActionScreen(action), done)

    def action_reject(self) -> None:
        proposal = self.session.pending
        if proposal is None or self.busy:
            return

        def done(note: str | None) -> None:
            if note is not None:
                self._session_call("rejecting", lambda: self.session.reject(proposal, note))

        self.push_screen(RejectScreen(), done)

    def action_take_over(self) -> None:
        if self.session.policy is None:
            return
        self._clear_agent_error()
        self.session.take_over()
        self.query_one(ApprovePanel).hide()
        self.source_view.set_preview(None)
        self.query_one("#console-input").focus()

    def action_go(self) -> None:
        session = self.session
        if session.policy is None or self.busy or session.done:
            return
        self._clear_agent_error()
        session.mode = "auto"
        self._pause_requested = False
        self._session_call("agent running", lambda: session.run(
            should_pause=lambda: self._pause_requested))

    def action_pause(self) -> None:
        if self.session is not None and self.session.mode == "auto":
            self._pause_requested = True
            self.session.request_pause()
            self.notify("pausing after the current step")

    def action_ask_agent(self) -> None:
        session = self.session
        if session.policy is None or session.done:
            return
        if self.busy:
            self.notify("busy: wait for the current step to finish", severity="warning")
            return
        session.mode = "approve"
        if session.pending is not None:
            self._show_proposal(session.pending)
        else:
            self._ask_agent()

    def action_no_agent(self) -> None:
        why = ("no agent in this session: start dgym-tui with --agent NAME --llm NAME "
               "(e.g. --agent debug_agent)")
        self.pdb_console.write(why, style="italic")
        self.notify(why, severity="warning")

    def action_edit_code(self) -> None:
        """Edit the source view's selected lines (the cursor line without a selection)."""
        view = self.source_view
        if view.path is None:
            self.notify("open a file first (file tree)", severity="warning")
            return
        first, last = view.selection
        self.edit_code(view.path, first, last)

    def _edit_refusal(self, path: str) -> str | None:
        """Why lines of ``path`` cannot be edited now (one line), or None."""
        if self.replay is not None or self.session is None:
            return "replay: fork (f) to edit code"
        if not self.started:
            return "the episode has not started yet"
        if self.session.done:
            return "the episode is over"
        if self.busy:
            return "busy: wait for the current step to finish"
        if "rewrite" not in (getattr(self.env, "tools", None) or {}):
            return "the rewrite tool is not enabled in this episode"
        if path not in self._workspace.files:
            return f"{path} is hidden by .debugignore: it cannot be edited"
        if path in self._workspace.readonly:
            return f"{path} is read-only (.debugreadonly): it cannot be edited"
        return None

    def edit_code(self, path: str, start: int, end: int) -> None:
        """Open the code editor on lines ``start``..``end`` (1-based, inclusive) of ``path``.

        Ctrl+S in the editor runs ONE ``rewrite`` tool call through the session,
        recorded as a manual action; a read-only / ignored file, replay or a
        busy / finished episode is refused with a notification saying why.
        """
        why = self._edit_refusal(path)
        if why is not None:
            self.notify(why, severity="warning")
            return
        text = self.source_view.text if self.source_view.path == path else None
        if text is None:
            self.notify(f"open {path} first (file tree)", severity="warning")
            return
        old = "".join(text.splitlines(keepends=True)[start - 1:end])

        def done(new_code: str | None) -> None:
            self.source_view.clear_selection()
            if new_code is None:
                return
            if new_code == old or new_code == old.rstrip("\n"):
                self.notify("unchanged: nothing rewritten")
                return
            self.act(ToolCall(name="rewrite", arguments={
                "path": path, "start": start, "end": end, "new_code": new_code}))

        self.push_screen(CodeEditScreen(path, start, end, old), done)

    def action_run_eval(self) -> None:
        self.act(ToolCall(name="eval", arguments={}))

    def action_show_diff(self) -> None:
        """Show the diff tab (kept current by every step that changes a file)."""
        self.query_one(TabbedContent).active = "tab-diff"

    def _offer_apply(self) -> None:
        if (self.ask_apply and self.can_apply and not self._asked_apply
                and self.env is not None):
            self._asked_apply = True
            self.action_apply_patch()

    def action_apply_patch(self) -> None:
        env = self.env
        if env is None or not self.can_apply or not self.started:
            return
        patch = self._workspace.patch or ""
        if not patch.strip():
            self.notify("no changes to apply")
            return
        source = str(env.path)

        def done(yes: bool | None) -> None:
            if yes:
                self._apply_patch(source)

        self.query_one(DiffView).set_patch(patch)
        self.push_screen(ConfirmScreen(f"Apply the patch to the original repository {source}?",
                                       patch), done)

    @work(thread=True, group="session", exit_on_error=False)
    def _apply_patch(self, source: str) -> None:
        """Write the working copy's changes into the original (a three-way merge with edits
        made there meanwhile, or a refusal that names the files), under the session's lock."""
        session = self.session
        self._calling(True)
        try:
            with session.lock:
                if session.env.workspace is None:
                    return
                changed = session.env.workspace.apply_to_source()
        except Exception as exc:  # noqa: BLE001  refused (conflicting edits) or I/O
            self.post_message(PatchApplied(source, [], str(exc) or type(exc).__name__))
            return
        finally:
            self._calling(False)
        self.post_message(PatchApplied(source, changed))

    @on(PatchApplied)
    def _patch_applied(self, message: PatchApplied) -> None:
        if message.error is not None:
            self._quit_after_apply = False  # refused: stay, so the fix is not lost
            self.notify(f"patch NOT applied: {describe(message.error)}", severity="error",
                        title="apply", timeout=15)
            self.pdb_console.write(f"patch not applied to {message.source}: {message.error}",
                                   style="bold red")
            return
        self._applied_patch = self._workspace.patch
        if self._quit_after_apply:
            self.call_later(self.action_quit_app)
        self.notify(f"applied {len(message.changed)} file(s) to {message.source}")
        self.pdb_console.write(f"patch applied to {message.source}: "
                               f"{', '.join(message.changed)}")

    def action_zoom(self) -> None:
        """Zoom the focused pane (source, console, side column) to the screen, or back."""
        screen = self.screen
        if screen.maximized is not None:
            screen.minimize()
            return
        focused = self.focused
        if focused is None:
            return
        pane = next((n for n in focused.ancestors_with_self
                     if getattr(n, "id", None) in ("side", "console", "source", "tree")), focused)
        screen.maximize(pane, container=False)

    def action_toggle_pane(self, name: str) -> None:
        """Show or hide the file tree (``tree``) or the side column (``side``)."""
        shown = self.query_one(f"#{name}").display
        self.screen.set_class(not shown, f"-show-{name}")
        self.screen.set_class(shown, f"-hide-{name}")

    def action_focus_console(self, prefix: str = "") -> None:
        """Focus the console; ``prefix`` (``":"``) starts its line when it is empty."""
        console_input = self.pdb_console.input
        if prefix and not console_input.value:
            console_input.value = prefix
            console_input.cursor_position = len(prefix)
        console_input.focus()

    def action_focus_source(self) -> None:
        self.source_view.focus()

    # -- replay ------------------------------------------------------------------
    def _mount_replay(self) -> None:
        model = self.replay
        self.source_view.interactive = False
        self.source_view.refresh_bindings()
        self.sub_title = f"replay · {model.task_name}"
        self.status.update_status(task=model.task_name, budget=len(model), mode="replay")
        self._refresh_tree(model.initial)
        self.show_step(0)

    def show_step(self, step: int) -> None:
        """Replay: show the state after ``step`` (0 = reset; clamped to the trajectory)."""
        model = self.replay
        step = max(0, min(step, len(model)))
        self.step_index = step
        result = model.result_at(step)
        self._last_result = result
        self.transcript.set_turns(model.turns_until(step))
        if result.frame is not None:
            path, line = result.frame
        else:
            files = model.files()
            where = locate_failure(model.initial.eval_output, files,
                                   model.initial.eval)
            path, line = where if where else (first_source_file(files), 1)
        if path is None:
            self.source_view.load(None, "")
        else:
            self._open(path, line)
        self._refresh_marks(result)
        self._refresh_tree(result)
        self.debug_panel.show(None, result, replay=True)
        self._update_status(result)
        extra = f"replay step {step}/{len(model)}"
        if step == len(model) and model.trajectory.footer:
            extra += f" · {model.trajectory.footer.get('reason') or 'finished'}"
        self.status.update_status(step=step, extra=extra)
        self.pdb_console.log_widget.clear()
        turn = model.turns[step - 1] if step else None
        if turn is None:
            self.pdb_console.write(model.initial.observation)
        else:
            if turn.action is not None:
                self.pdb_console.write(f"› {format_action(turn.action)}  ({turn.decision})",
                                   style="bold")
            if turn.note:
                self.pdb_console.write(f"note: {turn.note}", style="italic")
            if turn.error:
                self.pdb_console.write(f"invalid proposal: {turn.error}", style="red")
            self.pdb_console.write(turn.observation)

    def action_replay_step(self, delta: int) -> None:
        if self.replay is not None:
            self.show_step(self.step_index + delta)

    def action_replay_goto(self, step: int) -> None:
        if self.replay is not None:
            self.show_step(len(self.replay) if step < 0 else step)

    def action_fork(self) -> None:
        if self.replay is None:
            return
        if self.fork_factory is None:
            self.notify("fork is not available for this trajectory", severity="warning")
            return
        if self.busy:
            return
        self._set_busy(f"forking at step {self.step_index}")
        self._fork(self.step_index)

    @work(thread=True, group="session", exit_on_error=False)
    def _fork(self, step: int) -> None:
        """Build the fork (re-executes ``step`` recorded actions) like any session call:
        quitting meanwhile waits for it, then closes what it built."""
        self._calling(True)
        try:
            session = self.fork_factory(step)
            if self._closed:  # quit while forking: nobody will show it
                session.finish("quit")
                session.env.close()
                return
            bridge = SessionBridge(session, self.post_message, lambda: None)
            state, source, inspection = bridge.snapshot()
        except Exception as exc:  # noqa: BLE001  shown to the user
            text = first_line(exc)
            self._to_ui(self._fork_failed, text)
            return
        finally:
            self._calling(False)
        self.post_message(Forked(session, state, source, inspection))

    def _fork_failed(self, text: str) -> None:
        self._set_busy(None)
        self.notify(f"fork failed: {text}", severity="error")

    @on(Forked)
    def _go_live(self, message: Forked) -> None:
        """Switch from replay to a live (already started) session."""
        session = message.session
        replay, self.replay = self.replay, None
        replay.close()
        self._unfreeze_gc()
        self.source_view.interactive = True
        self.source_view.refresh_bindings()
        self.session = session
        self.started = True
        self._set_busy(None)
        self.sub_title = f"fork · {session.task_name}"
        bridge = self._subscribe(session)
        bridge.generation = session.env.generation
        self._workspace = message.state
        self.transcript.set_turns(list(session.turns))
        last = session.last or session.initial
        self._last_result = last
        self._refresh_tree(last)
        self.query_one(DiffView).set_patch(message.state.patch or "")
        if message.source is not None:
            line = last.frame[1] if last.frame and last.frame[0] == message.source.path else 1
            self._open(message.source.path, line, message.source)
        self._refresh_marks(last)
        self._inspection = message.inspection
        self._show_debug(message.inspection, last)
        self.status.update_status(task=session.task_name, budget=session.max_steps,
                                  mode=session.mode, agent=session.policy is not None,
                                  extra=f"forked at step {len(session.turns)}")
        self._update_status(last)
        self.pdb_console.write(f"forked: {len(session.turns)} recorded steps re-executed; live now",
                               style="bold")
        self.refresh_bindings()

    # -- debug panes ---------------------------------------------------------------
    @on(StackPane.FrameChosen)
    def _frame_chosen(self, message: StackPane.FrameChosen) -> None:
        """Move pdb to the chosen frame (``u N`` / ``d N``, recorded like any command)."""
        if self.replay is not None or message.index == message.current:
            return
        delta = message.current - message.index
        self.act(pdb_call(f"u {delta}" if delta > 0 else f"d {-delta}"))

    @on(VariablesPane.ScopeChanged)
    def _scope_changed(self, message: VariablesPane.ScopeChanged) -> None:
        if self.replay is None and self.started and not self.busy:
            self._inspect(message.scope)

    @work(thread=True, group="inspect", exclusive=True, exit_on_error=False)
    def _inspect(self, scope: str) -> None:
        session = self.session
        if session is not None and not self._closed:
            self.post_message(Inspected(session.inspect(scope=scope)))

    @on(Inspected)
    def _inspected(self, message: Inspected) -> None:
        if message.inspection is not None and self.replay is None:
            self._inspection = message.inspection
            self._show_debug(message.inspection, self._last_result)

    @on(BreakpointsPane.Command)
    def _breakpoint_command(self, message: BreakpointsPane.Command) -> None:
        if self.replay is None:
            self.act(pdb_call(message.command))
        else:
            self.notify("replay: fork (f) to act", severity="warning")

    @on(BreakpointsPane.EditCondition)
    def _edit_condition(self, message: BreakpointsPane.EditCondition) -> None:
        row = message.row

        def done(condition: str | None) -> None:
            if condition is not None:
                self.act(pdb_call(f"condition {row.number} {condition}".rstrip()))

        self.push_screen(PromptScreen(f"Condition of the breakpoint at {row.path}:{row.line} "
                                      "(empty: none)", "e.g. x > 3", row.condition or ""), done)

    # -- command palette -----------------------------------------------------------
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Built-in commands (themes, quit, ...) plus one per key action available now."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for binding in self.KEYS:
            if binding.action in seen:
                continue
            seen.add(binding.action)
            if not self.action_available(action_name(binding.action)):
                continue
            help_text = self.ACTION_HELP.get(binding.action, binding.description)
            title = f"{binding.description} [{self._key_label(binding)}]"
            yield SystemCommand(title, help_text, partial(self._palette_action, binding.action))
        if self.session is not None:
            yield SystemCommand("Edit code [E]", self.ACTION_HELP["edit_code"],
                                self.action_edit_code)

    async def _palette_action(self, action: str) -> None:
        """Run a key action chosen in the command palette (the palette is closing, so the
        dialog check of :meth:`check_action` does not apply)."""
        if self.action_available(action_name(action)):
            await self.action_direct(action)
