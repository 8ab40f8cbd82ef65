"""What makes a small model's replies run: real examples, repeat detection, forgiving
validation, corrections that name what went wrong (issue 27). Real env, real pytest,
the HTTP stub behind the real litellm client."""

from __future__ import annotations

import json

import pytest

from dgym_tui.episode.session import Session
from dgym_tui.llm.client import LLM, LLMConfig
from dgym_tui.policies.agent import LLMAgent

SHOP = ('"""A shop."""\n\nTAX = 0.2\n\n\ndef price(amount):\n    """Price with tax."""\n'
        '    gross = amount * (1 + TAX)\n    return round(gross, 1) + 1\n')
TEST_SHOP = ("from lib.shop import price\n\n\ndef test_price():\n"
             "    assert price(10) == 12\n")


def stub_llm(server) -> LLM:
    return LLM(LLMConfig(name="stub", model="openai/stub", api_base=server.url, api_key="x",
                         retry_base_delay=0.001))


def run_episode(server, env, agent="debug_agent", mode="text", max_steps=10,
                **session) -> Session:
    """Run ``agent`` (a name or spec path) on ``env`` in auto mode against the stub."""
    session = Session(env, policy=LLMAgent(agent, stub_llm(server), tool_calling=mode),
                      mode="auto", max_steps=max_steps, **session)
    session.start()
    session.run()
    return session


@pytest.fixture
def shop_env(make_repo, make_env, fast_pytest):
    repo = make_repo({"lib/__init__.py": "", "lib/shop.py": SHOP, "tests/test_shop.py": TEST_SHOP})
    return make_env(repo, entrypoint=f"{fast_pytest} tests/test_shop.py",
                    tools=("listdir", "view", "grep", "eval", "pdb", "rewrite", "submit"))


@pytest.mark.parametrize("mode", ["native", "text"])
def test_examples_name_the_tasks_own_file_and_a_line_that_holds_code(llm_server, shop_env,
                                                                     mode):
    llm_server.script([{"content": "I will look."},  # no call: the correction follows
                       {"content": "",
                        "tool_calls": [{"name": "submit", "arguments": {}}]}
                       if mode == "native" else
                       {"content": '```tool_call\n{"name": "submit", "arguments": {}}\n```'}])
    run_episode(llm_server, shop_env, mode=mode, max_steps=5)
    first, second = llm_server.requests
    sent = json.dumps(first)
    assert "src/app.py" not in sent and "src/main.py" not in sent and "'src'" not in sent
    # lib/shop.py (not the empty lib/__init__.py), line 8: its first statement of code
    assert "b lib/shop.py:8" in sent
    if mode == "native":
        pdb = next(t for t in first["tools"] if t["function"]["name"] == "pdb")
        assert "'b lib/shop.py:8'" in pdb["function"]["parameters"]["properties"]["command"][
            "description"]
    else:
        assert ('```tool_call\n{"name": "view", "arguments": {"path": "lib/shop.py"}}\n```'
                in first["messages"][0]["content"])
    correction = second["messages"][-1]["content"]
    assert '{"name": "view", "arguments": {"path": "lib/shop.py"}}' in correction
    assert "src/app.py" not in json.dumps(second)


def test_task_examples_without_a_failure_in_the_code_take_the_first_statement(make_repo,
                                                                             make_env,
                                                                             fast_pytest):
    from dgym_tui.episode.examples import task_examples

    repo = make_repo({"b.py": "x = 1\n", "a.py": SHOP, "c.py": "def boom():\n    1 / 0\n",
                      "test_a.py": "def test_a():\n    assert False\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_a.py", tools=("view",))
    initial = env.reset()
    examples = task_examples(env.workspace, initial.eval)
    # a.py is the first source file; its first function's body starts after the docstring
    assert (examples.file, examples.line, examples.function) == ("a.py", 8, "price")
    assert examples.code == "    gross = amount * (1 + TAX)"
    assert examples.test == "test_a.py::test_a" and examples.folder == "."
    # a failing test that enters the code under test names that file and line
    (repo / "test_a.py").write_text("from c import boom\n\ndef test_a():\n    boom()\n")
    initial = env.reset()
    examples = task_examples(env.workspace, initial.eval)
    assert (examples.file, examples.line, examples.function, examples.code) == (
        "c.py", 2, "boom", "    1 / 0")


def text_call(name, arguments, before=""):
    return {"content": f'{before}```tool_call\n{json.dumps({"name": name, "arguments": arguments})}'
                       '\n```'}


def test_the_same_failing_action_three_times_ends_the_episode_stuck(llm_server, shop_env,
                                                                    tmp_path):
    from dgym_tui.episode.trajectory import read_trajectory

    missing = text_call("view", {"path": "src/app.py"})
    llm_server.script([missing, missing, missing, text_call("submit", {})])
    session = run_episode(llm_server, shop_env, trajectory_path=tmp_path / "t.jsonl")
    assert session.reason == "stuck" and len(session.turns) == 3
    assert llm_server.remaining == 1  # the budget was not spent further
    assert all(t.result.error for t in session.turns)
    # one warning, after the second repetition, naming what repeated
    warning = ('This is the same action `view {"path": "src/app.py"}` with the same observation '
               '2 times in a row. Do something different: 3 times in a row ends the episode '
               'as stuck.')
    assert [t.note for t in session.turns] == ["", warning, ""]
    assert llm_server.requests[2]["messages"][-1]["content"].endswith(f"[{warning}]")
    footer = read_trajectory(tmp_path / "t.jsonl").footer
    assert footer["reason"] == "stuck"
    assert footer["detail"] == ('the same action `view {"path": "src/app.py"}` with the same '
                                'observation 3 times in a row')


def test_stuck_repeats_is_configurable_and_a_changed_observation_is_no_repeat(llm_server,
                                                                             shop_env):
    step = text_call("pdb", {"command": "n"})
    llm_server.script([step] * 4 + [text_call("submit", {})])
    session = run_episode(llm_server, shop_env, stuck_repeats=2)
    # pdb `n` moves on: each observation differs, so five steps run to the submit
    assert session.reason == "submitted" and len(session.turns) == 5


def test_setting_the_same_breakpoint_again_is_a_repeat_though_pdb_renumbers_it(llm_server,
                                                                              shop_env):
    again = text_call("pdb", {"command": "b lib/shop.py:8"})
    llm_server.script([text_call("view", {"path": "lib/shop.py"})] + [again] * 4
                      + [text_call("submit", {})])
    session = run_episode(llm_server, shop_env)
    # real pdb: the first call starts it; then "Breakpoint 2 at ... [breakpoint 1 at ...
    # replaced by breakpoint 2]", 3, 4: only the numbers differ, nothing changed
    observations = [t.result.observation for t in session.turns[2:]]
    assert [o.split()[:2] for o in observations] == [["Breakpoint", str(n)] for n in (2, 3, 4)]
    assert session.reason == "stuck" and len(session.turns) == 5
    assert llm_server.remaining == 1
    assert session.turns[3].note.startswith(
        'This is the same action `pdb {"command": "b lib/shop.py:8"}` with the same '
        "observation 2 times in a row.")


@pytest.mark.parametrize("mode", ["drop", "refuse"])
def test_a_copied_schema_key_is_dropped_with_a_note_unless_strict(llm_server, shop_env,
                                                                  tmp_path, mode):
    spec = tmp_path / "agent.yaml"
    spec.write_text(f"name: mine\ntools: [view, eval, submit]\nsystem_prompt: sys\n"
                    f"extra_arguments: {mode}\ntool_calling: text\n")
    llm_server.script([text_call("view", {"path": "lib/shop.py", "type": "string"}),
                       text_call("submit", {})])
    session = run_episode(llm_server, shop_env, agent=str(spec), mode=None, max_steps=5)
    first = session.turns[0]
    result = llm_server.requests[1]["messages"][-1]["content"]
    if mode == "drop":
        assert first.action.arguments == {"path": "lib/shop.py"} and not first.result.error
        assert "return round(gross, 1) + 1" in result
        assert result.endswith("[The argument(s) type are not parameters of view and were "
                               "dropped.]")
    else:
        assert first.result.error and "Additional properties" in first.result.observation


def test_a_reply_with_several_calls_is_refused_when_the_spec_says_so(llm_server, shop_env,
                                                                    tmp_path):
    spec = tmp_path / "agent.yaml"
    spec.write_text("name: mine\ntools: [view, eval, submit]\nsystem_prompt: sys\n"
                    "several_calls: refuse\ntool_calling: text\n")
    two = text_call("eval", {})["content"] + "\n" + text_call("submit", {})["content"]
    llm_server.script([{"content": two}, text_call("submit", {})])
    session = run_episode(llm_server, shop_env, agent=str(spec), mode=None, max_steps=5)
    assert session.turns[0].invalid and "2 tool calls (eval, submit)" in session.turns[0].error


@pytest.mark.parametrize("name, hint", [
    ("test_price", "(that is the name of a test, not a tool: run the tests with eval)"),
    ("veiw", "(did you mean view?)")])
def test_an_unknown_tool_near_a_test_or_a_tool_gets_every_tool_with_a_real_example(
        llm_server, shop_env, name, hint):
    llm_server.script([text_call(name, {}), text_call("submit", {})])
    session = run_episode(llm_server, shop_env, max_steps=5)
    assert session.turns[0].error.startswith(f"unknown tool {name!r} {hint}")
    correction = llm_server.requests[1]["messages"][-1]["content"]
    assert correction.splitlines()[-8:] == [
        "The tools, each with an example that runs on this repository:",
        '- listdir: {"name": "listdir", "arguments": {"path": "lib"}}',
        '- view: {"name": "view", "arguments": {"path": "lib/shop.py"}}',
        '- grep: {"name": "grep", "arguments": {"pattern": "def price", "path": "lib/shop.py"}}',
        '- eval: {"name": "eval", "arguments": {}}',
        '- pdb: {"name": "pdb", "arguments": {"command": "b lib/shop.py:8"}}',
        '- rewrite: {"name": "rewrite", "arguments": {"path": "lib/shop.py", "start": 8, '
        '"end": 8, "new_code": "    gross = amount * (1 + TAX)"}}',
        '- submit: {"name": "submit", "arguments": {}}']


@pytest.mark.parametrize("targets", ["clean", "valid"])
def test_sft_export_keeps_every_message_of_a_stuck_episode(llm_server, shop_env, tmp_path,
                                                           targets):
    from dgym_tui.training.export import export

    same = {"content": "I think the test is wrong."}
    llm_server.script([text_call("view", {"path": "lib/shop.py"}),
                       text_call("view", {"path": "src/app.py"}),  # runs, a tool error
                       same, same, same])
    session = run_episode(llm_server, shop_env, trajectory_path=tmp_path / "t.jsonl")
    assert session.reason == "stuck" and len(session.turns) == 5
    text, _ = export([tmp_path / "t.jsonl"], "sft", targets=targets)
    messages = json.loads(text)["messages"]
    # what the model saw at its last step, repeated turns included, then its last reply
    assert [{k: v for k, v in m.items() if k != "weight"} for m in messages[:-1]] == \
        llm_server.requests[-1]["messages"]
    replies = [m for m in messages if m["role"] == "assistant"]
    assert len(replies) == 5 and [m["content"] for m in replies[2:]] == [same["content"]] * 3
    weights = [m.get("weight", 1) for m in replies]
    assert weights == ([1, 0, 0, 0, 0] if targets == "clean" else [1, 1, 0, 0, 0])
