"""Typed messages from the session's worker thread to the app.

Each message carries what the UI needs already computed in the worker, under
the session's lock (file list, read-only set, patch, the text of the file to
show, pdb's stack / variables / breakpoints), so the UI thread never touches
the environment. :class:`~dgym_tui.tui.bridge.SessionBridge` builds them. Their
:class:`WorkspaceState` and :class:`SourceText` live in :mod:`dgym_tui.tui.workspace_state`
(the live screen holds one before its first frame; these messages come after it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message

from dgym_tui.core.types import StepResult, ToolCall
from dgym_tui.tui.workspace_state import SourceText, WorkspaceState

if TYPE_CHECKING:
    from dgym_tui.tui.live.session_worker import SessionCall


@dataclass
class CopyReady(Message):
    """The working copy exists; the sandbox starts and the first eval runs now.

    Attributes:
        workspace: files and read-only set.
        location: the first source file at line 1, or None.
        source: the text of ``location``'s file.
        eval_timeout: seconds the first eval may take (None: no limit).
    """

    workspace: WorkspaceState
    location: tuple[str, int] | None
    source: SourceText | None
    eval_timeout: float | None


@dataclass
class SessionStarted(Message):
    """The episode started (reset done).

    Attributes:
        result: the reset StepResult.
        workspace: files and read-only set.
        location: where to open the source view first (failing line, else the
            first source file at line 1), or None.
        source: the text of ``location``'s file.
    """

    result: StepResult
    workspace: WorkspaceState
    location: tuple[str, int] | None
    source: SourceText | None


@dataclass
class AgentThinking(Message):
    """The agent is being asked for a proposal."""


@dataclass
class ProposalReady(Message):
    """The agent proposed an action (``proposal``: a ``Proposal``)."""

    proposal: Any


@dataclass
class StepStarted(Message):
    """A step runs ``action``."""

    action: ToolCall


@dataclass
class TurnRecorded(Message):
    """A turn was recorded.

    Attributes:
        turn: the session's ``Turn``.
        workspace: files / read-only / patch when the step changed a file, else None.
        source: the text of the file the source view should show after this
            step (the frame's file, or the open file when it changed), or None.
        inspection: pdb's stack / variables / breakpoints after a pdb step
            (``Inspection``), or None (not a pdb step, pdb not stopped).
        changed: the step changed a visible file (``RepoEnv.generation`` moved).
    """

    turn: Any
    workspace: WorkspaceState | None
    source: SourceText | None
    inspection: Any
    changed: bool


@dataclass
class ModeChanged(Message):
    """The session's mode is now ``mode``."""

    mode: str


@dataclass
class EpisodeEnded(Message):
    """The episode ended; ``footer`` is the trajectory footer."""

    footer: dict


@dataclass
class SessionFailed(Message):
    """The session reported an error (``text``: one line)."""

    text: str


@dataclass
class Inspected(Message):
    """A fresh inspection asked for by the UI (another frame, globals)."""

    inspection: Any


@dataclass
class FileRead(Message):
    """A file the person opened, read in a worker."""

    source: SourceText
    line: int | None


@dataclass
class FileLexedAhead(Message):
    """A breakpoint's file read and lexed in a worker before pdb stops there.

    Attributes:
        ahead: the :class:`~dgym_tui.tui.widgets.source_view.LexedAhead` file.
        stops: its breakpoints' lines (1-based) to lay out the stop's rows for.
    """

    ahead: Any
    stops: list[int]


@dataclass
class CallDone(Message):
    """A session call returned (or raised: ``call.outcome.error``), posted to the node
    that made it from the session's thread
    (:class:`~dgym_tui.tui.live.session_worker.SessionWorker`)."""

    call: SessionCall
