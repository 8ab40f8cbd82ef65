"""The pdb tool and PdbSession against real pdb processes on small real repositories."""

from __future__ import annotations

import pytest

import dgym_tui.core.tools.pdb  # noqa: F401  registers the pdb tool
from dgym_tui.core.pdb.session import PdbSession, PdbStartError, last_frame
from dgym_tui.core.terminals.local import LocalTerminal
from dgym_tui.core.tools.base import ToolError
from dgym_tui.core.tools.pdb import debug_command
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

TOOLS = ("view", "rewrite", "pdb")


def pdb(env, command):
    return env.step({"name": "pdb", "arguments": {"command": command}})


@pytest.fixture
def prog_env(make_repo, make_env, terminal_kind):
    env = make_env(make_repo({"prog.py": PROG, ".debugignore": "secret.py\n",
                              "secret.py": "s = 1\n"}),
                   entrypoint="python prog.py", tools=TOOLS, pdb_timeout=5)
    env.reset()
    return env


# -- the debug entrypoint ------------------------------------------------
@pytest.mark.parametrize("entrypoint, expected", [
    ("python -m pytest -q tests/", "python -m pdb -m pytest -s -p no:cacheprovider -q tests/"),
    ("pytest test_a.py", "python -m pdb -m pytest -s -p no:cacheprovider test_a.py"),
    ("python -m pytest -q -s -p no:cacheprovider t.py",
     "python -m pdb -m pytest -q -s -p no:cacheprovider t.py"),
    ("python3 prog.py --n 3", "python3 -m pdb prog.py --n 3"),
    ("PYTHONPATH=src python -X dev -m mymod", "PYTHONPATH=src python -X dev -m pdb -m mymod"),
])
def test_debug_command_is_derived_from_the_entrypoint(entrypoint, expected):
    assert debug_command(entrypoint) == expected


@pytest.mark.parametrize("entrypoint", ["make test", "python -c 'print(1)'", "python"])
def test_debug_command_refuses_what_it_cannot_derive(entrypoint):
    with pytest.raises(ToolError, match="debug_entrypoint"):
        debug_command(entrypoint)


# -- PdbSession directly ---------------------------------------------------
def test_session_batches_commands_and_bounds_output(make_repo):
    root = make_repo({"prog.py": PROG, "loud.py": "for i in range(20000):\n    print(i)\n"})
    with LocalTerminal() as term:
        term.start(str(root))
        session = PdbSession(term, "python -m pdb prog.py")
        first = session.start(10)
        assert last_frame(first.output).line == 1
        replies = session.send_many(["b 2", "b 3, x > 1", "c", "p x"], 10)
        assert [r.ok for r in replies] == [True] * 4
        assert replies[1].output.startswith("Breakpoint 2 at ")
        assert replies[3].output.strip() == "0"
        loud = PdbSession(term, "python -m pdb loud.py", max_output=2000)
        loud.start(10)
        reply = loud.send("c", 20)
        assert reply.ok and reply.truncated_bytes > 50000
        assert "output truncated" in reply.output and "19999" in reply.output
        loud.close()
        session.close()
        assert not session.alive


def test_session_start_timeout_kills_the_process(make_repo):
    with LocalTerminal() as term:
        term.start(str(make_repo({"x.py": "x = 1\n"})))
        session = PdbSession(term, "python -c 'import time; time.sleep(60)'")
        with pytest.raises(PdbStartError) as info:
            session.start(0.5)
        assert info.value.timed_out and not session.alive


# -- the tool, on both terminals -------------------------------------------
def test_break_continue_print_step_and_frame(prog_env):
    env = prog_env
    r = pdb(env, "b prog.py:2")
    assert "[pdb session started" in r.observation
    assert "Breakpoint 1 at prog.py:2" in r.observation  # paths relative to the repo root
    assert r.frame == ("prog.py", 1) and r.breakpoints == [("prog.py", 2)]
    r = pdb(env, "c")
    assert "> prog.py(2)f()" in r.observation and r.frame == ("prog.py", 2)
    assert pdb(env, "p x").observation.strip() == "0"
    r = pdb(env, "n")
    assert r.frame == ("prog.py", 3)
    assert pdb(env, "p y").observation.strip() == "0"
    r = pdb(env, "up")
    assert r.frame == ("prog.py", 8)
    r = pdb(env, "p i")  # no frame line in the reply: the frame stays
    assert r.observation.strip() == "0" and r.frame == ("prog.py", 8)


def test_condition_survives_restart_and_program_end(prog_env):
    env = prog_env
    pdb(env, "b prog.py:3, x > 1")
    r = pdb(env, "restart")
    assert "[pdb session restarted; 1 breakpoint re-issued]" in r.observation
    assert r.conditions == {"prog.py:3": "x > 1"}
    r = pdb(env, "c")
    assert r.frame == ("prog.py", 3)
    assert pdb(env, "p x").observation.strip() == "2"  # the condition held in the new process
    pdb(env, "c")  # x == 3
    r = pdb(env, "c")  # the program ends
    assert "total 12" in r.observation
    assert "[pdb session restarted: the program finished; 1 breakpoint re-issued]" in \
        r.observation
    assert r.frame == ("prog.py", 1)
    assert "stop only if x > 1" in pdb(env, "b").observation


def test_new_breakpoint_on_a_line_replaces_the_old_one_in_pdb_too(prog_env):
    """The store keeps one breakpoint per line; pdb must not keep the older one active,
    or the unconditional breakpoint would still stop where the condition fails."""
    env = prog_env
    pdb(env, "b prog.py:3")
    r = pdb(env, "b prog.py:3, x > 1")
    assert "[breakpoint 1 at prog.py:3 replaced by breakpoint 2]" in r.observation
    assert r.breakpoints == [("prog.py", 3)] and r.conditions == {"prog.py:3": "x > 1"}
    pdb(env, "c")
    assert pdb(env, "p x").observation.strip() == "2"  # x == 0 and 1 did not stop


def test_breakpoints_follow_a_rewrite_and_an_outside_write(prog_env):
    env = prog_env
    pdb(env, "b prog.py:2, x == 3")
    r = env.step({"name": "rewrite", "arguments": {"path": "prog.py", "start": 1, "end": 0,
                                                   "new_code": "import os\nimport sys\n"}})
    assert not r.error and r.breakpoints == [("prog.py", 4)]
    r = pdb(env, "c")
    assert "restarted: the files changed since it started" in r.observation
    assert r.frame == ("prog.py", 4) and pdb(env, "p x").observation.strip() == "3"
    # a write that no tool made (an editor, another process)
    path = env.workspace.root / "prog.py"
    path.write_text("# a comment\n" + path.read_text())
    r = pdb(env, "b")
    assert r.breakpoints == [("prog.py", 5)] and r.conditions == {"prog.py:5": "x == 3"}
    assert "breakpoints moved: prog.py:4 -> 5" in r.observation
    assert "restarted" in r.observation and "prog.py:5" in r.observation


def test_endless_loop_times_out_and_env_stays_usable(make_repo, make_env, terminal_kind):
    root = make_repo({"spin.py": "n = 0\nwhile True:\n    n += 1\n"})
    env = make_env(root, entrypoint="python spin.py", tools=TOOLS, pdb_timeout=2,
                   eval_timeout=2)
    env.reset()
    pdb(env, "b spin.py:1")
    r = pdb(env, "c")
    assert "[timeout: `c` did not return to the (Pdb) prompt within 2 s" in r.observation
    assert "It was at spin.py:" in r.observation  # Ctrl-C showed where it looped
    assert "[pdb session restarted; 1 breakpoint re-issued]" in r.observation
    assert r.frame == ("spin.py", 1)
    r = pdb(env, "p 6 * 7")
    assert r.observation.strip() == "42" and not r.error
    assert not env.step({"name": "view", "arguments": {"path": "spin.py"}}).error


def test_endless_loop_at_import_time(make_repo, make_env):
    root = make_repo({"main.py": "import hang\nprint('never')\n",
                      "hang.py": "while True:\n    pass\n"})
    env = make_env(root, entrypoint="python main.py", tools=TOOLS, pdb_timeout=2,
                   eval_timeout=2)
    env.reset()
    r = pdb(env, "n")  # runs the import
    assert "[timeout: `n` did not return" in r.observation
    for _ in range(2):  # later steps keep working
        r = pdb(env, "p 1 + 1")
        assert r.observation.strip() == "2" and r.frame == ("main.py", 1)


def test_session_start_timeout_is_reported_and_retried(make_repo, make_env):
    root = make_repo({"main.py": "x = 1\n"})
    env = make_env(root, entrypoint="python main.py", tools=TOOLS, pdb_timeout=1,
                   debug_entrypoint="python -c 'import time; time.sleep(60)'")
    env.reset()
    for _ in range(2):
        r = pdb(env, "p x")
        assert "[pdb could not start" in r.observation
        assert "within 1 s" in r.observation and "The next pdb command tries again" in \
            r.observation
    assert not env.step({"name": "view", "arguments": {"path": "main.py"}}).error


def test_pytest_entrypoint_frame_outside_repo_is_none(make_repo, make_env, terminal_kind,
                                                      fast_pytest):
    root = make_repo({"m.py": "def inc(v):\n    return v + 2\n",
                      "test_m.py": "from m import inc\n\ndef test_inc():\n"
                                   "    assert inc(1) == 2\n"})
    env = make_env(root, entrypoint=f"{fast_pytest} test_m.py", tools=TOOLS, pdb_timeout=20)
    env.reset()
    r = pdb(env, "b 2")
    assert r.error and "give one: b path/to/file.py:LINE" in r.observation
    assert "pytest" in r.observation or r.frame is None
    assert pdb(env, "p 1").frame is None  # stopped in pytest's own code
    pdb(env, "b m.py:2")
    r = pdb(env, "c")
    assert r.frame == ("m.py", 2) and pdb(env, "p v").observation.strip() == "1"
    r = pdb(env, "c")
    assert "1 failed" in r.observation
    assert "restarted: the program exited via sys.exit()" in r.observation
    assert r.frame is None and r.breakpoints == [("m.py", 2)]


def test_frame_after_pytest_progress_dots(make_repo, make_env, fast_pytest):
    """pytest prints a passed test's dot on the line where pdb then prints the frame:
    "..> m.py(2)inc()" must still give the frame."""
    assert last_frame(".F> /w/m.py(2)inc()\n-> return v").line == 2
    root = make_repo({"m.py": "def inc(v):\n    return v + 2\n",
                      "test_m.py": "from m import inc\n\ndef test_a():\n    assert True\n\n"
                                   "def test_inc():\n    assert inc(1) == 2\n"})
    env = make_env(root, entrypoint=f"{fast_pytest} test_m.py", tools=TOOLS, pdb_timeout=20)
    env.reset()
    pdb(env, "b m.py:2")
    r = pdb(env, "c")
    assert r.frame == ("m.py", 2), r.observation


def test_refusals_empty_and_garbage(prog_env):
    env = prog_env
    r = pdb(env, "")
    assert r.error and "empty pdb command" in r.observation
    r = pdb(env, "   ")
    assert r.error
    r = pdb(env, "garbage_name")
    assert not r.error and "NameError" in r.observation
    r = pdb(env, "b ../outside.py:1")
    assert r.error and "outside" in r.observation
    r = pdb(env, "b secret.py:1")
    assert r.error and "hidden" in r.observation
    r = pdb(env, "b /etc/passwd:1")
    assert r.error and "outside the repository" in r.observation
    r = pdb(env, "commands 1")
    assert r.error and "conditional breakpoint" in r.observation
    pdb(env, "!import json")
    r = pdb(env, "b json.dumps")  # resolves outside the repository: cleared again
    assert "removed: only files of the repository" in r.observation
    assert r.breakpoints == []
    assert pdb(env, "b").observation == "[pdb printed nothing]"


def test_clear_disable_enable_and_tbreak_update_the_store(prog_env):
    env = prog_env
    pdb(env, "b prog.py:2")
    pdb(env, "b prog.py:3")
    r = pdb(env, "tbreak prog.py:8")
    assert r.breakpoints == [("prog.py", 2), ("prog.py", 3), ("prog.py", 8)]
    r = pdb(env, "disable 2")
    assert not env.breakpoints.get("prog.py", 3).enabled
    r = pdb(env, "c")  # the temporary breakpoint is hit and deleted
    assert r.frame == ("prog.py", 8) and ("prog.py", 8) not in r.breakpoints
    r = pdb(env, "restart")  # the disabled breakpoint stays disabled in the new process
    assert "2 breakpoints re-issued" in r.observation
    assert not env.breakpoints.get("prog.py", 3).enabled
    r = pdb(env, "cl prog.py:2")
    assert r.breakpoints == [("prog.py", 3)]
    pdb(env, "enable 2")
    assert env.breakpoints.get("prog.py", 3).enabled
    r = pdb(env, "condition 2 x > 2")
    assert r.conditions == {"prog.py:3": "x > 2"}
    r = pdb(env, "condition 2")
    assert r.conditions == {} and "unconditional" in r.observation
    r = pdb(env, "cl")  # asks "Clear all breaks?"; the tool answers yes
    assert "Clear all breaks? y\nDeleted breakpoint 2 at prog.py:3" in r.observation
    assert r.breakpoints == []


def test_quit_close_and_generation_restart(prog_env):
    env = prog_env
    pdb(env, "n")
    session = env.tools["pdb"].session
    assert session.alive
    r = pdb(env, "q")
    assert "[pdb session ended" in r.observation and r.frame is None and not session.alive
    r = pdb(env, "n")
    assert "[pdb session started]" in r.observation and r.frame == ("prog.py", 6)
    env.generation += 1  # what env.step does after any file changed
    r = pdb(env, "p 2")
    assert "restarted: the files changed" in r.observation and r.frame == ("prog.py", 1)
    session = env.tools["pdb"].session
    env.tools["pdb"].close()
    assert not session.alive and env.tools["pdb"].session is None


def test_uncaught_exception_enters_post_mortem_then_restarts(make_repo, make_env):
    root = make_repo({"boom.py": "def g(d):\n    return d['missing']\n\ng({})\n"})
    env = make_env(root, entrypoint="python boom.py", tools=TOOLS, pdb_timeout=5)
    env.reset()
    r = pdb(env, "c")
    assert "KeyError" in r.observation and "[post-mortem:" in r.observation
    assert r.frame == ("boom.py", 2)
    assert pdb(env, "p d").observation.strip() == "{}"
    r = pdb(env, "c")
    assert "restarted: the post-mortem session ended" in r.observation
    assert r.frame == ("boom.py", 1)


# -- auto_list (issue 29, part 5): the lines around the frame after a stop --------------
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
