"""A session already running (a fork of a replay, a branch of a live episode), read in a
worker for the live screen that takes it over: made after an app's first frame, so not
imported before it."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from dgym_tui.tui.bridge import SessionBridge
from dgym_tui.tui.live.session_worker import SessionWorker

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session
    from dgym_tui.tui.workspace_state import SourceText, WorkspaceState


@dataclasses.dataclass
class Live:
    """A session already running (a fork, a branch) as read in a worker: its working copy,
    the file to show first, pdb's inspection; the console's first line, the status note."""

    state: WorkspaceState
    source: SourceText | None
    inspection: Any
    notice: str
    extra: str


def live_state(session: Session, notice: str, extra: str) -> tuple[SessionWorker, Live]:
    """A session already running (a fork or a branch) and its state, read in a worker."""
    bridge = SessionBridge(session, lambda message: None, lambda: None)
    state, source, inspection = bridge.snapshot()
    worker = SessionWorker(session)
    worker.started = True
    return worker, Live(state, source, inspection, notice, extra)
