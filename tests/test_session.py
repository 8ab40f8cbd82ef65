"""The turn loop on a real RepoEnv (local terminal): every decision a person can
take, the auto loop, budgets, pauses, and one end-to-end episode of the real
LLMAgent against the HTTP LLM stub, replayed without divergence."""

from __future__ import annotations

import threading

import pytest
from scripted import ENTRYPOINT, FIX, TOOLS, ScriptedPolicy, write_repo

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.events import (
    EpisodeEnded,
    EpisodeStarted,
    EpisodeStarting,
    ModeChanged,
    TurnRecorded,
)
from dgym_tui.episode.session import Session, SessionError
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.launch.replay import replay

VIEW = ToolCall("view", {"path": "calc.py"})
EVAL = ToolCall("eval", {})
SUBMIT = ToolCall("submit", {})
WRONG_FIX = ToolCall("rewrite", {"path": "calc.py", "start": 2, "end": 2,
                                 "new_code": "    return a * b"})


@pytest.fixture
def env(tmp_path):
    repo = write_repo(tmp_path / "repo")
    environment = RepoEnv(repo, entrypoint=ENTRYPOINT, tools=TOOLS)
    yield environment
    environment.close()


def test_approve_edit_reject_take_over_are_recorded(open_repo, tmp_path):
    traj_path = tmp_path / "t.jsonl"
    policy = ScriptedPolicy([VIEW, WRONG_FIX, EVAL])
    session = open_repo(write_repo(tmp_path / "repo"), policy, "approve", max_steps=10,
                        trajectory=traj_path, name="calc", entrypoint=ENTRYPOINT, tools=TOOLS)
    events = []
    session.subscribe(lambda e: events.append(type(e)))
    initial = session.start()
    assert initial.score == 1 and initial.max_score == 2
    assert policy.info.initial_observation == initial.observation
    assert [s["function"]["name"] for s in policy.info.tool_schemas] == list(TOOLS)

    t1 = session.approve(session.propose())
    assert (t1.actor, t1.decision, t1.action.name) == ("agent", "approved", "view")
    assert "return a - b" in t1.result.observation

    proposal = session.propose()
    assert proposal.action.arguments["new_code"] == "    return a * b"
    t2 = session.edit(proposal, FIX)
    assert (t2.actor, t2.decision) == ("human", "edited")
    assert t2.proposed.arguments["new_code"] == "    return a * b"
    assert t2.action.arguments["new_code"] == "    return a + b"

    t3 = session.reject(session.propose(), "run the tests later")
    assert (t3.decision, t3.action, t3.result) == ("rejected", None, None)

    session.take_over()
    assert session.mode == "human" and session.pending is None
    t4 = session.act(EVAL)
    assert (t4.actor, t4.decision, t4.proposed) == ("human", "manual", None)
    assert t4.result.resolved
    t5 = session.act(SUBMIT)
    assert t5.result.done and session.done and session.reason == "submitted"
    with pytest.raises(SessionError):
        session.act(EVAL)

    # every proposal was made knowing all earlier turns
    assert [t.decision for t in policy.seen[2]] == ["approved", "edited"]

    traj = read_trajectory(traj_path)
    assert traj.finished and not traj.truncated
    assert [s["decision"] for s in traj.steps] == ["approved", "edited", "rejected", "manual",
                                                   "manual"]
    assert [s["actor"] for s in traj.steps] == ["agent", "human", "agent", "human", "human"]
    assert traj.steps[1]["proposed"]["arguments"]["new_code"] == "    return a * b"
    assert traj.steps[1]["action"]["arguments"]["new_code"] == "    return a + b"
    assert traj.steps[2]["note"] == "run the tests later" and traj.steps[2]["result"] is None
    assert traj.footer["resolved"] is True and traj.footer["reason"] == "submitted"
    assert "+    return a + b" in traj.footer["patch"]
    assert traj.header["task"]["name"] == "calc"
    assert traj.header["task"]["entrypoint"] == ENTRYPOINT
    assert [t["function"]["name"] for t in traj.header["tools"]] == list(TOOLS)
    assert traj.footer["usage"]["prompt_tokens"] == 300  # three proposals of 100
    assert events[:2] == [EpisodeStarting, EpisodeStarted] and events[-1] is EpisodeEnded
    assert events.count(TurnRecorded) == 5 and ModeChanged in events
    # the trajectory's turns are the session's turns
    assert [t.to_record() for t in traj.turns()] == [t.to_record() for t in session.turns]


def test_auto_run_records_invalid_proposal_and_tells_the_agent(env, tmp_path):
    policy = ScriptedPolicy([None, FIX, SUBMIT])
    session = Session(env, policy, mode="auto", trajectory_path=tmp_path / "t.jsonl")
    session.start()
    session.run()
    assert session.done and session.reason == "submitted"
    first = session.turns[0]
    assert first.invalid and first.decision == "rejected" and first.actor == "agent"
    assert first.error == "no tool call found in the reply" and first.note == ""
    # the agent saw the invalid turn (with its error) when it proposed again
    assert policy.seen[1][0].error == "no tool call found in the reply"
    assert [t.decision for t in session.turns] == ["rejected", "auto", "auto"]
    traj = read_trajectory(tmp_path / "t.jsonl")
    assert traj.steps[0]["proposed"] is None and traj.steps[0]["reasoning"] == "hmm"
    assert traj.steps[0]["error"] == "no tool call found in the reply"
    assert traj.footer["resolved"] is True


def test_step_budget_ends_the_episode(env):
    session = Session(env, ScriptedPolicy([VIEW] * 5), mode="auto", max_steps=3)
    session.start()
    assert session.steps_left == 3
    session.run()
    assert session.done and session.reason == "max_steps"
    assert len(session.turns) == 3 and session.steps_left == 0
    assert session.footer["resolved"] is False and session.footer["steps"] == 3


def test_stop_on_resolved(env):
    session = Session(env, ScriptedPolicy([FIX, EVAL, VIEW]), mode="auto",
                      stop_on_resolved=True)
    session.start()
    session.run()
    # the rewrite does not run the tests; the eval that follows reports resolved
    assert session.reason == "resolved" and len(session.turns) == 2


def test_pause_and_mode_switch_stop_the_auto_loop(env):
    policy = ScriptedPolicy([VIEW, VIEW, VIEW, FIX, SUBMIT])
    # three identical views in a row would end the episode as stuck at the default 3
    session = Session(env, policy, mode="auto", stuck_repeats=4)
    session.start()

    def pause_after_two(event):
        if isinstance(event, TurnRecorded) and event.turn.index == 2:
            session.request_pause()

    session.subscribe(pause_after_two)
    session.run()
    assert len(session.turns) == 2 and not session.done and session.pause_requested

    def switch_after_three(event):
        if isinstance(event, TurnRecorded) and event.turn.index == 3:
            session.mode = "approve"

    session.subscribe(switch_after_three)
    session.run()  # clears the pause flag
    assert len(session.turns) == 3 and session.mode == "approve" and not session.done
    with pytest.raises(SessionError):
        session.run()  # not in auto mode
    session.approve(session.propose())
    assert session.turns[-1].decision == "approved"
    session.mode = "auto"
    session.run()
    assert session.done and session.turns[-1].decision == "auto"


def test_loop_runs_in_a_worker_thread(env):
    """The loop has no UI and can be driven from another thread; events arrive there."""
    session = Session(env, ScriptedPolicy([FIX, SUBMIT]), mode="auto")
    threads = set()
    session.subscribe(lambda e: threads.add(threading.current_thread().name))
    worker = threading.Thread(target=lambda: (session.start(), session.run()), name="worker")
    worker.start()
    worker.join(120)
    assert session.done and session.footer["resolved"]
    assert threads == {"worker"}


def test_modes_need_a_policy(env):
    with pytest.raises(ValueError, match="needs a policy"):
        Session(env, None, mode="auto")
    session = Session(env, None)
    with pytest.raises(ValueError, match="unknown mode"):
        session.mode = "fast"
    with pytest.raises(SessionError, match="start"):
        session.act(VIEW)
    session.start()
    with pytest.raises(SessionError, match="no policy"):
        session.propose()
    session.finish("quit")
    session.finish("again")  # idempotent
    assert session.reason == "quit"


def test_real_llm_agent_fixes_the_task_and_replays(tmp_path, llm_server, open_repo):
    """End to end: LLMAgent -> litellm -> HTTP stub; the episode is replayed with no divergence."""
    from dgym_tui.llm.client import LLMConfig
    from dgym_tui.policies.agent import LLMAgent

    llm_server.script([
        {"content": "Let me look at the code.",
         "tool_calls": [{"name": "view", "arguments": {"path": "calc.py"}}]},
        {"content": "add subtracts; fix it.",
         "tool_calls": [{"name": "rewrite", "arguments": FIX.arguments}]},
        {"content": "no call here"},  # an invalid reply: the agent is told and goes on
        {"tool_calls": [{"name": "eval", "arguments": {}}],
         "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
        {"tool_calls": [{"name": "submit", "arguments": "{}"}]},
    ])
    config = LLMConfig.from_dict("stub", {"model": "openai/stub", "api_base": llm_server.url,
                                          "api_key": "x", "tool_calling": "native"})
    agent = LLMAgent("debug_agent", config)
    traj_path = tmp_path / "agent.jsonl"
    session = open_repo(write_repo(tmp_path / "repo"), agent, "auto", max_steps=10,
                        trajectory=traj_path, entrypoint=ENTRYPOINT, tools=TOOLS)
    session.start()
    session.run()
    session.env.close()
    assert session.reason == "submitted" and session.footer["resolved"]
    assert [t.decision for t in session.turns] == ["auto", "auto", "rejected", "auto", "auto"]
    assert session.turns[2].invalid
    # the HTTP requests really carried the history: the 4th request tells about the bad reply
    fourth = llm_server.requests[3]["messages"]
    assert any("could not be run" in (m.get("content") or "") for m in fourth)
    assert session.usage.prompt_tokens > 0

    report = replay(traj_path)
    assert report.steps == 5
    assert report.ok, "\n".join(d.diff() for d in report.divergences)
    assert report.resolved


def test_front_end_facade_reads_and_applies_the_working_copy(tmp_path):
    """snapshot / read_file / apply_to_source / tool_specs: what the app reads and does
    besides actions, without reaching into the environment."""
    repo = write_repo(tmp_path / "repo")
    (repo / ".debugreadonly").write_text("test_calc.py\n")
    env = RepoEnv(repo, entrypoint=ENTRYPOINT, tools=TOOLS)
    session = Session(env)
    session.start()
    before = session.snapshot()
    assert before.files == sorted(before.files) and "calc.py" in before.files
    assert before.readonly == {"test_calc.py"} and before.patch == ""
    assert list(session.tool_specs()) == list(TOOLS)
    assert session.tool_specs()["view"]["required"] == ["path"]
    session.act(FIX)
    after = session.snapshot(with_patch=False)
    assert after.generation != before.generation and after.patch is None
    assert "return a + b" in session.snapshot().patch
    assert "return a + b" in session.read_file("calc.py")
    assert session.read_file("nope.py") is None and session.read_file("../etc/passwd") is None
    assert "return a - b" in (repo / "calc.py").read_text()  # untouched until applied
    assert session.apply_to_source() == ["calc.py"]
    assert "return a + b" in (repo / "calc.py").read_text()
    env.close()
    assert session.snapshot() is None and session.generation is None
    assert session.read_file("calc.py") is None
    with pytest.raises(SessionError, match="closed"):
        session.apply_to_source()


def test_the_start_result_is_announced_before_the_first_step_is_prepared(env, tmp_path):
    # a front end shows the initial eval's result when the session announces it; the
    # first step's preparations (the tools' argument checks: jsonschema's import, the
    # pdb tool's preloaded spare) come after it, not between the eval and the result
    session = Session(env, None, "human", max_steps=5, trajectory_path=tmp_path / "t.jsonl")
    ready_when_announced = []
    session.subscribe(lambda e: ready_when_announced.append("_validators" in vars(env))
                      if isinstance(e, EpisodeStarted) else None)
    initial = session.start()
    assert ready_when_announced == [False]
    assert "_validators" in vars(env)  # prepared before start returned
    assert session.act(EVAL).result.score == initial.score
    session.close()
