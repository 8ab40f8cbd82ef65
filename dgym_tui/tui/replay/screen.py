"""The replay screen: a recorded trajectory step by step, and forking it into a live session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on
from textual.binding import BindingType
from textual.reactive import reactive
from textual.worker import Worker, WorkerState

from dgym_tui.core.errors import first_line
from dgym_tui.episode.records import Turn
from dgym_tui.tui.bridge import start_location
from dgym_tui.tui.episode_screen import EpisodeScreen
from dgym_tui.tui.keys import bindings_of, keys_of
from dgym_tui.tui.live.running import Live, live_state
from dgym_tui.tui.live.session_worker import SessionWorker, outcome
from dgym_tui.tui.replay_model import applied_notes
from dgym_tui.tui.widgets.breakpoints import BreakpointsPane
from dgym_tui.tui.widgets.console import PdbConsole
from dgym_tui.tui.widgets.file_tree import FileTree
from dgym_tui.tui.widgets.source_view import SourceView

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session
    from dgym_tui.tui.replay_model import ReplayModel

_SPECS = keys_of("replay")
_ACT = "replay: fork (f) to act"


class ReplayScreen(EpisodeScreen):
    """The state after each recorded step (``h`` / ``l`` / ``0`` / ``$``); ``f`` forks a
    live session at the shown step, and the app goes on in a live screen.

    Args:
        model: the trajectory's :class:`~dgym_tui.tui.replay_model.ReplayModel`.
        fork: ``fork(step) -> Session``: a live session (not started) whose first
            ``step`` actions were re-executed; None disables forking.
    """

    SPECS = _SPECS
    BINDINGS: ClassVar[list[BindingType]] = bindings_of(_SPECS)

    #: The step shown (0: the reset).
    step_index: reactive[int] = reactive(0, init=False, always_update=True)
    def __init__(self, model: ReplayModel, fork: Callable[[int], Session] | None = None) -> None:
        super().__init__()
        self.model = model
        self.fork_factory = fork
        self.closed = False

    def show_episode(self) -> None:
        model = self.model
        self.source_view.interactive = False
        self.app.sub_title = f"replay · {model.task_name}"
        self.status.update_status(task=model.task_name, budget=len(model), mode="replay")
        self._refresh_tree(model.initial)
        self.step_index = 0

    def validate_step_index(self, step: int) -> int:
        return max(0, min(step, len(self.model)))

    def watch_step_index(self, step: int) -> None:
        """Show the state after ``step``."""
        model = self.model
        result = model.result_at(step)
        if result.frame is not None and _rewritten_since_pdb(model.turns[:step]):
            result = replace(result, frame=None)  # as live: pdb is on old code
        self._last_result = result
        self.transcript.set_turns(model.turns[:step])
        turn = model.turns[step - 1] if step else None
        action = turn.action if turn is not None else None
        rewrite = action.arguments if action is not None and action.name == "rewrite" else {}
        start = rewrite.get("start")
        if result.frame is not None:
            where: tuple[str, int] | None = result.frame
        elif isinstance(rewrite.get("path"), str):  # the file the step changed
            where = (rewrite["path"], start if isinstance(start, int) else 1)
        elif self._current_path is not None:  # no frame: keep the file in view
            where = (self._current_path, self.source_view.cursor_line)
        else:
            where = start_location(model.initial, model.files())
        if where is None:
            self.source_view.load(None, "")
        else:
            self.open_file(*where)
        self.refresh_marks(result)
        self._refresh_tree(result)
        self.debug_panel.show(None, result, replay=True)
        extra = f"replay step {step}/{len(model)}"
        if step == len(model) and model.trajectory.footer:
            extra += f" · {model.trajectory.footer.get('reason') or 'finished'}"
            if applied_notes(model.trajectory.footer):
                extra += " · applied (w)"
        changes: dict[str, Any] = {"step": step, "extra": extra}
        if result.eval is not None:
            changes.update(evaluated=True, passed=result.eval.passed, total=result.eval.total)
        self.status.update_status(**changes)
        self.pdb_console.log_widget.clear()
        if turn is None:
            self.pdb_console.write(model.initial.observation)
        else:
            self.write_turn(turn)
            self.pdb_console.write(turn.observation)
        for note in applied_notes(model.trajectory.footer, step):
            self.pdb_console.write(note, style="bold green")

    def open_file(self, path: str, line: int | None) -> None:
        text = self.model.source_at(path, self.step_index)
        self.show_text(path, line, text,
                       self.model.unavailable or "source not available at this step")

    def _refresh_tree(self, result: Any) -> None:
        files = self.model.files()
        self.query_one(FileTree).set_files(files, {f for f in files if self.model.is_readonly(f)},
                                           set(result.changed_files))

    def action_replay_step(self, delta: int) -> None:
        self.step_index += delta

    def action_replay_goto(self, step: int) -> None:
        self.step_index = len(self.model) if step < 0 else step

    # -- what the widgets ask for: nothing acts in a replay --------------------------------
    @on(SourceView.PdbCommand)
    @on(BreakpointsPane.Command)
    def _pane_command(self) -> None:
        self.notify(_ACT, severity="warning")

    @on(SourceView.EditCode)
    def _edit_code(self) -> None:
        self.notify("replay: fork (f) to edit code", severity="warning")

    @on(SourceView.GotoFrame)
    def _goto_frame(self) -> None:
        frame = self._last_result.frame if self._last_result is not None else None
        if frame is not None:
            self.open_file(*frame)
        else:
            self.notify("pdb is not stopped in a frame", severity="warning")

    @on(PdbConsole.Submitted)
    def _console_line(self, message: PdbConsole.Submitted) -> None:
        text = message.text[1:].strip() if message.text.startswith(":") else message.text
        if not self.navigate(message.text) and text:
            self.notify(_ACT, severity="warning")

    def help_sections(self) -> list[tuple[str, list[tuple[str, str]]]]:
        return [*super().help_sections(), ("Replay", [
            ("h / l", "step back / forward"), ("0 / $", "first / last step"),
            ("f", "fork here: re-execute the steps so far, then go on live"),
            ("Debug tab (click it)", "breakpoints only: variables and stack are not recorded "
                                     "(f forks here to see them live)")])]

    # -- fork ---------------------------------------------------------------------------------
    def action_fork(self) -> None:
        fork = self.fork_factory
        if fork is None:
            self.notify("fork is not available for this trajectory", severity="warning")
            return
        if self.busy:
            return
        step = self.step_index
        self.busy = f"forking at step {step}"
        self.run_worker(lambda: outcome(lambda: self._fork(fork, step)), name="fork",
                        thread=True, exit_on_error=False)

    def _fork(self, fork: Callable[[int], Session], step: int) -> tuple[SessionWorker, Live] | None:
        """Build the fork (re-executing the recorded actions) and read its state; quitting
        meanwhile closes what it built."""
        session = fork(step)
        if self.closed:  # quit while forking: nobody will show it
            session.finish("quit")
            session.close()
            return None
        return live_state(session, f"forked: {len(session.turns)} recorded steps "
                          "re-executed; live now", f"forked at step {len(session.turns)}")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.name != "fork" or event.state != WorkerState.SUCCESS:
            return
        self.busy = ""
        made = worker.result
        if made.error is not None:
            self.notify(f"fork failed: {first_line(made.error)}", severity="error")
        elif made.value is not None and not self.closed:
            self.app.go_live(*made.value)

    def close(self) -> None:
        """Close the trajectory (a fork being built is closed when it is done)."""
        self.closed = True
        self.model.close()


def _rewritten_since_pdb(turns: list[Turn]) -> bool:
    """True when a rewrite ran after the last pdb step of ``turns`` (the recorded frame is
    then pdb's place in the old code, which the live app no longer marks)."""
    for turn in reversed(turns):
        name = turn.action.name if turn.action is not None else None
        if name == "pdb":
            return False
        if name == "rewrite" and turn.result is not None and not turn.result.error:
            return True
    return False
