"""Training data that matches what the model saw: the prompt of every step can be
rebuilt from the trajectory, and `dgym export --format sft` writes those prompts."""

from __future__ import annotations

import json

import pytest

from dgym_tui.cli.main import main
from dgym_tui.episode.session import Session
from dgym_tui.episode.trajectory import TrajectoryError, read_trajectory
from dgym_tui.llm.client import LLM, LLMConfig
from dgym_tui.policies.agent import LLMAgent
from dgym_tui.training.export import rebuild_prompt, to_sft

BIG = "".join(f"def f{i}(x):\n    return x + {i}  # a line that takes some tokens\n"
              for i in range(60))


def view(path: str, call_id: str) -> dict:
    return {"tool_calls": [{"id": call_id, "name": "view", "arguments": {"path": path}}]}


def run_episode(llm_server, make_repo, make_env, fast_pytest, tmp_path, agent: str,
                mode: str, **config):
    repo = make_repo({"big.py": BIG, "cart.py": "def total(items):\n    return sum(items) - 1\n",
                      "test_cart.py": "from cart import total\n\ndef test_total():\n"
                                      "    assert total([1, 2]) == 3\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_cart.py",
                   tools=("listdir", "view", "rewrite", "eval", "pdb", "submit"))
    llm = LLM(LLMConfig(name="stub", model="openai/stub", api_base=llm_server.url, api_key="x",
                        retry_base_delay=0.001, **config))
    policy = LLMAgent(agent, llm, tool_calling=mode)
    if mode == "text":
        llm_server.script([{"content": "Reading.\n```tool_call\n"
                                       + json.dumps({"name": "view", "arguments": {"path": p}})
                                       + "\n```"} for p in ("big.py", "cart.py", "big.py")])
    else:
        llm_server.script([view("big.py", "c1"), view("cart.py", "c2"), view("big.py", "c3")])
    llm_server.script([{"content": "The bug is the - 1."},  # invalid: no call
                       {"content": "Let me fix it.", "tool_calls": [{"id": "c5", "name": "rewrite",
                        "arguments": {"path": "cart.py", "start": 2, "end": 2,
                                      "new_code": "    return sum(items)\n"}}]},
                       {"tool_calls": [{"id": "c6", "name": "submit", "arguments": {}}]}])
    path = tmp_path / f"{agent}-{mode}.jsonl"
    session = Session(env, policy=policy, mode="auto", max_steps=10, trajectory_path=path)
    session.start()
    session.run()
    assert session.done and llm_server.remaining == 0
    return read_trajectory(path), session


@pytest.mark.parametrize("agent, mode", [("debug_agent", "native"), ("rewrite_agent", "text")])
def test_every_step_prompt_is_rebuilt_exactly(llm_server, make_repo, make_env, fast_pytest,
                                              tmp_path, agent, mode):
    # a window that forces trimming once the big file was read twice
    traj, session = run_episode(llm_server, make_repo, make_env, fast_pytest, tmp_path, agent,
                                mode, context_window=4500, max_tokens=200)
    prompt = traj.header["prompt"]
    assert prompt["agent"] == agent and prompt["tool_calling"] == mode
    assert prompt["system"] == llm_server.requests[0]["messages"][0]["content"]
    assert ("pdb" in [t["function"]["name"] for t in prompt["tools"]]) == (agent == "debug_agent")
    assert len(traj.steps) == len(llm_server.requests) == 6
    for step, request in enumerate(llm_server.requests, start=1):
        messages, tools = rebuild_prompt(traj, step)
        assert messages == request["messages"], f"step {step}"
        assert tools == request.get("tools"), f"step {step}"
    assert any(s["prompt"]["trimmed"] for s in traj.steps)  # trimming happened and was rebuilt
    # each message is stored once: the system prompt only in the header
    assert sum(json.dumps(s).count(prompt["system"][:60]) for s in traj.steps) == 0
    with pytest.raises(TrajectoryError, match="no recorded prompt"):
        rebuild_prompt(read_trajectory(traj.path).__class__(
            traj.path, {k: v for k, v in traj.header.items() if k != "prompt"}, traj.steps,
            traj.footer, traj.truncated), 1)


def test_sft_export_is_the_conversation_the_agent_saw(llm_server, make_repo, make_env,
                                                      fast_pytest, tmp_path, capsys):
    traj, _ = run_episode(llm_server, make_repo, make_env, fast_pytest, tmp_path,
                          "rewrite_agent", "native")
    conv = to_sft(traj)
    messages = conv["messages"]
    last_request = llm_server.requests[-1]["messages"]
    # no trimming here: the conversation is the last prompt plus the last reply
    assert [{k: v for k, v in m.items() if k != "weight"} for m in messages[:-1]] == last_request
    assert messages[0]["content"] == traj.header["prompt"]["system"]
    assert "pdb first of all" not in messages[0]["content"]
    assert "pdb" not in [t["function"]["name"] for t in conv["tools"]]
    assert messages[-1]["tool_calls"][0]["function"]["name"] == "submit"
    # the invalid reply and its correction are there as the agent read them
    invalid = {"role": "assistant", "content": "The bug is the - 1.", "weight": 0}
    assert invalid in messages  # context for the correction, not a training target
    assert [m for m in messages if "weight" in m] == [invalid]
    assert any(m["role"] == "user" and m["content"].startswith("Your last reply could not be run")
               for m in messages)
    assert conv["meta"]["agent"] == "rewrite_agent" and conv["meta"]["resolved"] is True
    assert main(["export", str(traj.path), "--format", "sft"]) == 0
    assert json.loads(capsys.readouterr().out) == conv
