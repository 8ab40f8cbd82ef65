"""The session subscriber of the app: session events in, typed Textual messages out.

:class:`SessionBridge` is called by the session from the thread that drives it
(the app's session thread). It reads what the UI will need — file list, read-only
set, patch, the text of the file to show, pdb's stack and variables — right
there, holding the session's lock, and posts one message of
:mod:`dgym_tui.tui.messages` per event (``post_message`` is thread-safe).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.message import Message

from dgym_tui.core.types import StepResult
from dgym_tui.tui.locate import first_source_file, locate_failure
from dgym_tui.tui.workspace_state import SourceText, WorkspaceState

if TYPE_CHECKING:
    from dgym_tui.episode.events import SessionEvent
    from dgym_tui.episode.records import Turn, WorkingCopy
    from dgym_tui.episode.session import Session

log = logging.getLogger(__name__)


def workspace_state(copy: WorkingCopy | None, patch: str | None = None) -> WorkspaceState:
    """The file tree's and diff tab's view of a working copy, with ``patch`` (no files
    once the environment is closed)."""
    if copy is None:
        return WorkspaceState([], frozenset(), patch)
    return WorkspaceState(copy.files, copy.readonly, patch)


def read_source(session: Session, path: str | None) -> SourceText | None:
    """The text of working-copy file ``path`` (None for no path; text None if unreadable)."""
    return None if path is None else SourceText(path, session.read_file(path))


def start_location(result: Any, files: list[str]) -> tuple[str, int] | None:
    """Where the source view opens: the failing test's entry into the repository's
    code, else the first source file at line 1, else None."""
    where = locate_failure(result.eval_output, files, result.eval)
    if where is not None:
        return where
    first = first_source_file(files)
    return (first, 1) if first is not None else None


class SessionBridge:
    """Subscribe an instance to a session: ``session.subscribe(bridge)``.

    Args:
        session: the live session.
        post: thread-safe ``post(message)`` (the app's ``post_message``).
        shown_path: returns the file the source view shows now (read from the
            worker thread: a plain attribute read).
        step_shown: ``step_shown(action)`` True when the app already shows that step
            running, so :class:`StepStarted` would change nothing and is not posted
            (called on the session's thread). Each message posted mid-step wakes the
            app's thread, which then takes the GIL from the step on its way to pdb.
    """

    def __init__(self, session: Session, post: Callable[[Message], Any],
                 shown_path: Callable[[], str | None],
                 step_shown: Callable[[Any], bool] | None = None) -> None:
        self.session = session
        self.post = post
        self.shown_path = shown_path
        self.step_shown = step_shown
        self.generation: int | None = None

    def __call__(self, event: SessionEvent) -> None:
        # the events and messages: imported on the session's thread, after the first frame
        from dgym_tui.episode import events
        from dgym_tui.tui.messages import (
            AgentThinking,
            EpisodeEnded,
            ModeChanged,
            ProposalReady,
            SessionFailed,
            StepStarted,
        )

        match event:
            case events.EpisodeStarting(eval_timeout=timeout):
                self.post(self._starting(timeout))
            case events.EpisodeStarted(result=result):
                self.post(self._started(result))
            case events.Proposing():
                self.post(AgentThinking())
            case events.Proposed(proposal=proposal):
                self.post(ProposalReady(proposal))
            case events.Stepping(action=action):
                if self.step_shown is None or not self.step_shown(action):
                    self.post(StepStarted(action))
            case events.TurnRecorded(turn=turn):
                self.post(self._turn(turn))
            case events.ModeChanged(mode=mode):
                self.post(ModeChanged(mode))
            case events.EpisodeEnded(footer=footer):
                self.post(EpisodeEnded(footer))
            case events.LoopFailed(message=message):
                self.post(SessionFailed(message))

    # -- events that read the working copy -------------------------------------------
    def _starting(self, eval_timeout: float | None) -> Message:
        from dgym_tui.tui.messages import CopyReady

        session = self.session
        with session.lock:
            state = workspace_state(session.snapshot(with_patch=False), "")
            first = first_source_file(state.files)
            source = read_source(session, first)
        return CopyReady(state, (first, 1) if first else None, source, eval_timeout)

    def _started(self, result: StepResult) -> Message:
        from dgym_tui.tui.messages import SessionStarted

        session = self.session
        with session.lock:
            copy = session.snapshot(with_patch=False)
            self.generation = copy.generation if copy is not None else None
            state = workspace_state(copy, "")
            location = start_location(result, state.files)
            source = read_source(session, location[0] if location else None)
        return SessionStarted(result, state, location, source)

    def _turn(self, turn: Turn) -> Message:
        from dgym_tui.tui.messages import TurnRecorded

        session = self.session
        state = source = inspection = None
        changed = False
        try:
            with session.lock:
                generation = session.generation
                if generation is None:  # closed under the step (quit)
                    return TurnRecorded(turn, None, None, None, False)
                changed = generation != self.generation
                self.generation = generation
                if changed:
                    copy = session.snapshot(with_patch=turn.patch is None)
                    patch = copy.patch if copy is not None else None
                    state = workspace_state(copy, patch if turn.patch is None else turn.patch)
                result = turn.result
                shown = self.shown_path()
                path = result.frame[0] if result is not None and result.frame else None
                if path is not None and (path != shown or changed):
                    source = read_source(session, path)
                elif changed and shown is not None:
                    source = read_source(session, shown)
            if turn.action is not None and turn.action.name == "pdb":
                inspection = self.session.inspect()
        except Exception:  # noqa: BLE001  the turn is shown anyway; the panes wait
            log.exception("reading the state after step %s failed", turn.index)
        return TurnRecorded(turn, state, source, inspection, changed)

    # -- for the app's own workers -------------------------------------------------
    def snapshot(self) -> tuple[WorkspaceState, SourceText | None, Any]:
        """State of a session that is already running (a fork): workspace with patch, the
        text of the frame's (else the first) file, pdb's inspection. Call in a worker."""
        session = self.session
        with session.lock:
            copy = session.snapshot()
            self.generation = copy.generation if copy is not None else None
            state = workspace_state(copy, copy.patch if copy is not None else "")
            last = session.last or session.initial
            where = last and (last.frame or start_location(last, state.files))
            source = read_source(session, where[0] if where else None)
        return state, source, self.session.inspect()
