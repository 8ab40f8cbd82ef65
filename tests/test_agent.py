"""LLMAgent against the HTTP stub through the real litellm client."""

from __future__ import annotations

import json

import pytest

from dgym_tui.core.types import StepResult, ToolCall
from dgym_tui.episode.policy import Policy
from dgym_tui.episode.records import EpisodeInfo, Turn
from dgym_tui.llm.client import LLM, LLMConfig
from dgym_tui.policies.agent import AgentSpecError, LLMAgent, load_agent_spec


def schema(name: str, **properties: str) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": f"The {name} tool.",
        "parameters": {"type": "object", "additionalProperties": False,
                       "properties": {k: {"type": t} for k, t in properties.items()},
                       "required": list(properties)}}}


SCHEMAS = [schema("listdir"), schema("view", path="string"), schema("eval"),
           schema("pdb", command="string"), schema("submit"),
           schema("rewrite", path="string", new_code="string"),
           schema("grep", pattern="string")]
INFO = EpisodeInfo(task="Make test_cart.py pass.", instructions="(tool instructions)",
                   tool_schemas=SCHEMAS, initial_observation="1 failed, 2 passed")


def make_agent(server, agent="debug_agent", tool_calling=None, **config) -> LLMAgent:
    values = {"name": "stub", "model": "openai/stub", "api_base": server.url, "api_key": "x",
              "retry_base_delay": 0.001}
    values.update(config)
    llm = LLM(LLMConfig(**values))
    policy = LLMAgent(agent, llm, tool_calling=tool_calling)
    policy.reset(INFO)
    return policy


def executed(index: int, call: ToolCall, observation: str, reasoning: str = "",
             error: bool = False) -> Turn:
    return Turn(index=index, actor="agent", decision="auto", proposed=call, action=call,
                reasoning=reasoning, result=StepResult(observation=observation, action=call,
                                                       error=error))


def offered(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


def test_tool_call_becomes_proposal(llm_server):
    agent = make_agent(llm_server)
    assert isinstance(agent, Policy) and agent.name == "debug_agent"
    llm_server.script([{"content": "Let me read the code.",
                        "usage": {"prompt_tokens": 321, "completion_tokens": 12},
                        "tool_calls": [{"id": "call_7", "name": "view",
                                        "arguments": {"path": "cart.py"}}]}])
    proposal = agent.propose([])
    assert proposal.error is None
    assert proposal.action == ToolCall(name="view", arguments={"path": "cart.py"}, id="call_7")
    assert proposal.reasoning == "Let me read the code."
    assert (proposal.usage.prompt_tokens, proposal.usage.completion_tokens) == (321, 12)
    assert proposal.raw["tool_calls"][0]["function"]["name"] == "view"
    (request,) = llm_server.requests
    # the spec's tools, in the spec's order, all present in the env
    assert offered(request) == ["listdir", "view", "grep", "eval", "pdb", "rewrite", "submit"]
    system, task = request["messages"]
    assert system["role"] == "system" and "debug_agent" in system["content"]
    assert "pdb" in system["content"] and "tool_call" not in system["content"]
    assert task["role"] == "user"
    assert "Make test_cart.py pass." in task["content"] and "1 failed" in task["content"]


@pytest.mark.parametrize("reply, message", [
    ({"tool_calls": [{"name": "view", "arguments": '{"path": "cart.py"'}]}, "not valid JSON"),
    ({"tool_calls": [{"name": "view", "arguments": "[1, 2]"}]}, "must be a JSON object"),
    ({"content": "I think the bug is in cart.py."}, "no tool call"),
    ({"tool_calls": [{"name": "bash", "arguments": {"cmd": "ls"}}]}, "unknown tool 'bash'"),
])
def test_invalid_replies_become_error_proposals(llm_server, reply, message):
    agent = make_agent(llm_server)
    llm_server.script([reply])
    proposal = agent.propose([])
    assert proposal.action is None
    assert message in proposal.error


def test_history_messages(llm_server):
    agent = make_agent(llm_server)
    view = ToolCall("view", {"path": "cart.py"}, id="call_a")
    pdb_call = ToolCall("pdb", {"command": "b cart.py:3"}, id="call_b")
    edited_from = ToolCall("pdb", {"command": "c"}, id="call_c")
    edited_to = ToolCall("pdb", {"command": "n"}, id="call_d")
    manual = ToolCall("eval", {}, id="call_e")
    turns = [
        executed(1, view, "1 def total(items):", reasoning="Read it."),
        Turn(index=2, actor="agent", decision="rejected", proposed=pdb_call, action=None,
             note="set it on line 5 instead"),
        Turn(index=3, actor="agent", decision="rejected", proposed=None, action=None,
             error="the reply contained no tool call", reasoning="Hmm."),
        Turn(index=4, actor="human", decision="edited", proposed=edited_from, action=edited_to,
             result=StepResult(observation="> cart.py(4)total()", action=edited_to)),
        Turn(index=5, actor="human", decision="manual", proposed=None, action=manual,
             result=StepResult(observation="3 passed", action=manual)),
    ]
    llm_server.script([{"tool_calls": [{"name": "submit", "arguments": {}}]}])
    assert agent.propose(turns).action.name == "submit"
    messages = llm_server.requests[0]["messages"][2:]
    roles = [m["role"] for m in messages]
    assert roles == ["assistant", "tool", "assistant", "tool", "assistant", "user",
                     "assistant", "tool", "user"]
    assert messages[0]["content"] == "Read it."
    assert messages[0]["tool_calls"][0]["id"] == "call_a"
    assert json.loads(messages[0]["tool_calls"][0]["function"]["arguments"]) == {"path": "cart.py"}
    assert messages[1] == {"role": "tool", "tool_call_id": "call_a",
                           "content": "1 def total(items):"}
    assert messages[3]["tool_call_id"] == "call_b"
    assert messages[3]["content"] == ("The user rejected this action. "
                                      "Note: set it on line 5 instead")
    assert messages[4]["content"] == "Hmm."
    assert "could not be run: the reply contained no tool call" in messages[5]["content"]
    assert "invalid proposal" not in messages[5]["content"]
    assert messages[7]["tool_call_id"] == "call_c"
    assert "edited" in messages[7]["content"] and '"n"' in messages[7]["content"]
    assert messages[7]["content"].endswith("> cart.py(4)total()")
    assert "eval" in messages[8]["content"] and "3 passed" in messages[8]["content"]


def test_text_tool_calling(llm_server):
    agent = make_agent(llm_server, tool_calling="text")
    view = ToolCall("view", {"path": "cart.py"}, id="call_a")
    turns = [executed(1, view, "1 def total(items):", reasoning="Read it.")]
    llm_server.script([
        {"content": 'The loop is off by one.\n```tool_call\n'
                    '{"name": "pdb", "arguments": {"command": "b cart.py:3"}}\n```'},
        {"content": '```tool_call\n{"name": "eval", "arguments": {}}\n```\n'
                    '```tool_call\n{"name": "submit", "arguments": {}}\n```'},
        {"content": '```tool_call\n{"name": "eval", "arguments": {]}\n```'},
        {"content": "no block at all"},
    ])
    proposal = agent.propose(turns)
    assert proposal.error is None
    assert (proposal.action.name, proposal.action.arguments) == ("pdb", {"command": "b cart.py:3"})
    assert proposal.reasoning == "The loop is off by one."
    request = llm_server.requests[0]
    assert "tools" not in request
    system = request["messages"][0]["content"]
    assert "```tool_call" in system and '"command"' in system  # format + schemas documented
    history = request["messages"][2:]
    assert [m["role"] for m in history] == ["assistant", "user"]
    assert '```tool_call\n{"name": "view", "arguments": {"path": "cart.py"}}\n```' in \
        history[0]["content"]
    assert "1 def total(items):" in history[1]["content"]
    rejected = Turn(index=2, actor="agent", decision="rejected", action=None,
                    proposed=ToolCall("eval", {}, id="call_r"), note="read the test first")
    first_of_two = agent.propose([*turns, rejected])  # the first of two calls runs
    assert first_of_two.error is None and first_of_two.action.name == "eval"
    assert first_of_two.raw["parse"]["notes"] == [
        "Your reply held 2 tool calls (eval, submit); only the first (eval) was run, the "
        "other one was not. Make one tool call per reply."]
    history = llm_server.requests[1]["messages"][2:]
    assert [m["role"] for m in history] == ["assistant", "user", "assistant", "user"]
    assert history[2]["content"] == '```tool_call\n{"name": "eval", "arguments": {}}\n```'
    assert history[3]["content"] == "The user rejected this action. Note: read the test first"
    assert "not valid JSON" in agent.propose(turns).error
    assert "no tool call" in agent.propose(turns).error


def test_context_trimming_keeps_system_task_and_latest(llm_server):
    agent = make_agent(llm_server, context_window=4000, max_tokens=500)
    turns = [executed(i, ToolCall("eval", {}, id=f"call_{i}"),
                      f"run {i}: " + "FAILED test_cart.py::test_total " * 40)
             for i in range(1, 31)]
    llm_server.script([{"tool_calls": [{"name": "view", "arguments": {"path": "cart.py"}}]}])
    assert agent.propose(turns).action.name == "view"
    sent = llm_server.requests[0]["messages"]
    assert sent[0]["role"] == "system" and "Make test_cart.py pass." in sent[1]["content"]
    assert sent[-1]["content"].startswith("run 30: ")
    assert "run 1: " not in json.dumps(sent)
    assert "removed to fit" in sent[2]["content"]
    for i, message in enumerate(sent):  # every tool result still follows its call
        if message["role"] == "tool":
            assert sent[i - 1]["tool_calls"][0]["id"] == message["tool_call_id"]


def test_debug_5_agent_unlocks_pdb_after_five_rewrites(llm_server):
    agent = make_agent(llm_server, agent="debug_5_agent")
    turns = []
    for i in range(1, 5):
        call = ToolCall("rewrite", {"path": "cart.py", "new_code": f"x = {i}\n"}, id=f"call_{i}")
        turns.append(executed(i, call, "rewrote cart.py"))
    # a refused rewrite does not count
    bad = ToolCall("rewrite", {"path": "../x", "new_code": ""}, id="call_bad")
    turns.append(executed(5, bad, "path escapes the repository", error=True))
    llm_server.script([{"tool_calls": [{"name": "pdb", "arguments": {"command": "l"}}]}])
    proposal = agent.propose(turns)
    assert proposal.action is None
    assert "not available yet" in proposal.error and "4 so far" in proposal.error
    request = llm_server.requests[-1]
    assert "pdb" not in offered(request)
    assert "`pdb` tool is locked for now" in request["messages"][0]["content"]

    fifth = ToolCall("rewrite", {"path": "cart.py", "new_code": "x = 5\n"}, id="call_5")
    turns.append(executed(6, fifth, "rewrote cart.py"))
    llm_server.script([{"tool_calls": [{"name": "pdb", "arguments": {"command": "l"}}]}])
    assert agent.propose(turns).action == ToolCall("pdb", {"command": "l"}, id="call_stub0")
    request = llm_server.requests[-1]
    assert "pdb" in offered(request)
    assert "is locked for now" not in request["messages"][0]["content"]
    assert request["messages"][-1] == {"role": "user",
                                       "content": "The `pdb` tool is now unlocked; you may use it."}


def test_rewrite_agent_has_no_pdb_and_skips_missing_tools(llm_server):
    agent = make_agent(llm_server, agent="rewrite_agent")
    agent.reset(EpisodeInfo(task="t", instructions="", initial_observation="o",
                            tool_schemas=[s for s in SCHEMAS if s["function"]["name"] != "grep"]))
    llm_server.script([{"tool_calls": [{"name": "pdb", "arguments": {"command": "l"}}]}])
    assert "unknown tool 'pdb'" in agent.propose([]).error
    assert offered(llm_server.requests[0]) == ["listdir", "view", "eval", "rewrite", "submit"]


def test_agent_retries_through_rate_limits(llm_server):
    agent = make_agent(llm_server)
    llm_server.script([{"status": 429}, {"status": 500},
                       {"tool_calls": [{"name": "eval", "arguments": {}}]}])
    assert agent.propose([]).action.name == "eval"
    assert len(llm_server.requests) == 3


def test_load_agent_spec_errors_and_user_agents(tmp_path):
    with pytest.raises(AgentSpecError, match="known agents: bash_agent, debug_5_agent, debug_agent"):
        load_agent_spec("no_such_agent")
    spec_file = tmp_path / "mine.yaml"
    spec_file.write_text("name: mine\ntools: [view, submit]\n"
                         "system_prompt: 'I am {{ agent.name }} with "
                         "{{ tools | map(attribute=\"name\") | join(\",\") }}'\n")
    spec = load_agent_spec(spec_file)
    assert (spec.name, spec.tools, spec.path) == ("mine", ["view", "submit"], spec_file)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ntools: [view]\nsystem_prompt: x\nunlock: {pdb: {after: 1}}\n")
    with pytest.raises(AgentSpecError, match="unlock names 'pdb'"):
        load_agent_spec(bad)
    missing = tmp_path / "missing.yaml"
    missing.write_text("name: m\ntools: [view]\nsystem_prompt: prompts/nope.jinja\n")
    with pytest.raises(AgentSpecError, match="not found"):
        load_agent_spec(missing)


def test_user_agent_renders_inline_template(llm_server, tmp_path):
    spec_file = tmp_path / "mine.yaml"
    spec_file.write_text("name: mine\ntools: [view, submit]\n"
                         "system_prompt: 'I am {{ agent.name }} with "
                         "{{ tools | map(attribute=\"name\") | join(\",\") }}'\n")
    agent = make_agent(llm_server, agent=str(spec_file))
    llm_server.script([{"tool_calls": [{"name": "submit", "arguments": {}}]}])
    agent.propose([])
    assert llm_server.requests[0]["messages"][0]["content"] == "I am mine with view,submit"


def test_agent_runs_a_real_episode(llm_server, make_repo, make_env, fast_pytest, tmp_path):
    from dgym_tui.episode.session import Session

    repo = make_repo({
        "cart.py": "def total(items):\n    return sum(items) - 1\n",
        "test_cart.py": "from cart import total\n\ndef test_total():\n"
                        "    assert total([1, 2]) == 3\n",
    })
    env = make_env(repo, entrypoint=f"{fast_pytest} test_cart.py",
                   tools=("listdir", "view", "rewrite", "eval", "submit"))
    llm = LLM(LLMConfig(name="stub", model="openai/stub", api_base=llm_server.url,
                        api_key="x", retry_base_delay=0.001))
    agent = LLMAgent("debug_agent", llm)
    llm_server.script([
        {"content": "Read the code.", "tool_calls": [
            {"id": "call_v", "name": "view", "arguments": {"path": "cart.py"}}]},
        {"content": "The bug is the - 1."},  # no tool call: told back, episode goes on
        {"tool_calls": [{"id": "call_r", "name": "rewrite", "arguments": {
            "path": "cart.py", "start": 2, "end": 2, "new_code": "    return sum(items)\n"}}]},
        {"tool_calls": [{"id": "call_e", "name": "eval", "arguments": {}}]},
        {"tool_calls": [{"id": "call_s", "name": "submit", "arguments": {}}]},
    ])
    session = Session(env, policy=agent, mode="auto", max_steps=10,
                      trajectory_path=tmp_path / "agent.jsonl")
    session.start()
    session.run()
    assert session.done and llm_server.remaining == 0
    assert [(t.decision, t.action.name if t.action else None) for t in session.turns] == [
        ("auto", "view"), ("rejected", None), ("auto", "rewrite"), ("auto", "eval"),
        ("auto", "submit")]
    assert session.turns[3].result.resolved
    assert session.usage.prompt_tokens == 5 * 10  # the stub's default usage per reply
    requests = llm_server.requests
    assert offered(requests[0]) == ["listdir", "view", "eval", "rewrite", "submit"]
    assert "test_cart.py" in requests[0]["messages"][1]["content"]  # initial eval output
    view_result = requests[1]["messages"][-1]
    assert view_result["role"] == "tool" and view_result["tool_call_id"] == "call_v"
    assert "return sum(items) - 1" in view_result["content"]
    error_note = requests[2]["messages"][-1]
    assert error_note["role"] == "user" and "no tool call" in error_note["content"]
    assert requests[2]["messages"][-2] == {"role": "assistant", "content": "The bug is the - 1."}
    assert (repo / "cart.py").read_text().endswith("- 1\n")
    assert "+    return sum(items)" in env.patch()


@pytest.mark.parametrize("mode", ["native", "text"])
def test_invalid_reply_stays_in_history_and_correction_shows_the_format(llm_server, mode):
    agent = make_agent(llm_server, tool_calling=mode)
    raw = {"role": "assistant", "content": "I would look at cart.py.",
           "tool_calls": [{"id": "call_x", "type": "function",
                           "function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}]}
    invalid = Turn(index=1, actor="agent", decision="rejected", proposed=None, action=None,
                   error="unknown tool 'bash'; available tools: view",
                   reasoning="I would look at cart.py.", raw=raw)
    llm_server.script([{"tool_calls": [{"name": "eval", "arguments": {}}]}])
    agent.propose([invalid])
    reply, correction = llm_server.requests[0]["messages"][2:]
    # the model sees its own mistake as its message, native calls written out as text
    assert reply["role"] == "assistant" and "tool_calls" not in reply
    assert reply["content"] == ('I would look at cart.py.\n\n```tool_call\n'
                                '{"name": "bash", "arguments": {"cmd": "ls"}}\n```')
    text = correction["content"]
    assert correction["role"] == "user"
    assert text.startswith("Your last reply could not be run: unknown tool 'bash'")
    assert "exactly one a " not in text and "exactly one tool call" in text
    # a one-line example built from a real tool on offer, in the exact format
    assert '```tool_call\n{"name": "view", "arguments": {"path": "<path>"}}\n```' in text
    # after an unknown tool: every tool, each with an example call
    assert text.splitlines()[-8:] == [
        "The tools, each with an example that runs on this repository:",
        '- listdir: {"name": "listdir", "arguments": {}}',
        '- view: {"name": "view", "arguments": {"path": "<path>"}}',
        '- grep: {"name": "grep", "arguments": {"pattern": "<pattern>"}}',
        '- eval: {"name": "eval", "arguments": {}}',
        '- pdb: {"name": "pdb", "arguments": {"command": "<command>"}}',
        '- rewrite: {"name": "rewrite", "arguments": {"path": "<path>", "new_code": "<new_code>"}}',
        '- submit: {"name": "submit", "arguments": {}}']
    assert ("function calling" in text) == (mode == "native")


def test_native_mode_recovers_a_call_written_in_the_content(llm_server):
    agent = make_agent(llm_server)
    llm_server.script([{"content": 'Reading it.\n```json\n{"name": "view", "arguments": '
                                   '{"path": "cart.py"}}\n```'}])
    proposal = agent.propose([])
    assert (proposal.action.name, proposal.action.arguments) == ("view", {"path": "cart.py"})
    assert proposal.reasoning == "Reading it."
    assert proposal.raw["parse"] == {"form": "fenced_json", "recovered": True}
    assert proposal.raw["content"].endswith("```")  # the raw reply as received


def test_same_invalid_reply_three_times_ends_the_episode_stuck(llm_server, make_repo, make_env,
                                                               fast_pytest, tmp_path):
    from dgym_tui.episode.session import Session
    from dgym_tui.episode.trajectory import read_trajectory

    repo = make_repo({"test_a.py": "def test_a():\n    assert False\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_a.py", tools=("view", "eval", "submit"))
    llm = LLM(LLMConfig(name="stub", model="openai/stub", api_base=llm_server.url,
                        api_key="x", retry_base_delay=0.001))
    same = {"content": "I think the test is wrong."}
    llm_server.script([same, same, {"content": "Something else."}, same, same, same,
                       {"tool_calls": [{"name": "submit", "arguments": {}}]}])
    session = Session(env, policy=LLMAgent("debug_agent", llm), mode="auto", max_steps=20,
                      trajectory_path=tmp_path / "t.jsonl")
    session.start()
    session.run()
    assert session.done and session.reason == "stuck"
    assert len(session.turns) == 6 and all(t.invalid for t in session.turns)
    assert llm_server.remaining == 1  # the budget was not spent further
    assert read_trajectory(tmp_path / "t.jsonl").footer["reason"] == "stuck"
