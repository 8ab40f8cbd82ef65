"""What a :class:`~dgym_tui.episode.session.Session` tells its subscribers, one class per event.

Subscribers dispatch on the type (``match event: case TurnRecorded(turn=turn): ...``);
:data:`SessionEvent` is the union of them all, so a type checker sees every case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dgym_tui.core.types import StepResult, ToolCall
    from dgym_tui.episode.records import Proposal, Turn


@dataclass(frozen=True)
class EpisodeStarting:
    """The working copy exists; the terminal starts and the first eval runs now (up to
    ``eval_timeout`` seconds, None: no limit). :class:`EpisodeStarted` follows, or
    :class:`LoopFailed`."""

    eval_timeout: float | None


@dataclass(frozen=True)
class EpisodeStarted:
    """The environment was reset; ``result`` is its first observation."""

    result: StepResult


@dataclass(frozen=True)
class Proposing:
    """The policy was asked for the next action."""


@dataclass(frozen=True)
class Proposed:
    """The policy answered; the proposal waits for a decision (or runs, in auto mode)."""

    proposal: Proposal


@dataclass(frozen=True)
class Stepping:
    """The environment started executing ``action``."""

    action: ToolCall


@dataclass(frozen=True)
class TurnRecorded:
    """A turn was executed (or rejected) and recorded."""

    turn: Turn


@dataclass(frozen=True)
class ModeChanged:
    """The mode became ``mode`` (``"human"``, ``"approve"`` or ``"auto"``)."""

    mode: str


@dataclass(frozen=True)
class EpisodeEnded:
    """The episode is over; ``footer`` is the trajectory footer (reason, resolved, score...)."""

    footer: dict[str, Any]


@dataclass(frozen=True)
class LoopFailed:
    """Resetting, proposing or stepping raised; ``message`` says which and why (one line)."""

    message: str


SessionEvent = (EpisodeStarting | EpisodeStarted | Proposing | Proposed | Stepping | TurnRecorded
                | ModeChanged | EpisodeEnded | LoopFailed)
