"""info_seek_agent: a seeker investigates, a fixer writes the patch from its summary
(two LLM entries, each its own stub server), recorded with each role's usage."""

from __future__ import annotations

import pytest
import yaml
from llm_stub import StubLLMServer

from dgym_tui.episode.session import Session
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.policies import PolicyError, make_policy
from dgym_tui.policies.agent import load_agent_spec
from dgym_tui.policies.team import InfoSeekAgent
from dgym_tui.runs.runner import agent_tools
from dgym_tui.training.export import rebuild_prompt, sft_conversations


@pytest.fixture
def fixer_server():
    server = StubLLMServer()
    try:
        yield server
    finally:
        server.close()


def llm_yaml(tmp_path, seeker, fixer):
    path = tmp_path / "llm.yaml"
    common = {"model": "openai/stub", "api_key": "x", "retry_base_delay": 0.001}
    path.write_text(yaml.safe_dump({"small": {**common, "api_base": seeker.url},
                                    "big": {**common, "api_base": fixer.url}}))
    return path


def episode(llm_server, fixer_server, make_repo, make_env, fast_pytest, tmp_path):
    repo = make_repo({"cart.py": "def total(items):\n    return sum(items) - 1\n",
                      "test_cart.py": "from cart import total\n\ndef test_total():\n"
                                      "    assert total([1, 2]) == 3\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_cart.py",
                   tools=tuple(agent_tools("agent", "info_seek_agent")))
    agent = make_policy("agent", "info_seek_agent", "seeker=small,fixer=big",
                        llm_config=llm_yaml(tmp_path, llm_server, fixer_server))
    assert isinstance(agent, InfoSeekAgent)
    return env, agent


def test_seeker_summary_hands_over_to_the_fixer(llm_server, fixer_server, make_repo, make_env,
                                                fast_pytest, tmp_path):
    env, agent = episode(llm_server, fixer_server, make_repo, make_env, fast_pytest, tmp_path)
    llm_server.script([
        {"tool_calls": [{"id": "s1", "name": "view", "arguments": {"path": "cart.py"}}],
         "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
        {"tool_calls": [{"id": "s2", "name": "rewrite", "arguments": {"path": "cart.py"}}],
         "usage": {"prompt_tokens": 110, "completion_tokens": 10}},  # not a seeker tool
        {"content": "total() subtracts 1 on cart.py line 2; drop the - 1.",
         "usage": {"prompt_tokens": 120, "completion_tokens": 20}},  # no call: the summary
    ])
    fixer_server.script([
        {"tool_calls": [{"id": "f1", "name": "rewrite", "arguments": {
            "path": "cart.py", "start": 2, "end": 2, "new_code": "    return sum(items)\n"}}],
         "usage": {"prompt_tokens": 1000, "completion_tokens": 50}},
        {"tool_calls": [{"id": "f2", "name": "submit", "arguments": {}}],
         "usage": {"prompt_tokens": 1100, "completion_tokens": 5}},
    ])
    path = tmp_path / "team.jsonl"
    session = Session(env, policy=agent, mode="auto", max_steps=10, trajectory_path=path)
    session.start()
    session.run()
    assert session.done and session.reason == "submitted" and session.footer["resolved"]
    assert llm_server.remaining == fixer_server.remaining == 0
    # the seeker was offered only its tools; the fixer got the summary, not the seeker's turns
    assert [t["function"]["name"] for t in llm_server.requests[0]["tools"]] == [
        "listdir", "view", "grep", "eval", "pdb"]
    first_fixer = fixer_server.requests[0]["messages"]
    assert len(first_fixer) == 2 and "drop the - 1" in first_fixer[1]["content"]
    assert "Findings of the investigation (seeker)" in first_fixer[1]["content"]
    assert [t["function"]["name"] for t in fixer_server.requests[0]["tools"]] == [
        "view", "grep", "rewrite", "eval", "submit"]
    traj = read_trajectory(path)
    roles = [s["raw"]["role"] for s in traj.steps]
    assert roles == ["seeker", "seeker", "fixer", "fixer"]
    handoff = traj.steps[2]["raw"]["handoff"]
    assert handoff["summary"].startswith("total() subtracts 1")
    assert handoff["after_steps"] == 2 and handoff["usage"]["prompt_tokens"] == 120
    assert traj.steps[2]["usage"]["prompt_tokens"] == 1000 + 120  # summary counted, once
    assert agent.usage_by_role["seeker"].prompt_tokens == 100 + 110 + 120
    assert agent.usage_by_role["fixer"].prompt_tokens == 1000 + 1100
    assert session.usage.prompt_tokens == agent.usage.prompt_tokens == 100 + 110 + 120 + 2100
    assert traj.header["prompt"]["roles"] == ["seeker", "fixer"]
    # every request of both models can be rebuilt from the trajectory
    sent = [llm_server.requests[0], llm_server.requests[1], fixer_server.requests[0],
            fixer_server.requests[1]]
    for step, request in enumerate(sent, start=1):
        messages, tools = rebuild_prompt(traj, step)
        assert messages == request["messages"] and tools == request["tools"], step
    # training data: one conversation per role, each as that model saw it
    seeker_conv, fixer_conv = sft_conversations(traj)
    assert (seeker_conv["meta"]["role"], fixer_conv["meta"]["role"]) == ("seeker", "fixer")
    unweighted = [{k: v for k, v in m.items() if k != "weight"} for m in seeker_conv["messages"]]
    assert unweighted[:-1] == llm_server.requests[2]["messages"]  # the call that gave the summary
    assert seeker_conv["messages"][-1] == {"role": "assistant", "content": handoff["summary"]}
    assert [t["function"]["name"] for t in seeker_conv["tools"]] == [
        "listdir", "view", "grep", "eval", "pdb"]
    assert fixer_conv["messages"][:-1] == fixer_server.requests[1]["messages"]
    assert fixer_conv["messages"][-1]["tool_calls"][0]["function"]["name"] == "submit"


def test_seeker_budget_ends_with_an_asked_summary(llm_server, fixer_server, make_repo, make_env,
                                                  fast_pytest, tmp_path):
    env, agent = episode(llm_server, fixer_server, make_repo, make_env, fast_pytest, tmp_path)
    agent.seeker_steps = 2
    llm_server.script([{"tool_calls": [{"name": "eval", "arguments": {}}]},
                       {"tool_calls": [{"name": "view", "arguments": {"path": "cart.py"}}]},
                       {"content": "The - 1 in total() is the bug."}])
    fixer_server.script([{"tool_calls": [{"name": "submit", "arguments": {}}]}])
    session = Session(env, policy=agent, mode="auto", max_steps=10)
    session.start()
    session.run()
    assert session.reason == "submitted" and len(session.turns) == 3
    summary_request = llm_server.requests[2]
    assert "tools" not in summary_request
    assert summary_request["messages"][-1]["content"].startswith("Stop investigating now.")
    assert agent.summary == "The - 1 in total() is the bug."
    assert "The - 1 in total() is the bug." in fixer_server.requests[0]["messages"][1]["content"]
    handoff = session.turns[2].raw["handoff"]
    assert handoff["asked"] is True
    assert handoff["prompt"]["sent"][-1] in handoff["prompt"]["new"]  # the request is stored


def test_role_mapping_errors(tmp_path, llm_server):
    path = llm_yaml(tmp_path, llm_server, llm_server)
    with pytest.raises(PolicyError, match="one entry per role"):
        make_policy("agent", "info_seek_agent", "seeker=small", llm_config=path)
    with pytest.raises(PolicyError, match="has no roles"):
        make_policy("agent", "debug_agent", "seeker=small,fixer=big", llm_config=path)
    same = make_policy("agent", "info_seek_agent", "small", llm_config=path)
    assert same.seeker.llm.config.name == same.fixer.llm.config.name == "small"
    spec = load_agent_spec("info_seek_agent")
    assert spec.max_steps == {"seeker": 12} and "rewrite" not in spec.roles["seeker"].tools


@pytest.mark.parametrize("second, summary", [
    ({"content": "total() returns sum(items) - 1; drop the - 1 in cart.py line 2."},
     "total() returns sum(items) - 1; drop the - 1 in cart.py line 2."),
    ({"content": '{"name": "pdb", "arguments": {"command": "p items"}}'}, "")])
def test_a_summary_that_is_a_tool_call_is_asked_again_once(llm_server, fixer_server, make_repo,
                                                           make_env, fast_pytest, tmp_path,
                                                           second, summary):
    env, agent = episode(llm_server, fixer_server, make_repo, make_env, fast_pytest, tmp_path)
    agent.seeker_steps = 1
    llm_server.script([{"tool_calls": [{"name": "eval", "arguments": {}}]},
                       {"content": '```json\n{"name": "view", "arguments": {"path": "cart.py"}}'
                                   '\n```'},  # the "summary": a tool call
                       second])
    fixer_server.script([{"tool_calls": [{"name": "submit", "arguments": {}}]}])
    session = Session(env, policy=agent, mode="auto", max_steps=10)
    session.start()
    session.run()
    assert llm_server.remaining == 0 and len(llm_server.requests) == 3
    again = llm_server.requests[2]["messages"]
    assert again[-1]["content"].startswith("That is not a summary: it holds a tool call.")
    assert agent.summary == summary
    findings = fixer_server.requests[0]["messages"][1]["content"]
    # the findings section holds the prose summary only (the prompt's example follows it)
    handed = findings.split("(seeker)\n", 1)[1].split("\n\nReply with one tool call")[0]
    assert handed == (summary or "(the investigator gave no usable summary)")
