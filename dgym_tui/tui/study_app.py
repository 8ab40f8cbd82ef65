"""``dgym-tui --study``: a participant works through a study's task queue in the app.

Per task: a dialog shows the task's description and the tools offered (the
clock starts when it closes), then the usual app with the participant, the
task's position and the time left (or spent without a limit; nothing when
``show_time`` is false) in the status bar. F6 gives up (asks first), F7
pauses / resumes the clock, a submit ends the task; the time limit ends it as
``timed out``. Quitting (q) leaves the task unfinished: running the study
again with the same id restarts it. After the last task,
:class:`~dgym_tui.tui.study_end.StudyEndApp` shows the participant's summary
(:class:`StudyRun` strings the apps together).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from dgym_tui.study.plan import GAVE_UP, TIMED_OUT, StudyTask
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.screens.modals import ConfirmScreen
from dgym_tui.tui.study_end import StudyEndApp, minutes


class StudyApp(DgymApp):
    """The app on one study task.

    Args:
        task: the :class:`~dgym_tui.study.plan.StudyTask` (its session not started).
        theme_name: the start theme.
    """

    #: Textual adds the app's own keys (bindings merge along the classes).
    BINDINGS: ClassVar[list[BindingType]] = [Binding("f6", "give_up", "Give up"),
                                             Binding("f7", "pause_clock", "Pause clock")]

    def __init__(self, task: StudyTask, theme_name: str = "dgym-dark") -> None:
        super().__init__(session=task.session, ask_apply=False, theme_name=theme_name,
                         can_apply=False)
        self.study_task = task
        self.study_task.clock.pause()  # runs once the instructions are read
        self._leaving = False

    def on_mount(self) -> None:
        # Textual runs DgymApp.on_mount after this one (handlers along the classes): calling
        # it here too reset the episode twice.
        task = self.study_task
        item = task.item
        tools = task.session.instructions()
        self.push_screen(ConfirmScreen(
            f"Task {item.index + 1} of {item.total}{' (restarted)' if item.restarted else ''}: "
            "press y to start the clock (n starts it too)",
            f"{task.description or task.item.task}\n\nThe tools you have:\n\n{tools}"),
            self._instructions_read)
        self.set_interval(0.5, self._tick)

    def _instructions_read(self, _answer: bool | None) -> None:
        self.study_task.clock.resume()
        self._tick()

    def _tick(self) -> None:
        if self._leaving:
            return
        session = self.study_task.session
        if session.done:
            self._leave(None)
        elif self.study_task.clock.expired:
            self.notify("time is up", title="study")
            self._leave(TIMED_OUT)
        else:
            self.status.update_status(extra=self.clock_text())

    def clock_text(self) -> str:
        """The study part of the status bar: participant, position, time left, paused."""
        item, clock = self.study_task.item, self.study_task.clock
        text = f"{self.study_task.participant} · task {item.index + 1}/{item.total}"
        if self.study_task.study.show_time:
            shown = clock.left if clock.left is not None else clock.elapsed
            text += f" · {minutes(shown)}{' left' if clock.left is not None else ''}"
        return text + (" · paused (F7)" if clock.paused else "")

    def action_pause_clock(self) -> None:
        """Stop or restart the task's clock."""
        clock = self.study_task.clock
        clock.resume() if clock.paused else clock.pause()
        self.status.update_status(extra=self.clock_text())

    def action_give_up(self) -> None:
        """Ask, then end the task as given up."""
        if self._leaving:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._leave(GAVE_UP)

        self.push_screen(ConfirmScreen("Give up this task?", "It counts as not solved; the "
                                       "study moves on to the next task."), answered)

    def _leave(self, reason: str | None) -> None:
        """End the task (``reason`` None: it ended itself) and exit the app."""
        self._leaving = True
        self.study_task.clock.pause()

        async def go() -> None:
            await asyncio.to_thread(self.close_session, reason or "quit")
            self.exit(0)

        self.run_worker(go(), exclusive=True, group="study-leave")


class StudyRun:
    """A participant's pass through a study: the app of each unfinished task, then
    the final screen (:class:`~dgym_tui.tui.study_end.StudyEndApp`).

    Iterate it and run each app (``app.run()``; ``app.run_test()`` in tests)
    before asking for the next one: asking closes the task (``status.json``,
    the run's ``summary.json``) and decides what comes next. One line per task
    goes to ``out``.

    Args:
        study: the :class:`~dgym_tui.study.plan.Study` (checked).
        participant: the pseudonymous id (checked).
        theme_name: the apps' theme.
        out: where the progress lines go.

    Attributes:
        exit_code: None while running; then 0 when every task is finished, 1
            when the participant quit mid-task (running the study again
            resumes), 2 when a task could not start.
    """

    def __init__(self, study: Any, participant: str, theme_name: str = "dgym-dark",
                 out: Callable[[str], Any] = print) -> None:
        self.study = study
        self.participant = participant
        self.theme_name = theme_name
        self.out = out
        self.exit_code: int | None = None

    def __iter__(self) -> Iterator[App[Any]]:
        from dgym_tui.study.plan import open_results, open_task, outcome, remaining

        study, participant = self.study, self.participant
        open_results(study)
        for item in remaining(study, participant):
            task = open_task(study, participant, item)
            app = StudyApp(task, theme_name=self.theme_name)
            try:
                yield app
            finally:
                status = task.close()
            if app.start_error:
                self.out(app.start_error)
                self.exit_code = 2
                return
            if status.state != "done":
                self.out(f"stopped at task {item.index + 1} of {item.total}; run the study "
                         f"again with --participant {participant} to resume")
                self.exit_code = 1
                return
            self.out(f"task {item.index + 1}/{item.total}: {outcome(status)}")
        self.exit_code = 0
        yield StudyEndApp(study, participant, theme_name=self.theme_name)
        self.out(f"study {study.id}: all tasks done for {participant}; thank you")


def run_study(study: Any, participant: str, theme_name: str = "dgym-dark",
              out: Callable[[str], Any] = print) -> int:
    """Run the participant's unfinished tasks one app after another, then the final screen.

    Returns:
        :attr:`StudyRun.exit_code`: 0 all tasks finished, 1 the participant
        quit mid-study (running it again resumes), 2 a task could not start.
    """
    run = StudyRun(study, participant, theme_name, out)
    for app in run:
        app.run()
    return run.exit_code if run.exit_code is not None else 1
