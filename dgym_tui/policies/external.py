"""An agent outside this process as a policy: each of its tool calls is the next proposal.

An MCP client (Claude Code, Codex CLI, any agent that speaks MCP) calls the
episode's tools through :mod:`dgym_tui.integrations.mcp_server`. Each call is
handed to :meth:`ExternalPolicy.call`, which queues it and returns a future;
the session's turn loop asks :meth:`ExternalPolicy.propose` for the next
action as for any other policy, so every call becomes a recorded step, and in
``approve`` mode a person approves, edits, rejects or takes over first. When
the step is recorded the future gets the :class:`CallOutcome` the client reads:
the observation, the person's note after a rejection, the edited action, or
the result and the patch after ``submit``.
"""

from __future__ import annotations

import json
import queue
import threading
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dgym_tui.core.types import ToolCall
from dgym_tui.episode.events import EpisodeEnded, ModeChanged, SessionEvent, TurnRecorded
from dgym_tui.episode.policy import Policy
from dgym_tui.episode.records import EpisodeInfo, Proposal, Turn

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session

#: Seconds between two looks at whether the policy was closed while waiting for a call.
POLL_SECONDS = 0.2


class PolicyClosed(Exception):
    """The policy was closed (the server stopped, the app quit) while a proposal was awaited."""


class ProposalWithdrawn(Exception):
    """The person took over while a proposal was awaited; none is made."""


@dataclass
class CallOutcome:
    """What the external agent receives for one call.

    Attributes:
        text: the tool result to show the agent (observation, note, or why nothing ran).
        error: True when the call was refused, rejected or not run.
        data: machine-readable fields (JSON-ready): ``step``, ``decision``, ``score``,
            ``max_score``, ``resolved``, ``done``, and ``patch`` after the episode ended.
    """

    text: str
    error: bool = False
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class ExternalCall:
    """One queued call: the action, who sent it, and the future its outcome goes to."""

    action: ToolCall
    client: str
    future: Future = field(default_factory=Future)


def _call_text(action: ToolCall) -> str:
    args = action.arguments
    shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
    return f"{action.name} {shown}"


def describe_turn(turn: Turn, footer: dict[str, Any] | None = None) -> CallOutcome:
    """The outcome of the external agent's call that ``turn`` decided.

    Args:
        turn: the recorded turn (approved, auto, edited, rejected, or a person's
            manual step that replaced the call).
        footer: the episode's footer when the turn ended it (its ``patch`` is appended).

    Returns:
        A :class:`CallOutcome`; ``error`` is True for a rejected call and a refused step.
    """
    result = turn.result
    data: dict[str, Any] = {"step": turn.index, "decision": turn.decision}
    if result is not None:
        data.update(score=result.score, max_score=result.max_score, resolved=result.resolved,
                    done=result.done)
    if turn.decision == "rejected":
        why = turn.note or turn.error or "no reason given"
        return CallOutcome(f"The person rejected this call; nothing was run. Their note: {why}",
                           error=True, data=data)
    parts = []
    if turn.decision == "edited" and turn.action is not None:
        parts.append(f"The person edited your call; this ran instead: {_call_text(turn.action)}")
    elif turn.decision == "manual" and turn.action is not None:
        parts.append("The person ran their own action instead of your call (yours did not run): "
                     f"{_call_text(turn.action)}")
    if turn.note:
        parts.append(f"The person's note: {turn.note}")
    parts.append(turn.observation)
    if footer is not None:
        data["patch"] = footer.get("patch") or ""
        data["reason"] = footer.get("reason") or ""
        parts.append(f"The episode is over ({data['reason']}). The original repository is "
                     "unchanged: only the person applies the patch.\nPatch:\n"
                     + (data["patch"] or "(no changes)"))
    return CallOutcome("\n\n".join(p for p in parts if p),
                       error=bool(result is not None and result.error), data=data)


class ExternalPolicy(Policy):
    """Proposes the calls an external agent sends, one per turn, in arrival order.

    Args:
        name: the policy's label in trajectory headers (default ``"mcp"``).

    Attributes:
        name: the label. actor: ``"agent"`` (the session records turns as the agent's).
        info: the episode's :class:`EpisodeInfo` after ``reset`` (task, tool schemas,
            initial observation), or None before.

    Use: build it, give it to ``open_session``, then :meth:`attach` the session before
    starting it; calls then come in through :meth:`call` from any thread.
    """

    actor = "agent"

    def __init__(self, name: str = "mcp") -> None:
        self.name = name
        self.info: EpisodeInfo | None = None
        self._queue: queue.Queue[ExternalCall] = queue.Queue()
        self._current: ExternalCall | None = None
        self._ended: ExternalCall | None = None  # the call whose step ended the episode
        self._turn: Turn | None = None  # ... and that step
        self._final: dict[str, Any] = {}  # the footer's result, for calls after the end
        self._closed = threading.Event()
        self._closed_reason = ""
        self._lock = threading.Lock()
        self._session: Session | None = None

    # -- the session's side ---------------------------------------------------
    def attach(self, session: Session) -> None:
        """Follow ``session``'s events, which decide the calls' outcomes."""
        self._session = session
        session.subscribe(self._on_event)

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode: remember what the external agent is told about it."""
        self.info = info

    def propose(self, turns: list[Turn]) -> Proposal:
        """Wait for the next call and return it as the proposal.

        Raises:
            PolicyClosed: :meth:`close` was called before a call came.
            ProposalWithdrawn: the session switched to ``human`` mode (taken over) meanwhile.
        """
        while True:
            if self._closed.is_set():
                raise PolicyClosed(self._closed_reason or "the external agent is gone")
            if self._session is not None and self._session.env.workspace is None:
                self.close("the episode's environment was closed")  # a front end quit
                continue
            if self._session is not None and self._session.mode == "human":
                # taken over while waiting: the front end gets its turn back (calls are
                # answered at once until the person hands the episode back)
                raise ProposalWithdrawn("the person took over")
            try:
                call = self._queue.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            with self._lock:
                if call.future.done():  # answered meanwhile (closed)
                    continue
                self._current = call
            return Proposal(action=call.action,
                            raw={"external": {"client": call.client, "via": self.name}})

    def _on_event(self, event: SessionEvent) -> None:
        with self._lock:
            call = self._current
            if isinstance(event, TurnRecorded) and call is not None:
                self._current = None
                turn = event.turn
                if turn.result is not None and turn.result.done:
                    self._ended = call  # answered with the patch once the footer is written
                    self._turn = turn
                else:
                    _resolve(call, describe_turn(turn))
            elif isinstance(event, ModeChanged) and event.mode == "human" and call is not None:
                session = self._session
                if session is None or session.pending is None:  # taken over: dropped
                    self._current = None
                    _resolve(call, CallOutcome(
                        "The person took over the episode; your call was not run. They may "
                        "hand it back later: call again then.", error=True))
        if isinstance(event, EpisodeEnded):
            ended, self._ended = self._ended, None
            if ended is not None:
                _resolve(ended, describe_turn(self._turn, event.footer))
            footer = event.footer
            self.close(f"the episode is over ({footer.get('reason') or 'ended'})",
                       footer=footer)

    # -- the external agent's side --------------------------------------------
    def call(self, action: ToolCall, client: str) -> Future:
        """Queue one call of the external agent.

        Args:
            action: the tool call.
            client: who sent it (the MCP client's name), recorded with the step.

        Returns:
            A ``concurrent.futures.Future`` of the :class:`CallOutcome`; it is answered
            at once when the episode is over or a person took over.
        """
        entry = ExternalCall(action, client)
        session = self._session
        if self._closed.is_set():
            _resolve(entry, CallOutcome(f"Nothing was run: {self._closed_reason}.", error=True,
                                        data=dict(self._final)))
        elif session is not None and session.mode == "human":
            _resolve(entry, CallOutcome(
                "Nothing was run: the person took over the episode. Call again later, "
                "once they hand it back.", error=True))
        else:
            self._queue.put(entry)
            if self._closed.is_set():  # closed between the check and the put
                self._drain()
        return entry.future

    def close(self, reason: str = "the server stopped", footer: dict[str, Any] | None = None) -> None:
        """Stop: a waiting :meth:`propose` raises :class:`PolicyClosed`; every call not
        yet answered, and every later one, is answered with ``reason``. Idempotent."""
        with self._lock:
            if self._closed.is_set():
                return
            self._closed_reason = reason
            if footer:
                self._final = {"patch": footer.get("patch") or "", "resolved": footer.get("resolved"),
                               "score": footer.get("score"), "max_score": footer.get("max_score"),
                               "reason": footer.get("reason")}
            self._closed.set()
            current, self._current = self._current, None
        if current is not None:
            _resolve(current, CallOutcome(f"Your call was not run: {reason}.", error=True))
        self._drain()

    def _drain(self) -> None:
        while True:
            try:
                entry = self._queue.get_nowait()
            except queue.Empty:
                return
            _resolve(entry, CallOutcome(f"Nothing was run: {self._closed_reason}.", error=True,
                                        data=dict(self._final)))


def _resolve(call: ExternalCall, outcome: CallOutcome) -> None:
    try:
        call.future.set_result(outcome)
    except InvalidStateError:  # answered already, or the client cancelled the call
        pass
