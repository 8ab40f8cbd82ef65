"""The agent's turns in the app: approve / edit / reject / take over / auto, and asking again after errors."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.message_pump import MessagePump

from dgym_tui.core.types import ToolCall
from dgym_tui.tui.proposal_preview import preview_of
from dgym_tui.tui.screens.modals import (
    EditActionScreen,
    RejectScreen,
)
from dgym_tui.tui.session_calls import CallDone
from dgym_tui.tui.widgets.approve_panel import ApprovePanel
from dgym_tui.tui.widgets.transcript import format_action


class AgentTurns(MessagePump):
    """Mixin of :class:`~dgym_tui.tui.app.DgymApp`: shows the agent's proposals and runs the
    person's decision on them; a failed proposal is asked for again after ``AGENT_RETRY``.
    """

    #: Seconds before the agent is asked again after 1, 2, 3+ failed proposals in a row.
    AGENT_RETRY: ClassVar[tuple[float, ...]] = (5.0, 20.0, 60.0)

    def _ask_agent(self) -> bool:
        """Ask the agent for a proposal in a worker (errors back off, see AGENT_RETRY)."""
        self._cancel_retry()
        return self._session_call("asking the agent", self.session.propose,
                                  failed=self._agent_failed)

    def _agent_failed(self, text: str) -> None:
        """A proposal failed: say so once, keep every key live, ask again later. Not when
        the person took over while the agent was asked: its failure no longer matters."""
        if self.session is not None and self.session.mode == "human":
            return
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
        if (session is None or self._session_closed or session.done or self._agent_error is None
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
        if session is None or self._session_closed:
            return
        if session.done:
            self._typed_ahead.clear()
            self._offer_apply()
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

    def _show_proposal(self, proposal: Any) -> None:
        self.query_one(ApprovePanel).show(proposal, len(self.session.turns) + 1)
        self.refresh_bindings()
        frame = self._last_result.frame if self._last_result is not None else None
        preview = preview_of(proposal.action, frame[0] if frame else None)
        self.source_view.set_preview(preview)
        if preview is not None and preview.path != self._current_path:
            self._open(preview.path, preview.line)

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
        dropped = self.session.take_over()  # the proposal is recorded as taken over
        self.query_one(ApprovePanel).hide()
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
