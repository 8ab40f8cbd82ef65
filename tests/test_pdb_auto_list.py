"""pdb's auto_list option (issue 29, part 5): the lines around the frame after a stop."""

from __future__ import annotations

import pytest

import dgym_tui.core.tools  # noqa: F401  registers the built-in tools
from dgym_tui.policies.agent import AgentSpecError, load_agent_spec

PROG = """\
def f(x):
    y = x * 2
    return y


total = 0
for i in range(4):
    total += f(i)
print("total", total)
"""


def pdb(env, command):
    return env.step({"name": "pdb", "arguments": {"command": command}})


def _env(make_repo, make_env, **options):
    env = make_env(make_repo({"prog.py": PROG}), entrypoint="python prog.py",
                   tools=("view", "pdb"), pdb_timeout=5, **options)
    env.reset()
    return env


def test_auto_list_shows_the_lines_around_each_stop(make_repo, make_env):
    env = _env(make_repo, make_env, tool_options={"pdb": {"auto_list": 1}})
    r = pdb(env, "b prog.py:2")
    assert "[lines around prog.py:1]" in r.observation  # the session started: a stop at line 1
    r = pdb(env, "c")
    assert r.observation.endswith("[lines around prog.py:2]\n"
                                  "1     def f(x):\n"
                                  "2 B->     y = x * 2\n"
                                  "3         return y")
    r = pdb(env, "n")
    assert r.observation.endswith("[lines around prog.py:3]\n"
                                  "2 B       y = x * 2\n"
                                  "3  ->     return y\n"
                                  "4")
    for command in ("p y", "l", "ll"):  # no stop, or a listing already: nothing added
        assert "[lines around" not in pdb(env, command).observation, command


def test_auto_list_is_off_by_default_and_checked(make_repo, make_env):
    env = _env(make_repo, make_env)
    pdb(env, "b prog.py:2")
    assert "[lines around" not in pdb(env, "c").observation
    with pytest.raises(ValueError, match="tool 'pdb' has no option auto_lst; its options: auto_list"):
        _env(make_repo, make_env, tool_options={"pdb": {"auto_lst": 3}})
    with pytest.raises(ValueError, match="tool_options name tool.s. not offered: bash"):
        _env(make_repo, make_env, tool_options={"bash": {"timeout": 3}})


def test_agent_specs_set_tool_options(tmp_path):
    assert load_agent_spec("froggy_agent").tool_options == {"pdb": {"auto_list": 5}}
    assert load_agent_spec("debug_agent").tool_options == {}
    from dgym_tui.runs.runner import agent_env_options

    assert agent_env_options("agent", "froggy_agent") == {
        "tools": ["bash", "view", "rewrite", "pdb", "submit"],
        "tool_options": {"pdb": {"auto_list": 5}}}
    assert agent_env_options("solution", "froggy_agent") == {}
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\ntools: [view]\nsystem_prompt: x\ntool_options: {pdb: {auto_list: 3}}\n")
    with pytest.raises(AgentSpecError, match="tool_options must map tools of 'tools'"):
        load_agent_spec(bad)
