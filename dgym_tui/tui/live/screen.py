"""The live screen: watch, step, approve, edit, reject or take over each turn of a session.

Every action, human or agent, goes through the :class:`~dgym_tui.episode.session.Session`
(:class:`~dgym_tui.tui.live.session_worker.SessionWorker` runs its blocking calls on the
session's thread); a :class:`~dgym_tui.tui.bridge.SessionBridge` turns its events into the
typed messages of :mod:`dgym_tui.tui.messages`, read on that thread under the session's
lock, so the UI thread never touches the environment.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.binding import BindingType
from textual.timer import Timer
from textual.widgets import Input

from dgym_tui.core.errors import first_line
from dgym_tui.core.safetext import one_line, strip_controls
from dgym_tui.core.types import DEFAULT_TASK, StepResult, ToolCall
from dgym_tui.tui.actions import console_action, pdb_call
from dgym_tui.tui.bridge import SessionBridge
from dgym_tui.tui.episode_screen import EpisodeScreen, breakpoint_marks
from dgym_tui.tui.keys import bindings_of, keys_of, tool_syntax
from dgym_tui.tui.live.session_worker import SessionCall, SessionWorker
from dgym_tui.tui.locate import first_source_file, no_tests_hint
from dgym_tui.tui.screen_hold import ScreenHold, after_next_frame
from dgym_tui.tui.widgets.approve_panel import ApprovePanel
from dgym_tui.tui.widgets.breakpoints import BreakpointsPane
from dgym_tui.tui.widgets.console import PdbConsole
from dgym_tui.tui.widgets.diff_view import DiffView
from dgym_tui.tui.widgets.file_tree import FileTree
from dgym_tui.tui.widgets.source_view import (
    RECENT_FILES,
    LexedAhead,
    SourceView,
    lex_ahead,
    warm_up_in_background,
)
from dgym_tui.tui.widgets.stack import StackPane
from dgym_tui.tui.widgets.transcript import format_action
from dgym_tui.tui.widgets.variables import VariablesPane
from dgym_tui.tui.workspace_state import SourceText, WorkspaceState

if TYPE_CHECKING:
    from dgym_tui.episode.records import Proposal
    from dgym_tui.episode.session import Session
    from dgym_tui.tui.live.running import Live
    from dgym_tui.tui.messages import (
        CallDone,
        CopyReady,
        EpisodeEnded,
        FileLexedAhead,
        FileRead,
        Inspected,
        ModeChanged,
        ProposalReady,
        SessionFailed,
        SessionStarted,
        StepStarted,
        TurnRecorded,
    )

#: Busy labels per tool name (shown next to the spinner).
_BUSY = {"eval": "running eval", "pdb": "pdb", "rewrite": "rewriting", "submit": "submitting"}

_SPECS = keys_of("live")
#: Seconds the app's thread waits, at most, for the session's thread to take a step
#: (:meth:`SessionWorker.call`'s ``head_start``): about the time it needs to reach pdb.
STEP_HEAD_START = 0.002
#: Seconds the reset waits at most for the first frame before it begins anyway (an app
#: that never draws one, e.g. closed at once).
FIRST_FRAME_WAIT = 1.0
#: pdb's commands that continue to the next breakpoint: their stop's rows are drawn ahead
#: (:meth:`SourceView.draw_ahead`) while pdb runs, for the breakpoints of files lexed ahead.
CONTINUE_VERBS = ("c", "cont", "continue")
#: Seconds after such a command's start before its rows are drawn: the session's thread
#: has written it to pdb by then (the two threads share one GIL).
AHEAD_DELAY = 0.01
#: Stops drawn ahead per ``c``, at most: the breakpoints set last first (each stop in
#: another part of a file draws a view's height of rows, ~0.2 ms each).
AHEAD_STOPS = 2
#: Commands typed while a step runs (keys and console lines) that wait to run after it, at
#: most; a held-down key past that is dropped with a notice.
TYPED_AHEAD_MAX = 20

#: A session call's follow-ups on the UI thread: ``(done(result), failed(exception))``.
_Followups = tuple[Callable[[Any], None] | None, Callable[[BaseException], None] | None]


class LiveScreen(EpisodeScreen):
    """One live session on screen.

    Args:
        worker: the session's :class:`SessionWorker` (the app closes it).
        ask_apply: offer to apply the patch to the original when the episode ends.
        can_apply: False when the original is not the user's: ``w`` is off.
        running: None to start the session here; a :class:`Live` for one already
            running (a fork or a branch).
    """

    SPECS = _SPECS
    BINDINGS: ClassVar[list[BindingType]] = bindings_of(_SPECS)

    #: Seconds before the agent is asked again after 1, 2, 3+ failed proposals in a row.
    AGENT_RETRY: ClassVar[tuple[float, ...]] = (5.0, 20.0, 60.0)

    def __init__(self, worker: SessionWorker, ask_apply: bool = True, can_apply: bool = True,
                 running: Live | None = None) -> None:
        self.worker = worker
        self.session: Session = worker.session
        super().__init__("tab-debug" if self.session.policy is None else "tab-transcript")
        self.ask_apply = ask_apply
        self.can_apply = can_apply
        self._live = running
        self._workspace = running.state if running else WorkspaceState([], frozenset(), "")
        self._inspection: Any = running.inspection if running else None
        self._followups: dict[SessionCall, _Followups] = {}
        self._typed_ahead: collections.deque[str] = collections.deque()  # run after the step
        self._agent_error: str | None = None  # the last failed proposal's error
        self._agent_failures = 0  # failed proposals in a row (backoff)
        self._retry_timer: Timer | None = None
        self._pause_requested = False
        self._asked_apply = False
        self._applied_patch: str | None = None  # the patch `w` last wrote to the original
        self._quit_after_apply = False
        self._quit_confirmed = False  # "quit anyway" was answered
        self._hinted_no_tests = False
        self._frame_stale = False  # files changed under a stopped pdb: it restarts
        self._early_path: str | None = None  # the file shown before the copy (the original's)
        #: the breakpoints whose files were lexed ahead (path, line), and those files by path
        self._laid_out: set[tuple[str, int]] = set()
        self._ahead: dict[str, tuple[LexedAhead, list[int]]] = {}  # newest last
        self._echo_waits = False  # a step's echo waits in the console for its answer (act)
        #: ``busy`` as a plain attribute (the session's thread reads it)
        self._busy_label = ""
        self._bridge = SessionBridge(self.session, self.post_message, lambda: self._current_path,
                                     step_shown=self._step_shown)

    @property
    def started(self) -> bool:
        return self.worker.started

    def on_mount(self) -> None:  # before EpisodeScreen.on_mount (Textual calls both)
        self._screen_hold = ScreenHold(self.app, on_grace=self._show_busy)

    def watch_busy(self, label: str) -> None:
        self._busy_label = label
        if not label:
            self._write_echo()  # if nothing was written after it
            super().watch_busy(label)
            self._screen_hold.release()  # the call's end and its result: one frame
        elif not self._screen_hold.held:
            self._write_echo()
            super().watch_busy(label)
        # else: a held step shows its label and spinner when the hold's grace ends
        # (_show_busy); a quick step never does: its frame drew neither the spinner
        # started and stopped (6 cells, ~1 ms of the frame) nor the two timers they start

    def _show_busy(self) -> None:
        """The hold's grace ran out with a call still running: show its label and
        spinner (in the frame the release draws)."""
        if self.busy:
            self._write_echo()
            super().watch_busy(self.busy)

    def _write_echo(self) -> None:
        """Write the running step's echo now if it still waits for its answer (:meth:`act`)."""
        if self._echo_waits:
            self._echo_waits = False
            self.pdb_console.flush()

    # -- start -------------------------------------------------------------------------------
    def show_episode(self) -> None:
        session = self.session
        self.status.update_status(task=session.task_name, budget=session.max_steps,
                                  mode=session.mode, agent=session.policy is not None,
                                  sandbox=session.terminal_name)
        if self._live is not None:
            self._show_running(self._live)
            return
        self.app.sub_title = session.task_name or ""
        session.subscribe(self._bridge)
        self.busy = "starting the episode"
        # The reset is queued now and begins once the first frame is drawn: until then the
        # app's thread has the interpreter to itself (the reset's imports, working copy and
        # terminal took ~25 ms of it before the first frame, docs/performance.md); the
        # first frame shows the first file read from the original, not the copy.
        drawn = threading.Event()
        after_next_frame(self.app, drawn.set)
        self._call(lambda: self._start_after(drawn), name="start", failed=self._start_failed)
        # the first file, read from the original, in the first frame (until the copy),
        # without its syntax colours: pygments' import and the Python lexer's rules (~50 ms
        # of the app's thread) come right after the first frame, while the reset runs
        early = session.first_file_preview(first_source_file)
        if early is not None:
            self._early_path = early[0]
            self.show_text(early[0], 1, early[1], "", highlight=False)
        self.call_after_refresh(self._after_first_frame)

    def _start_after(self, drawn: threading.Event) -> StepResult:
        """Session thread: wait until ``drawn`` is set (the first frame handed to the
        terminal), at most :data:`FIRST_FRAME_WAIT` seconds, then reset the environment.

        Returns:
            the reset's :class:`StepResult` (``Session.start``'s; its errors propagate).
        """
        drawn.wait(FIRST_FRAME_WAIT)
        return self.session.start()

    def _after_first_frame(self) -> None:
        """The first file's syntax colours; then pygments and rich's syntax themes (the
        other theme's too) load in a thread while the reset waits for its eval, not when
        the next file is shown."""
        self.source_view.highlight()
        warm_up_in_background()

    def _start_failed(self, error: BaseException) -> None:
        if not self.worker.closed:  # quit while starting: not an error
            self.app.start_error = f"dgym-tui: could not start the episode: {first_line(error)}"
            self.app.exit(2, return_code=2)

    def _show_running(self, live: Live) -> None:
        """Show a session that is already running (a fork or a branch), as it stands."""
        session = self.session
        self.app.sub_title = f"fork · {session.task_name}"
        session.subscribe(self._bridge)
        self._bridge.generation = session.generation
        self.transcript.set_turns(list(session.turns))
        last = session.last or session.initial
        assert last is not None  # running
        self._last_result = last
        self._refresh_tree(last)
        self.query_one(DiffView).set_patch(live.state.patch or "")
        if live.source is not None:
            line = last.frame[1] if last.frame and last.frame[0] == live.source.path else 1
            self.open_file(live.source.path, line, live.source)
        self.refresh_marks(last)
        self.show_debug(live.inspection, last)
        self.status.update_status(extra=live.extra)
        self._update_status(last)
        self.pdb_console.write(live.notice, style="bold")
        notice = fork_source_notice(session.config)
        if notice is not None:
            self.can_apply = False  # the fork's source is a rebuilt copy, not the original
            self.pdb_console.write(notice, style="bold yellow")
            self.notify(notice, severity="warning", timeout=12)
        self.refresh_bindings()

    # -- session calls -----------------------------------------------------------------------
    def _call(self, fn: Callable[[], Any], name: str = "", done: Callable[[Any], None] | None = None,
              failed: Callable[[BaseException], None] | None = None,
              head_start: float = 0.0) -> SessionCall:
        """Run ``fn`` (a blocking session call) on the session's thread; ``done(result)``
        or ``failed(exception)`` follow on the UI thread (not once the session is closed).
        ``head_start``: :meth:`SessionWorker.call`'s."""
        call = self.worker.call(self, fn, name, head_start)
        self._followups[call] = (done, failed)
        return call

    def on_call_done(self, message: CallDone) -> None:  # by name: see on_copy_ready
        message.stop()  # the app has nothing to do with it: no second dispatch there
        # One turn of the event loop later, through the app's queue: the session's thread
        # posts CallDone right behind the step's TurnRecorded, so the widgets that message
        # changed have not handed their refreshes to the screen yet (each does in its own
        # turn). Released now, the screen drew the console and the status bar in one frame
        # and the source view's marker and the Debug tab 40-60 ms later in another.
        self.app.call_later(self._call_finished, message.call)

    def _call_finished(self, call: SessionCall) -> None:
        """A session call returned: busy ends (the screen is drawn), then its follow-up
        (``done`` / ``failed``) and what comes after a step."""
        done, failed = self._followups.pop(call, (None, None))
        if call.name != "apply":  # the calls that set busy
            self.busy = ""
        result = call.outcome
        if result is not None and result.error is not None:
            if failed is not None:
                failed(result.error)
        elif result is not None and done is not None:
            done(result.value)
        if call.name in ("start", "step"):
            self._after_session_call()

    def call_refused(self) -> str | None:
        """Why a session call cannot start now (one runs, the episode has not started),
        or None."""
        if self.busy:
            return "busy: wait for the current step to finish (the key was dropped)"
        if not self.started:
            return "the episode has not started yet (the key was dropped)"
        return None

    def session_call(self, label: str, fn: Callable[[], Any],
                     failed: Callable[[str], None] | None = None) -> bool:
        """Run ``fn`` (a step of the session) in a worker unless a call runs.

        Args:
            label: what the spinner says.
            fn: the call.
            failed: called on the UI thread with the error's first line when ``fn``
                raises (default: an error notification).

        Returns:
            False (and a notification) when it cannot run now.
        """
        refused = self.call_refused()
        if refused is None and self.session.done:
            refused = "the episode is over"
        if refused is not None:
            self.notify(refused, severity="warning")
            return False

        def tell(error: BaseException) -> None:  # the session already emitted LoopFailed
            if not self.worker.closed:
                text = first_line(error)
                if failed is not None:
                    failed(text)
                else:
                    self.notify(text, severity="error", title="step failed")

        self._screen_hold.hold()  # a quick call is drawn once, with its result
        self.busy = label
        # the call before the rest of the step's start (the echo), with a head start: its
        # command reaches pdb first, and pdb works on it while this handler goes on; its
        # end is handled after this handler returns
        self._call(fn, "step", failed=tell, head_start=STEP_HEAD_START)
        if self.source_view.preview is not None:  # a decision (or a step) ends the preview
            self.source_view.set_preview(None)
        return True

    def act(self, action: ToolCall) -> bool:
        """Run a person's action through the session (in a worker). Returns False when it
        did not run (nothing is echoed in the console then)."""
        session = self.session
        refused = self.call_refused()
        if refused is not None and not session.done:
            self.notify(refused, severity="warning")
            return False
        echo = f"› {format_action(action)}"
        if session.done:
            self.pdb_console.write(echo, style="bold")
            why = (f"the episode is over ({session.reason or 'done'}): nothing runs; "
                   "p shows the diff, q quits")
            self.pdb_console.write(why, style="italic")
            self.notify(why, severity="warning")
            return False
        notes: list[tuple[str, str]] = []
        if action.name == "pdb" and self._frame_stale:
            action = self._after_restart(action, notes)
        run = action
        if not self.session_call(_BUSY.get(run.name, run.name), lambda: session.act(run)):
            return False
        if run.name == "pdb" and str(run.arguments.get("command", "")).split(" ")[0] \
                in CONTINUE_VERBS and self._ahead:  # type: ignore[union-attr]
            # once pdb has the command (the session's thread first: the GIL is shared)
            self.set_timer(AHEAD_DELAY, self._draw_ahead)
        # written with the step's answer (one scroll of the console; the screen is held
        # until then), or when the hold's grace ends: meanwhile the session's thread has
        # the GIL to itself on its way to pdb and back
        for text, style in [(echo, "bold"), *notes]:
            self.pdb_console.write_with_next(text, style=style)
        self._echo_waits = True
        self.pane(ApprovePanel).hide()
        return True

    def _after_restart(self, action: ToolCall, notes: list[tuple[str, str]]) -> ToolCall:
        """pdb restarts at this command (the code changed under it): a step key would step
        through the test runner's start, so n / s / r / u / d run to the breakpoints (c).
        Any other command but ``c`` runs at the program's top: the console says so (``p x``
        answers NameError there). The console's lines are appended to ``notes`` as
        ``(text, style)``."""
        command = str(action.arguments.get("command", "")).strip()
        breakpoints = self._last_result.breakpoints if self._last_result else []
        if command in ("n", "s", "r", "u", "d", "next", "step", "return") and breakpoints:
            notes.append((f"[pdb restarts on the changed code: `c` to your breakpoint "
                          f"instead of `{command}`]", "italic"))
            return pdb_call("c")
        verb = command.split(" ", 1)[0]
        if verb not in (*CONTINUE_VERBS, "b", "break", "tbreak", "cl", "clear",
                        "condition", "disable", "enable", "restart", "run"):
            notes.append((
                f"[pdb restarts on the changed code, at the top of the program: `{command}` "
                "runs there, not where pdb stood (names of that frame are not defined yet: "
                "NameError); `c` runs to your breakpoints]", "bold yellow"))
        return action

    def _after_session_call(self) -> None:
        """A step (or the start) returned: run what was typed meanwhile, or hand the
        decision back to the person / ask the agent."""
        session = self.session
        if self.worker.closed or not self.started:
            return
        if session.done:
            self._typed_ahead.clear()
            if self.ask_apply and self.can_apply and not self._asked_apply:
                self._asked_apply = True
                self.action_apply_patch(ended=session.reason or "done")
            return
        if self._run_typed_ahead():
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

    # -- session events (typed messages from the bridge) ------------------------------------
    # Handlers by name (on_<message>), not @on(cls): dgym_tui.tui.messages is then imported
    # by the first message's sender (the session's thread), not before the first frame.
    def on_copy_ready(self, message: CopyReady) -> None:
        """The files, while the sandbox starts and the first eval runs (up to its timeout)."""
        if self.started:
            return
        self._workspace = message.workspace
        self._refresh_tree(None)
        if message.location is not None:
            self.open_file(message.location[0], message.location[1], message.source)
        else:
            self._drop_early_source()
        limit = message.eval_timeout
        self.status.set_busy("first eval", limit=limit)
        self.pdb_console.set_notice(
            f"the first eval runs{f' (stopped after {limit:g} s)' if limit else ''}: "
            f"{one_line(self.session.entrypoint)}")

    def _drop_early_source(self) -> None:
        """The working copy has no file to show first: the file read from
        the original (:meth:`Session.first_file_preview`) does not stay on screen."""
        if self._early_path is not None and self._current_path == self._early_path:
            self.source_view.load(None, "")
            self.source_view.border_title = None
            self._current_path = None
        self._early_path = None

    def on_session_started(self, message: SessionStarted) -> None:
        self.worker.started = True
        self.pdb_console.set_notice(None)
        self.app.freeze_gc()  # the episode's start-up objects: full passes paused stops ~80 ms
        result = message.result
        self._last_result = result
        self._workspace = message.workspace
        self._refresh_tree(result)
        if message.location is not None:
            self.open_file(message.location[0], message.location[1], message.source)
        else:
            self._drop_early_source()
        self.refresh_marks(result)
        self._update_status(result)
        self.debug_panel.show(None, result)
        self.pdb_console.write(result.observation, style="")
        self._check_entrypoint(result)
        # the observation starts with the task's description: show it, not the eval's end
        log = self.pdb_console.log_widget
        log.call_after_refresh(log.scroll_home, animate=False)

    def on_agent_thinking(self) -> None:
        if self.busy:  # events may arrive after the worker already finished
            self.busy = "asking the agent"

    def on_proposal_ready(self, message: ProposalReady) -> None:
        self._clear_agent_error()
        self._update_status(self._last_result)
        if self.session.mode == "approve" and self.session.pending is message.proposal:
            self._show_proposal(self.session.pending)

    def _step_shown(self, action: ToolCall) -> bool:
        """True when :class:`StepStarted` for ``action`` would change nothing: the busy
        label already names its tool (a person's step). Called on the session's thread."""
        return self._busy_label == _BUSY.get(action.name, action.name)

    def on_step_started(self, message: StepStarted) -> None:
        if self.busy:
            self.busy = _BUSY.get(message.action.name, message.action.name)

    def on_turn_recorded(self, message: TurnRecorded) -> None:
        message.stop()  # handled here: not dispatched again on the app's queue
        self._screen_hold.collector_waits_for_frame()  # a slow step's: the hold is over
        turn = message.turn
        self.pane(ApprovePanel).hide()
        self.transcript.add_turn(turn)
        # a person's own action was echoed when typed; an edited proposal was not
        self.write_turn(turn, echo_action=turn.actor == "agent" or turn.decision == "edited")
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

    def on_mode_changed(self, message: ModeChanged) -> None:
        self.status.update_status(mode=message.mode)
        if message.mode != "approve":
            self.pane(ApprovePanel).hide()
        self.refresh_bindings()

    def on_episode_ended(self, message: EpisodeEnded) -> None:
        reason = message.footer.get("reason") or ""
        self.status.update_status(extra=f"done: {reason}" if reason else "done")
        if isinstance(self.focused, Input) and self.focused.id == "console-input":
            self.source_view.focus()  # the console is of no use now; q / ? work again
        self.refresh_bindings()
        if reason and not self.worker.closed and not self._will_offer_apply():
            self.notify(f"episode over ({reason}); q quits", title="done")

    def _will_offer_apply(self) -> bool:
        """True when the episode's end brings the apply dialog (changes to apply, not
        asked yet): its title then says that the episode is over, not a toast over it."""
        return bool(self.ask_apply and self.can_apply and not self._asked_apply
                    and (self._workspace.patch or "").strip())

    def on_session_failed(self, message: SessionFailed) -> None:
        self.pdb_console.write(f"error: {message.text}", style="bold red")

    def _check_entrypoint(self, result: StepResult) -> None:
        """Warn when the entrypoint could not run at all (a typo in --entrypoint), or ran
        no test (pytest collects only ``test_*.py`` / ``*_test.py``: name the candidates)."""
        summary = result.eval
        if summary is None:
            return
        if getattr(summary, "timed_out", False):
            timeout = self.session.eval_timeout
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
        elif summary.total == 0 and not self._hinted_no_tests:
            self._hinted_no_tests = True
            hint = no_tests_hint(self._workspace.files, self.session.entrypoint)
            self.pdb_console.write(hint, style="bold yellow")
            self.notify(hint, severity="warning", timeout=15)
        elif (summary.total and summary.passed == summary.total
              and self.session.task_text == DEFAULT_TASK and result is self.session.initial):
            # the default task text (none given) says the tests fail: say that they all
            # pass at the start
            self.pdb_console.write(f"every test passes now ({summary.passed}/{summary.total}): "
                                   "the task text above is the default one; there may be "
                                   "nothing to fix (--entrypoint picks other tests)",
                                   style="bold yellow")

    # -- views -----------------------------------------------------------------------------
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
                self.open_file(path, line, source)
        elif changed and self._current_path is not None and source is not None:
            self.open_file(self._current_path, None, source)
        self.refresh_marks(result)
        if (action is not None and action.name == "pdb") or self._frame_stale:
            self._inspection = None if self._frame_stale else message.inspection
            self.show_debug(self._inspection, result)
        else:
            self.debug_panel.show_breakpoints(result)
        self._lay_out_ahead(result, changed)

    def _lay_out_ahead(self, result: StepResult, changed: bool) -> None:
        """Have the file of each new breakpoint (set by this step) read and lexed in a
        worker while the app is idle, for the first ``c`` to it (lexing a newly shown file
        was a fifth to a third of the stop's frame); files whose breakpoints are gone are
        forgotten, all of them when the files ``changed``."""
        marks = {(path, int(line)) for path, line in result.breakpoints}
        if changed:
            self._laid_out.clear()
            self._ahead.clear()
        new, self._laid_out = marks - self._laid_out, marks
        for path in [p for p in self._ahead if p not in {p for p, _ in marks}]:
            del self._ahead[path]
        files: dict[str, list[int]] = {}
        for path, line in sorted(new):
            files.setdefault(path, []).append(line)
        for path, lines in list(files.items())[:RECENT_FILES - 1]:  # the shown file stays
            self._lex_ahead(path, lines)

    @work(thread=True, group="ahead", exit_on_error=False)
    def _lex_ahead(self, path: str, lines: list[int]) -> None:
        session = self.session
        if self.worker.closed or session.generation is None:  # closed
            return
        text = session.read_file(path)  # as _read_file: not under the session's lock
        if text is not None:
            from dgym_tui.tui.messages import FileLexedAhead
            self.post_message(FileLexedAhead(
                lex_ahead(path, strip_controls(text, keep_lines=True), lines), lines))

    def on_file_lexed_ahead(self, message: FileLexedAhead) -> None:
        ahead = message.ahead
        _before, lines = self._ahead.pop(ahead.path, (None, []))  # its lines set before first
        self._ahead[ahead.path] = (ahead, [n for n in lines if n not in message.stops]
                                   + message.stops)
        while len(self._ahead) > RECENT_FILES - 1:
            del self._ahead[next(iter(self._ahead))]
        self.source_view.keep_ahead(message.ahead)

    def _draw_ahead(self) -> None:
        """Draw the rows of a stop at the breakpoints set last (:data:`AHEAD_STOPS`) of the
        files lexed ahead, while pdb continues (the focus, the size and the scroll are the
        stop's then)."""
        result = self._last_result
        if result is None or not self.busy:
            return
        left = AHEAD_STOPS
        for ahead, lines in reversed(self._ahead.values()):
            marks = breakpoint_marks(result, ahead.path)
            stops = [line for line in reversed(lines) if line in marks][:left]
            if stops:
                self.source_view.draw_ahead(ahead, marks, stops)
                left -= len(stops)
            if left <= 0:
                return

    def open_file(self, path: str, line: int | None, source: SourceText | None = None) -> None:
        """Show ``path`` at ``line``: from ``source`` (read in a worker), else read in a
        worker first (:class:`FileRead`)."""
        if source is None or source.path != path:
            self._read_file(path, line)
            return
        self.show_text(path, line, source.text, "not shown: binary, not UTF-8, or gone")

    @work(thread=True, group="read", exit_on_error=False)
    def _read_file(self, path: str, line: int | None) -> None:
        session = self.session
        if self.worker.closed or session.generation is None:  # closed
            return
        # not under the session's lock: the first eval holds it (up to its timeout) while
        # the files are already shown; read_file takes it when it must
        from dgym_tui.tui.messages import FileRead
        self.post_message(FileRead(SourceText(path, session.read_file(path)), line))

    def on_file_read(self, message: FileRead) -> None:
        self.open_file(message.source.path, message.line, message.source)

    def _refresh_tree(self, result: StepResult | None) -> None:
        self.query_one(FileTree).set_files(self._workspace.files, set(self._workspace.readonly),
                                           set(result.changed_files) if result else set())

    def _update_status(self, result: StepResult | None) -> None:
        changes: dict[str, Any] = {}
        if result is not None and result.eval is not None:
            changes.update(evaluated=True, passed=result.eval.passed, total=result.eval.total)
        session = self.session
        usage = session.usage
        if session.pending is not None:  # spent on the undecided proposal
            usage = usage + session.pending.usage
        changes.update(step=len(session.turns), mode=session.mode,
                       tokens=usage.prompt_tokens + usage.completion_tokens, cost=usage.cost)
        self.status.update_status(**changes)

    # -- keys: when each works -----------------------------------------------------------------
    def key_state(self) -> dict[str, bool]:
        session = self.session
        agent = session.policy is not None
        return {"running": not session.done, "started": self.started,
                "pending": session.pending is not None and session.mode == "approve",
                "agent": agent, "no_agent": not agent, "not_human": session.mode != "human",
                "not_auto": session.mode != "auto", "auto": session.mode == "auto",
                "can_apply": self.can_apply}

    @property
    def keys_quiet(self) -> bool:
        """True while an agent drives (approve / auto) or the episode is over: the footer
        shows the keys that matter then (the others still work and say why)."""
        return self.session.mode != "human" or self.session.done

    def check_key(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Session keys are off while a dialog is open or a text field has the focus."""
        if not self.action_available(action):
            return False
        spec = self.SPEC_OF.get(action)
        session_key = spec is not None and spec.where == "live"
        return not (session_key and (self.app.screen is not self or isinstance(self.focused, Input)))

    def has_agent(self) -> bool:
        return self.session.policy is not None

    def help_sections(self) -> list[tuple[str, list[tuple[str, str]]]]:
        sections = super().help_sections()
        if self.session.policy is not None:
            sections.append(("Agent proposal (approve mode)", [
                ("a / e / R", "approve / edit the arguments / reject with a note"),
                ("t / g / space", "take over / go (auto) / pause an auto run after this step"),
                ("m", "ask the agent (again, after an error)")]))
        return [*sections, ("Console (: or i)", self._console_help())]

    def _console_help(self) -> list[tuple[str, str]]:
        """Rows describing what the console accepts, one per tool of the environment."""
        rows = [("p x / n / b f.py:12", "any other line is one pdb command"),
                ("up / down / tab", "history / accept the grey completion")]
        summaries = self.session.tool_summaries()
        for name, parameters in self.session.tool_specs().items():
            if name != "pdb":
                line = summaries.get(name, "")
                rows.append((tool_syntax(name, parameters),
                             line if len(line) <= 70 else line[:67] + "..."))
        rows.append(("", "values with spaces go in quotes: grep pattern=\"def main\""))
        rows.append(("", 'several lines: rewrite {"path": "f.py", "start": 3, "end": 3, '
                         '"new_code": "a = 1\\nb = 2"}  (JSON: \\n is a newline), or E'))
        return rows

    def key_commands(self) -> Any:
        from textual.app import SystemCommand

        yield from super().key_commands()
        yield SystemCommand("Edit code [E]", "edit the selected source lines (the cursor line) "
                            "and rewrite them", self.action_edit_code)

    # -- the agent's turns -------------------------------------------------------------------
    def _ask_agent(self) -> bool:
        """Ask the agent for a proposal in a worker (errors back off, see AGENT_RETRY)."""
        self._cancel_retry()
        return self.session_call("asking the agent", self.session.propose,
                                 failed=self._agent_failed)

    def _agent_failed(self, text: str) -> None:
        """A proposal failed: say so once, keep every key live, ask again later. Not when
        the person took over while the agent was asked: its failure no longer matters."""
        if self.session.mode == "human":
            return
        first = self._agent_error is None
        self._agent_error = text
        self._agent_failures += 1
        delay = self.AGENT_RETRY[min(self._agent_failures, len(self.AGENT_RETRY)) - 1]
        self.pane(ApprovePanel).show_error(text, self._agent_failures, delay)
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
        if (self.worker.closed or session.done or self._agent_error is None
                or session.mode != "approve" or session.pending is not None):
            return
        if self.busy:  # a person's step runs: try once it is done
            self._retry_timer = self.set_timer(2.0, self._retry_agent)
            return
        self._ask_agent()

    def _show_proposal(self, proposal: Proposal) -> None:
        self.pane(ApprovePanel).show(proposal, len(self.session.turns) + 1)
        self.refresh_bindings()
        from dgym_tui.tui.proposal_preview import preview_of

        frame = self._last_result.frame if self._last_result is not None else None
        preview = preview_of(proposal.action, frame[0] if frame else None)
        self.source_view.set_preview(preview)
        if preview is not None and preview.path != self._current_path:
            self.open_file(preview.path, preview.line)

    def action_approve(self) -> None:
        proposal = self.session.pending
        if proposal is not None:
            self.session_call("approved step", lambda: self.session.approve(proposal))

    def action_edit(self) -> None:
        proposal = self.session.pending
        if proposal is None or self.busy:
            return
        action = proposal.action or ToolCall(name="pdb", arguments={"command": ""})

        def done(edited: ToolCall | None) -> None:
            if edited is not None:
                self.session_call("edited step", lambda: self.session.edit(proposal, edited))

        from dgym_tui.tui.screens.modals import EditActionScreen  # dialogs: after the first frame

        self.app.push_screen(EditActionScreen(action), done)

    def action_reject(self) -> None:
        proposal = self.session.pending
        if proposal is None or self.busy:
            return

        def done(note: str | None) -> None:
            if note is not None:
                self.session_call("rejecting", lambda: self.session.reject(proposal, note))

        from dgym_tui.tui.screens.modals import RejectScreen

        self.app.push_screen(RejectScreen(), done)

    def action_take_over(self) -> None:
        if self.session.policy is None:
            return
        self._clear_agent_error()
        dropped = self.session.take_over()  # the proposal is recorded as taken over
        self.pane(ApprovePanel).hide()
        self.source_view.set_preview(None)
        what = f" (the proposal {format_action(dropped.proposed)} was not run)" \
            if dropped is not None and dropped.proposed is not None else ""
        self.pdb_console.write(f"taken over: human mode{what}; the source keys and : act now",
                               style="italic")
        # the source view, not the console: the next key (i, n, ...) is a key, not text
        self.source_view.focus()

    def action_go(self) -> None:
        session = self.session
        if session.policy is None or self.busy or session.done:
            return
        self._clear_agent_error()
        session.mode = "auto"
        self._pause_requested = False
        self.session_call("agent running", lambda: session.run(
            should_pause=lambda: self._pause_requested))

    def action_pause(self) -> None:
        if self.session.mode == "auto":
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

    def action_run_eval(self) -> None:
        """``x``: an eval step; typed while a step runs, it waits for it, as pdb keys do."""
        if not self._wait_for_the_step("eval"):
            self.act(ToolCall(name="eval", arguments={}))

    # -- what the widgets ask for ------------------------------------------------------------
    @on(SourceView.PdbCommand)
    @on(BreakpointsPane.Command)
    def _pdb_command(self, message: SourceView.PdbCommand | BreakpointsPane.Command) -> None:
        message.stop()
        if not self._wait_for_the_step(message.command):
            self.act(pdb_call(message.command))

    @on(SourceView.BreakpointToggle)
    def _toggle_breakpoint(self, message: SourceView.BreakpointToggle) -> None:
        verb = "cl" if message.present else "b"
        command = f"{verb} {message.path}:{message.line}"
        if not self._wait_for_the_step(command):
            self.act(pdb_call(command))

    @on(SourceView.GotoFrame)
    def _goto_frame(self) -> None:
        result = self._last_result
        frame = self._inspection.frame if self._inspection is not None else None
        if result is not None and result.frame is not None and not self._frame_stale:
            self.open_file(result.frame[0], result.frame[1])
        elif frame is not None and frame.relative is None:
            self.notify(f"frame outside the repository: {frame.path}:{frame.line}")
        else:
            self.notify("pdb is not stopped in a frame", severity="warning")

    @on(PdbConsole.Submitted)
    def _console_line(self, message: PdbConsole.Submitted) -> None:
        if self.navigate(message.text):
            return
        text = message.text[1:].strip() if message.text.startswith(":") else message.text
        if not text:
            return
        if not self._wait_for_the_step(message.text):
            self._run_console_line(text)

    def _wait_for_the_step(self, line: str) -> bool:
        """Keep a console line or a key's pdb command typed while a step runs, to run
        after it in the order typed (True: kept, or dropped past :data:`TYPED_AHEAD_MAX`)."""
        if not self.busy or self.worker.closed:
            return False
        text = line[1:].strip() if line.startswith(":") else line
        if len(self._typed_ahead) >= TYPED_AHEAD_MAX:
            self.notify(f"{TYPED_AHEAD_MAX} commands already wait; `{text}` was dropped",
                        severity="warning")
            return True
        self._typed_ahead.append(line)
        self.pdb_console.write(f"  {text}  (waits for the step that runs)", style="dim")
        return True

    def _run_typed_ahead(self) -> bool:
        """Run the first console line typed while a step ran, if any (True: one started)."""
        while self._typed_ahead:
            line = self._typed_ahead.popleft()
            text = line[1:].strip() if line.startswith(":") else line
            if self._run_console_line(text):
                return True
        return False

    def _run_console_line(self, text: str) -> bool:
        """Parse a console line into an action and run it (False: not run)."""
        specs = self.session.tool_specs()
        try:
            action = console_action(text, list(specs), specs)
        except ValueError as exc:
            self.pdb_console.write(f"error: {exc}", style="bold red")
            return False
        return self.act(action)

    @on(SourceView.EditCode)
    def _edit_code_key(self, message: SourceView.EditCode) -> None:
        self.edit_code(message.path, message.start, message.end)

    @on(StackPane.FrameChosen)
    def _frame_chosen(self, message: StackPane.FrameChosen) -> None:
        """Move pdb to the chosen frame (``u N`` / ``d N``, recorded like any command)."""
        if message.index == message.current:
            return
        delta = message.current - message.index
        self.act(pdb_call(f"u {delta}" if delta > 0 else f"d {-delta}"))

    @on(VariablesPane.ScopeChanged)
    def _scope_changed(self, message: VariablesPane.ScopeChanged) -> None:
        if self.started and not self.busy:
            self._inspect(message.scope)

    @work(thread=True, group="inspect", exclusive=True, exit_on_error=False)
    def _inspect(self, scope: str) -> None:
        if not self.worker.closed:
            from dgym_tui.tui.messages import Inspected
            self.post_message(Inspected(self.session.inspect(scope=scope)))

    def on_inspected(self, message: Inspected) -> None:
        if message.inspection is not None:
            self._inspection = message.inspection
            self.show_debug(message.inspection, self._last_result)

    @on(BreakpointsPane.EditCondition)
    def _edit_condition(self, message: BreakpointsPane.EditCondition) -> None:
        row = message.row

        def done(condition: str | None) -> None:
            if condition is not None:
                self.act(pdb_call(f"condition {row.number} {condition}".rstrip()))

        from dgym_tui.tui.screens.modals import PromptScreen

        self.app.push_screen(PromptScreen(f"Condition of the breakpoint at {row.path}:{row.line} "
                                          "(empty: none)", "e.g. x > 3", row.condition or ""), done)

    # -- editing code ------------------------------------------------------------------------
    def action_edit_code(self) -> None:
        """Edit the source view's selected lines (the cursor line without a selection)."""
        view = self.source_view
        if view.path is None:  # nothing shown, or a file that cannot be (binary)
            why = view.placeholder if view.placeholder.startswith("(") else ""
            self.notify(f"nothing to edit: {why}" if why else "open a file first (file tree)",
                        severity="warning")
            return
        first, last = view.selection
        self.edit_code(view.path, first, last)

    def _edit_refusal(self, path: str) -> str | None:
        """Why lines of ``path`` cannot be edited now (one line), or None."""
        if not self.started:
            return "the episode has not started yet"
        if self.session.done:
            return "the episode is over"
        if self.busy:
            return "busy: wait for the current step to finish"
        if "rewrite" not in self.session.tool_specs():
            return "the rewrite tool is not enabled in this episode"
        if path not in self._workspace.files:
            return f"{path} is hidden by .debugignore: it cannot be edited"
        if path in self._workspace.readonly:
            return f"{path} is read-only (.debugreadonly): it cannot be edited"
        return None

    def edit_code(self, path: str, start: int, end: int) -> None:
        """Open the code editor on lines ``start``..``end`` (1-based, inclusive) of ``path``.

        Ctrl+S in the editor runs ONE ``rewrite`` tool call through the session,
        recorded as a manual action; a read-only / ignored file or a busy / finished
        episode is refused with a notification saying why.
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
            self.source_view.action_clear_selection()
            if new_code is None:
                return
            if new_code == old or new_code == old.rstrip("\n"):
                self.notify("unchanged: nothing rewritten")
                return
            self.act(ToolCall(name="rewrite", arguments={
                "path": path, "start": start, "end": end, "new_code": new_code}))

        from dgym_tui.tui.screens.modals import CodeEditScreen

        self.app.push_screen(CodeEditScreen(path, start, end, old), done)

    # -- applying the patch, quitting --------------------------------------------------------
    def action_apply_patch(self, ended: str = "") -> None:
        if not self.can_apply or not self.started:
            return
        patch = self._workspace.patch or ""
        if not patch.strip():
            self.notify("no changes to apply")
            return

        def done(yes: bool | None) -> None:
            if yes:
                self._apply_patch()

        self.query_one(DiffView).set_patch(patch)
        over = f"The episode is over ({ended}). " if ended else ""
        from dgym_tui.tui.screens.modals import ConfirmScreen

        self.app.push_screen(ConfirmScreen(f"{over}Apply the patch to the original repository "
                                           f"{self.session.source_path}?", patch), done)

    def _apply_patch(self) -> None:
        """Write the working copy's changes into the original (a three-way merge with edits
        made there meanwhile, or a refusal that names the files), under the session's lock."""
        self._call(self.session.apply_to_source, "apply", self._patch_applied,
                   self._patch_refused)

    def _patch_refused(self, error: BaseException) -> None:
        from dgym_tui.episode.session import SessionError  # loaded with the session

        if isinstance(error, SessionError):  # closed meanwhile (quit)
            return
        self._quit_after_apply = False  # refused: stay, so the fix is not lost (conflicts, I/O)
        text, source = str(error) or type(error).__name__, self.session.source_path
        self.notify(f"patch NOT applied: {text.splitlines()[0]}", severity="error",
                    title="apply", timeout=15)
        self.pdb_console.write(f"patch not applied to {source}: {text}", style="bold red")

    def _patch_applied(self, changed: list[str]) -> None:
        self._applied_patch = self._workspace.patch
        if self._quit_after_apply:
            self.call_later(self.app.action_quit_app)
        source = self.session.source_path
        self.notify(f"applied {len(changed)} file(s) to {source}")
        self.pdb_console.write(f"patch applied to {source}: {', '.join(changed)}")

    def unapplied_fix(self) -> bool:
        """True when the last eval passed and its patch was not written to the original
        with ``w`` (only where ``w`` applies and the apply prompt is on)."""
        result = self._last_result
        patch = self._workspace.patch or ""
        return bool(self.started and self.can_apply and self.ask_apply and result is not None
                    and result.resolved and patch.strip() and patch != self._applied_patch)

    def ask_quit(self) -> bool:
        """Ask before quitting with a fix not applied, or refuse while an edit is open.
        Returns True when the app may quit now."""
        from dgym_tui.tui.screens.modals import CodeEditScreen, QuitScreen

        if isinstance(self.app.screen, CodeEditScreen):  # ctrl+c in the editor: keep the edit
            self.notify("an edit is open: ctrl+s rewrites it, escape cancels it; then q quits",
                        severity="warning", title="not quitting")
            return False
        if (self.unapplied_fix() and not self._quit_confirmed
                and not isinstance(self.app.screen, QuitScreen)):  # ctrl+c there: quit anyway
            assert self._last_result is not None
            self.app.push_screen(QuitScreen(self.session.source_path,
                                            self._last_result.changed_files), self._quit_answer)
            return False
        return True

    def _quit_answer(self, answer: str | None) -> None:
        """The quit question's answer: apply then quit, quit anyway, or stay (None)."""
        if answer == "quit":
            self._quit_confirmed = True
            self.call_later(self.app.action_quit_app)
        elif answer == "apply":
            self._quit_after_apply = True
            self._apply_patch()

    # -- branching -----------------------------------------------------------------------------
    def action_branch(self) -> None:
        session = self.session
        if self.started and not session.done and not self.busy:
            self.busy = f"branching at step {len(session.turns)}"
            self._call(self._branch, "branch", self._branched, self._branch_failed)

    def _branch(self) -> tuple[SessionWorker, Live] | None:
        """The live episode's branch (``Session.fork``: nothing re-executed), recording to
        ``<trajectory>.fork<N>.jsonl`` next to the parent's; the parent then ends as
        ``forked`` and its environment closes (the app goes on in the branch)."""
        from dgym_tui.tui.live.running import live_state

        parent = self.session
        path = parent.trajectory_path
        out = None if path is None else Path(path).with_name(
            f"{Path(path).stem}.fork{len(parent.turns)}.jsonl")
        mode = "approve" if parent.mode == "auto" else parent.mode
        branch = parent.fork(out, policy=parent.policy, mode=mode)
        if self.worker.closed:  # quit while branching: nobody will show it
            branch.finish("quit")
            branch.close()
            return None
        parent.unsubscribe(self._bridge)  # its end is not the app's
        parent.finish("forked")
        parent.close()
        steps = len(branch.turns)
        return live_state(branch, f"branched at step {steps}: the episode forked as it stood "
                       "(pdb at the same frame); the parent's trajectory ended as 'forked'; "
                       "live now", f"forked at step {steps}")

    def _branched(self, made: tuple[SessionWorker, Live] | None) -> None:
        if made is not None:
            self.app.go_live(*made, can_apply=self.can_apply)

    def _branch_failed(self, error: BaseException) -> None:
        self.notify(f"fork failed: {first_line(error)}", severity="error")


def fork_source_notice(config: dict[str, Any]) -> str | None:
    """What a fork must say about its source (``config["forked_source"]``, set by
    :func:`dgym_tui.launch.replay.fork` when the original changed since the recording),
    or None when it started from the original as recorded."""
    forked = config.get("forked_source")
    if not isinstance(forked, dict):
        return None
    restored = [str(name) for name in forked.get("restored") or ()]
    changed = [str(name) for name in forked.get("changed_since") or ()]
    parts = ["the original changed since this recording:"]
    if restored:
        parts.append(f"the fork starts from the recorded version of {', '.join(restored[:5])}"
                     + (f" and {len(restored) - 5} more" if len(restored) > 5 else ""))
    if changed:
        parts.append(("and " if restored else "") + "uses today's version of "
                     + ", ".join(changed[:5]) + (f" and {len(changed) - 5} more"
                                                 if len(changed) > 5 else "")
                     + " (its recorded start is unknown)")
    parts.append("· w is off (the fork works on a rebuilt copy)")
    return " ".join(parts)
