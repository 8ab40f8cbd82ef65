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
    session = Session(shop_env, policy=LLMAgent("debug_agent", stub_llm(llm_server),
                                                tool_calling=mode), mode="auto", max_steps=5)
    session.start()
    session.run()
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
