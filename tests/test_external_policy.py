"""ExternalPolicy: an outside agent's calls as the proposals of a real session.

The session decides each queued call (approve mode here, as the app drives it); the
call's future gets what the outside agent reads for each decision: the observation, the
edited action that ran instead, the person's own action that replaced it, the note of a
rejection, and after the end the patch, then "the episode is over" for later calls.
"""

from __future__ import annotations

import threading

from scripted import ENTRYPOINT, FIX, write_repo

from dgym_tui.core.types import ToolCall
from dgym_tui.policies.external import ExternalPolicy


def _open(open_repo, tmp_path):
    policy = ExternalPolicy()
    session = open_repo(write_repo(tmp_path / "repo"), policy, "approve",
                        trajectory=tmp_path / "t.jsonl", entrypoint=ENTRYPOINT, terminal="local")
    policy.attach(session)
    session.start()
    return session, policy


def _proposed(session, policy, action):
    """Queue ``action`` as the outside agent and let the session propose it."""
    future = policy.call(action, "unit-agent")
    proposal = session.propose()
    assert proposal.action is action and proposal.raw == {
        "external": {"client": "unit-agent", "via": "mcp"}}
    assert not future.done()  # it waits for the decision
    return future, proposal


def test_each_decision_answers_the_call(open_repo, tmp_path):
    session, policy = _open(open_repo, tmp_path)

    future, proposal = _proposed(session, policy, ToolCall("view", {"path": "calc.py"}))
    session.approve(proposal)
    outcome = future.result(5)
    assert not outcome.error and "return a - b" in outcome.text
    assert outcome.data["decision"] == "approved" and outcome.data["step"] == 1

    future, proposal = _proposed(session, policy, ToolCall("view", {"path": "nowhere.py"}))
    session.edit(proposal, FIX)
    outcome = future.result(5)
    assert outcome.text.startswith("The person edited your call; this ran instead: rewrite")
    assert "+    return a + b" in outcome.text

    future, proposal = _proposed(session, policy, ToolCall("listdir", {}))
    session.act(ToolCall("eval", {}))  # the person acts instead: the call is dropped
    outcome = future.result(5)
    assert "ran their own action instead of your call" in outcome.text and "eval" in outcome.text

    future, proposal = _proposed(session, policy, ToolCall("submit", {}))
    session.reject(proposal, "run the tests first")
    outcome = future.result(5)
    assert outcome.error and outcome.text.endswith("Their note: run the tests first")

    future, proposal = _proposed(session, policy, ToolCall("submit", {}))
    session.approve(proposal)
    outcome = future.result(5)
    assert outcome.data["done"] and "+    return a + b" in outcome.data["patch"]
    assert "The episode is over (submitted)" in outcome.text

    late = policy.call(ToolCall("eval", {}), "unit-agent").result(5)
    assert late.error and late.text == "Nothing was run: the episode is over (submitted)."
    assert late.data["resolved"] is True


def test_closing_ends_a_waiting_proposal_and_answers_queued_calls(open_repo, tmp_path):
    from dgym_tui.policies.external import PolicyClosed

    session, policy = _open(open_repo, tmp_path)
    raised = []

    def propose() -> None:
        try:
            session.propose()
        except PolicyClosed as exc:
            raised.append(str(exc))

    waiting = threading.Thread(target=propose)
    waiting.start()
    policy.close("the server stopped")
    waiting.join(5)
    assert raised == ["the server stopped"]
    outcome = policy.call(ToolCall("eval", {}), "unit-agent").result(5)
    assert outcome.error and "the server stopped" in outcome.text
