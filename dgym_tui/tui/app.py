"""The dgym-tui Textual app: watch, step, approve, edit, reject or take over each turn.

Every action, human or agent, goes through :class:`dgym_tui.episode.session.Session`;
the app never calls ``env.step`` or a tool itself. Session calls block (pdb,
eval, Docker, LLM), so they run in thread workers; a
:class:`~dgym_tui.tui.bridge.SessionBridge` turns the session's events into
typed messages (:mod:`dgym_tui.tui.messages`) whose payload (files, patch,
source text, pdb's stack and variables) is read in the worker under the
session's lock, so the UI thread never touches the environment.

Replay mode shows a recorded trajectory step by step (no environment); "fork
here" rebuilds the task, re-executes the recorded actions up to the step in a
fresh environment and continues live.

The app is assembled from mixins, one job each: :mod:`~dgym_tui.tui.app_keys`
(keys, help, command palette), :mod:`~dgym_tui.tui.session_calls` (workers,
quitting), :mod:`~dgym_tui.tui.agent_turns` (proposals and decisions),
:mod:`~dgym_tui.tui.code_edits` (code editor, applying the patch),
:mod:`~dgym_tui.tui.replay_mode` (replay, fork) and
:mod:`~dgym_tui.tui.widget_events` (what the widgets ask for); this module
lays the screen out and shows the session's events.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Input, TabbedContent, TabPane

from dgym_tui.core.safetext import one_line, strip_controls
from dgym_tui.core.types import DEFAULT_TASK, StepResult, ToolCall
from dgym_tui.episode.records import Turn
from dgym_tui.tui import pause_gc, resume_gc
from dgym_tui.tui.actions import pdb_call
from dgym_tui.tui.agent_turns import AgentTurns
from dgym_tui.tui.app_keys import AppKeys
from dgym_tui.tui.bridge import SessionBridge
from dgym_tui.tui.code_edits import CodeEdits
from dgym_tui.tui.key_order import OrderedKeys
from dgym_tui.tui.keys import with_quiet_twins
from dgym_tui.tui.locate import no_tests_hint
from dgym_tui.tui.messages import (
    AgentThinking,
    CopyReady,
    EpisodeEnded,
    FileRead,
    ModeChanged,
    ProposalReady,
    SessionFailed,
    SessionStarted,
    SourceText,
    StepStarted,
    TurnRecorded,
    WorkspaceState,
)
from dgym_tui.tui.replay_mode import ReplayMode
from dgym_tui.tui.screen_hold import ScreenHold
from dgym_tui.tui.session_calls import SessionCalls
from dgym_tui.tui.themes import load_themes
from dgym_tui.tui.widget_events import WidgetEvents
from dgym_tui.tui.widgets.approve_panel import ApprovePanel
from dgym_tui.tui.widgets.console import PdbConsole
from dgym_tui.tui.widgets.debug_panel import DebugPanel
from dgym_tui.tui.widgets.diff_view import DiffView
from dgym_tui.tui.widgets.file_tree import FileTree
from dgym_tui.tui.widgets.footer import KeyFooter
from dgym_tui.tui.widgets.source_view import SourceView, warm_up_in_background
from dgym_tui.tui.widgets.status_bar import StatusBar
from dgym_tui.tui.widgets.transcript import Transcript, format_action

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session
    from dgym_tui.tui.replay_model import ReplayModel

#: Busy labels per tool name (shown next to the spinner).
_BUSY = {"eval": "running eval", "pdb": "pdb", "rewrite": "rewriting", "submit": "submitting"}


class DgymApp(OrderedKeys, AppKeys, SessionCalls, AgentTurns, CodeEdits, ReplayMode, WidgetEvents,
              App[int]):
    """The dgym-tui app.

    Args:
        session: a live :class:`~dgym_tui.episode.session.Session` (not started; the
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
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    TITLE = "dgym-tui"
    ENABLE_COMMAND_PALETTE = True

    #: ``AppKeys.KEYS`` plus their hidden twins (see :mod:`dgym_tui.tui.keys`).
    BINDINGS: ClassVar[list[BindingType]] = with_quiet_twins(AppKeys.KEYS, AppKeys.QUIET)

    def __init__(self, session: Session | None = None, replay: ReplayModel | None = None,
                 fork: Callable[[int], Session] | None = None, ask_apply: bool = True,
                 theme_name: str = "dgym-dark", can_apply: bool = True) -> None:
        super().__init__()
        if (session is None) == (replay is None):
            raise ValueError("give exactly one of session= or replay=")
        self.session: Session | None = session
        self.replay: ReplayModel | None = replay
        self.fork_factory = fork
        self.ask_apply = ask_apply
        self.can_apply = can_apply
        self.step_index = 0  # replay position
        self.busy = False
        self.started = False
        self.start_error: str | None = None
        # Not ``_closed``: that is Textual's own flag of a closed message pump. Set from
        # close_session, it made the app drop every message (exit() too), so an app whose
        # episode was closed by a worker (the study's give up / time out) never exited.
        self._session_closed = False
        self._close_lock = threading.Lock()
        self._close_done = threading.Event()  # close_session has finished
        self._calls = 0  # session calls running in worker threads
        self._screen_hold = ScreenHold(self)
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
        # console lines typed while a step ran: run in order once it returns
        self._typed_ahead: collections.deque[str] = collections.deque()
        self._agent_error: str | None = None  # the last failed proposal's error
        self._agent_failures = 0  # failed proposals in a row (backoff)
        self._retry_timer: Any = None
        self._hinted_no_tests = False
        self._frame_stale = False  # files changed under a stopped pdb: it restarts
        self._workspace = WorkspaceState([], frozenset(), "")  # as the last message said
        self._inspection: Any = None  # pdb's stack / variables at the last stop
        self._bridge: SessionBridge | None = None
        # The imported modules (and a loaded trajectory) live as long as the app: kept out
        # of full passes from now on; a live session freezes its start-up objects again.
        self._freeze_gc()
        for theme in load_themes():
            self.register_theme(theme)
        if theme_name in self.available_themes:
            # Set before the first paint: on_mount would re-parse all CSS and restyle
            # every widget a second time.
            self.theme = theme_name

    # -- layout --------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        """Textual's default screen with its breakpoint classes for the terminal's size.

        Set before the screen is first styled: its first resize would otherwise add
        them and restyle every widget a second time before the first paint. Textual's
        own resize handler keeps them up to date afterwards.
        """
        screen = super().get_default_screen()
        width, height = self.size
        screen.add_class(*screen._get_breakpoint_classes(width, self.HORIZONTAL_BREAKPOINTS),
                         *screen._get_breakpoint_classes(height, self.VERTICAL_BREAKPOINTS),
                         update=False)
        return screen

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Textual's toast, always as plain text: a toast often names a file, a frame or an
        error the sandbox wrote, so it is never read as markup and its terminal controls are
        removed (widgets' ``notify`` comes here too). ``markup`` is accepted and ignored."""
        super().notify(strip_controls(str(message)), title=one_line(str(title)),
                       severity=severity, timeout=timeout, markup=False)

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield FileTree(id="tree")
            with Vertical(id="center"):
                yield SourceView(id="source")
                yield ApprovePanel(id="approve")
                yield PdbConsole(id="console")
            human = self.session is not None and self.session.policy is None
            with TabbedContent(id="side", initial="tab-debug" if human else "tab-transcript") as side:
                side.ALLOW_MAXIMIZE = True  # type: ignore[misc]  # z zooms the whole column
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

    def on_load(self) -> None:
        pause_gc()  # the app runs: until its first frame (on_mount), if dgym-tui did not yet

    def on_mount(self) -> None:
        self.call_after_refresh(resume_gc)  # after the first frame
        # Focus at once, not after the next refresh (Widget.focus), so that the footer
        # builds the keys of the focused source view into the first frame. The view's own
        # screen: a subclass may have pushed a dialog over it (the study's instructions).
        view = self.source_view
        view.screen.set_focus(view)
        if self.replay is not None:
            self._mount_replay()
        else:
            self._mount_session()
        view.screen.query_one(KeyFooter).show_keys()

    # -- live session ----------------------------------------------------------
    def _mount_session(self) -> None:
        session = self.session
        self.sub_title = session.task_name or ""
        self.status.update_status(task=session.task_name, budget=session.max_steps,
                                  mode=session.mode, agent=session.policy is not None,
                                  sandbox=session.terminal_name)
        self._subscribe(session)
        self._set_busy("starting the episode")
        # The reset's thread starts after the first frame: it held the GIL for part of the
        # first layout and paint (~0.07-0.15 s later), and the episode is not ready later.
        self.call_after_refresh(self._start_session)
        # pygments and the lexer's rules load while the reset waits for its eval, not when
        # the first file is shown
        self.call_after_refresh(warm_up_in_background)

    def _subscribe(self, session: Any) -> SessionBridge:
        self._bridge = SessionBridge(session, self.post_message, lambda: self._current_path)
        session.subscribe(self._bridge)
        return self._bridge

    def act(self, action: ToolCall) -> bool:
        """Run a human action through the session (in a worker). Returns False if busy
        (nothing is echoed in the console then: the action did not run)."""
        refused = self._call_refused() if self.session is not None else None
        if refused is not None and not (self.session.done):
            self.notify(refused, severity="warning")
            return False
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
    @on(CopyReady)
    def _copy_ready(self, message: CopyReady) -> None:
        """The files, while the sandbox starts and the first eval runs (up to its timeout)."""
        if self.started:
            return
        self._workspace = message.workspace
        self._refresh_tree(None)
        if message.location is not None:
            self._open(message.location[0], message.location[1], message.source)
        limit = message.eval_timeout
        self.status.set_busy("first eval", limit=limit)
        self.pdb_console.set_notice(
            f"the first eval runs{f' (stopped after {limit:g} s)' if limit else ''}: "
            f"{one_line(self.session.entrypoint)}")

    @on(SessionStarted)
    def _started(self, message: SessionStarted) -> None:
        self.started = True
        self.pdb_console.set_notice(None)
        self._freeze_gc()  # the episode's start-up objects: full passes paused stops ~80 ms
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
        # the observation starts with the task's description: show it, not the eval's end
        log = self.pdb_console.log_widget
        log.call_after_refresh(log.scroll_home, animate=False)

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
        # a person's own action was echoed when typed; an edited proposal was not
        self._write_turn(turn, echo_action=turn.actor == "agent" or turn.decision == "edited")
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

    def _write_turn(self, turn: Turn, echo_action: bool = True) -> None:
        """Write a turn's action (when ``echo_action``), note and invalid-proposal error
        to the console."""
        if turn.action is not None and echo_action:
            self.pdb_console.write(f"› {format_action(turn.action)}  ({turn.decision})",
                                   style="bold")
        if turn.note:
            self.pdb_console.write(f"note: {turn.note}", style="italic")
        if turn.error:
            self.pdb_console.write(f"invalid proposal: {turn.error}", style="red")

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
        if reason and not self._session_closed and not self._will_offer_apply():
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
        if getattr(summary, "timed_out", False):
            timeout = self.session.eval_timeout if self.session is not None else None
            text = (f"the entrypoint timed out{f' after {timeout:g} s' if timeout else ''} and "
                    "was stopped: its tests did not finish (a test that hangs, or waits for "
                    "input?)")
            self.pdb_console.write(text, style="bold red")
            self.notify(text, severity="error", timeout=10)
        elif summary.exit_code in (126, 127) and summary.passed == 0:
            text = (f"the entrypoint could not run (exit code {summary.exit_code}); "
                    "check --entrypoint")
            self.pdb_console.write(text, style="bold red")
            self.notify(text, severity="error", timeout=10)
        elif summary.total == 0 and not self._hinted_no_tests and self.session is not None:
            self._hinted_no_tests = True
            hint = no_tests_hint(self._workspace.files, self.session.entrypoint)
            self.pdb_console.write(hint, style="bold yellow")
            self.notify(hint, severity="warning", timeout=15)
        elif (summary.total and summary.passed == summary.total and self.session is not None
              and self.session.task_text == DEFAULT_TASK
              and result is self.session.initial):
            # the default task text (none given) says the tests fail: say that they all
            # pass at the start
            self.pdb_console.write(f"every test passes now ({summary.passed}/{summary.total}): "
                                   "the task text above is the default one; there may be "
                                   "nothing to fix (--entrypoint picks other tests)",
                                   style="bold yellow")

    def _after_restart(self, action: ToolCall) -> ToolCall:
        """pdb restarts at this command (the code changed under it): a step key would step
        through the test runner's start, so n / s / r / u / d run to the breakpoints (c).
        Any other command but ``c`` runs at the program's top: the console says so (``p x``
        answers NameError there)."""
        command = str(action.arguments.get("command", "")).strip()
        breakpoints = self._last_result.breakpoints if self._last_result else []
        if command in ("n", "s", "r", "u", "d", "next", "step", "return") and breakpoints:
            self.pdb_console.write(f"[pdb restarts on the changed code: `c` to your breakpoint "
                                   f"instead of `{command}`]", style="italic")
            return pdb_call("c")
        verb = command.split(" ", 1)[0]
        if verb not in ("c", "cont", "continue", "b", "break", "tbreak", "cl", "clear",
                        "condition", "disable", "enable", "restart", "run"):
            self.pdb_console.write(
                f"[pdb restarts on the changed code, at the top of the program: `{command}` "
                "runs there, not where pdb stood (names of that frame are not defined yet: "
                "NameError); `c` runs to your breakpoints]", style="bold yellow")
        return action

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
            why = (self.replay.unavailable or "source not available at this step") \
                if self.replay is not None else "not shown: binary, not UTF-8, or gone"
            view.placeholder = f"({one_line(path)}: {why})"
            view.load(None, "")
            view.border_title = Text(one_line(path))  # a file name, never markup
            self._current_path = None
            return
        self._current_path = path
        view.load(path, strip_controls(text, keep_lines=True), line)  # the file's text is data
        view.border_title = Text(one_line(path))
        self.query_one(FileTree).select_path(path)
        if self._last_result is not None:
            self._refresh_marks(self._last_result, follow=False)

    @work(thread=True, group="read", exit_on_error=False)
    def _read_file(self, path: str, line: int | None) -> None:
        session = self.session
        if session is None or self._session_closed or session.generation is None:  # closed
            return
        # not under the session's lock: the first eval holds it (up to its timeout) while
        # the files are already shown; read_file takes it when it must
        self.post_message(FileRead(SourceText(path, session.read_file(path)), line))

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

    def _refresh_tree(self, result: StepResult | None) -> None:
        tree = self.query_one(FileTree)
        if self.replay is not None:
            files = self.replay.files()
            readonly = {f for f in files if self.replay.is_readonly(f)}
        else:
            files, readonly = self._workspace.files, set(self._workspace.readonly)
        tree.set_files(files, readonly, set(result.changed_files) if result else set())

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

    def action_run_eval(self) -> None:
        self.act(ToolCall(name="eval", arguments={}))

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
        screen.maximize(pane, container=False)  # type: ignore[arg-type]  # a widget

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
