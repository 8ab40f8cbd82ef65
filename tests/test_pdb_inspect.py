"""Structured pdb inspection (variables / stack / breakpoints panes): real pdb, real files.

The hidden command must leave no trace: not in the program's globals, not in the
next observation, not as pdb's repeated command."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dgym_tui.core.pdb.inspect import inspect_command, parse_inspection
from dgym_tui.core.types import ToolCall

PROG = """\
class Box:
    def __init__(self):
        self.items = [1, 2, 3]
        self.name = "box"


def total_of(xs, table):
    total = 0
    box = Box()
    for x in xs:
        total += x
    return total


def test_total():
    xs = list(range(100))
    assert total_of(xs, {"a": 1, "b": [1, 2]}) == 4950
"""


@pytest.fixture
def env(make_repo, make_env, fast_pytest):
    repo = make_repo({"test_prog.py": PROG})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_prog.py")
    env.reset()
    return env


def pdb(env, command):
    return env.step(ToolCall("pdb", {"command": command}))


def test_inspect_locals_stack_breakpoints(env):
    tool = env.tools["pdb"]
    assert tool.inspect() is None  # no pdb session yet: nothing is started for it
    pdb(env, "b test_prog.py:11")
    pdb(env, "condition 1 x > 2")
    pdb(env, "c")
    got = tool.inspect()
    assert got is not None
    names = {v.name: v for v in got.variables}
    assert set(names) == {"box", "table", "total", "x", "xs"}
    assert names["x"].repr == "3" and names["total"].repr == "3"
    assert names["xs"].length == 100 and len(names["xs"].children) == 30  # bounded
    assert "..." in names["xs"].repr  # long reprs are elided
    box = {c.name: c.repr for c in names["box"].children}
    assert box == {"items": "[1, 2, 3]", "name": "'box'"}
    table = {c.name: c for c in names["table"].children}
    assert [c.repr for c in table["'b'"].children] == ["1", "2"]  # two levels
    here = got.frame
    assert (here.relative, here.line, here.function) == ("test_prog.py", 11, "total_of")
    assert got.frames[got.selected - 1].function == "test_total"
    [bp] = got.breakpoints
    assert (bp.path, bp.line, bp.condition, bp.hits, bp.enabled) == (
        "test_prog.py", 11, "x > 2", 4, True)

    # another frame's variables without moving pdb
    caller = tool.inspect(frame=got.selected - 1)
    assert caller.frame.function == "test_total"
    assert [v.name for v in caller.variables] == ["xs"]  # not pytest's @py_assert temporaries
    assert caller.current == got.current
    # no trace: globals, the next observation, an empty line's repeat
    seen = pdb(env, "p sorted(k for k in globals() if 'dgym' in k or k == 'A')").observation
    assert "[]" in seen and "dgym-inspect" not in seen
    assert "dgym-inspect" not in pdb(env, "n").observation


def test_parse_rejects_missing_or_broken_replies():
    assert parse_inspection("*** NameError: name 'x' is not defined") is None
    assert parse_inspection("<<dgym-inspect>>{broken<</dgym-inspect>>") is None
    assert len(inspect_command()) < 3000  # a terminal line (4 KB) carries it
    with pytest.raises(ValueError):
        inspect_command(scope="everything")


ASSERTS = """\
def test_asserts():
    x = 1
    assert x == 1
    y = [x]
    assert y == [1], y
    z = 2
"""


def test_inspect_hides_pytest_assert_temporaries(make_repo, make_env, fast_pytest):
    # pytest rewrites the asserts of a test module into code that keeps its
    # intermediate values in locals named ``@py_assert1``, ``@py_format3``, ...
    # (set to None once the assert passed): noise in a variables pane, not program state.
    env = make_env(make_repo({"test_asserts.py": ASSERTS}),
                   entrypoint=f"{fast_pytest} test_asserts.py")
    env.reset()
    pdb(env, "b test_asserts.py:6")
    pdb(env, "c")
    got = env.tools["pdb"].inspect()
    assert got is not None and got.frame.function == "test_asserts"
    assert {v.name for v in got.variables} == {"x", "y"}
    shown = pdb(env, "p sorted(k for k in locals() if k.startswith('@'))").observation
    assert "@py_assert" in shown  # the temporaries are there: the pane hides them


SEEN = """\
import os
MARKS = {marks!r}


class Seen:
    '''Its repr leaves a file behind: proof that something read the frame's values.'''

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        open(os.path.join(MARKS, "seen-" + self.name), "w").close()
        if self.name == "hang":
            while True:
                pass
        return "Seen(" + self.name + ")"


def test_seen():
    a = Seen("a")
    b = Seen("b")
    n = 3
    assert n == 3
"""


def _appears(path: Path, limit: float = 10.0) -> bool:
    """Whether ``path`` exists within ``limit`` seconds (pdb works on its own meanwhile)."""
    deadline = time.monotonic() + limit
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def seen(make_repo, make_env, fast_pytest, tmp_path):
    # the reprs leave their marks outside the working copy (a change there restarts pdb)
    repo = make_repo({"test_seen.py": SEEN.format(marks=str(tmp_path))})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_seen.py")
    env.reset()
    pdb(env, "b test_seen.py:21")
    pdb(env, "c")
    env.marks = tmp_path
    return env


def test_after_a_front_end_inspected_each_stop_asks_pdb_for_its_frame_at_once(seen):
    # A front end reads the current frame after every stop: pdb is asked for it as soon
    # as it stops (before the step is recorded), and the front end's call reads that
    # answer. The proof that pdb already read the values: their reprs ran.
    tool, folder = seen.tools["pdb"], seen.marks
    assert [v.name for v in tool.inspect().variables] == ["a"]
    assert (Path(folder) / "seen-a").exists()
    pdb(seen, "n")  # now b exists: its repr runs although nobody calls inspect()
    assert _appears(Path(folder) / "seen-b")
    assert tool.session.owed  # asked, not read yet
    got = tool.inspect()
    assert got.frame.line == 22 and [v.repr for v in got.variables] == ["Seen(a)", "Seen(b)"]
    assert not tool.session.owed
    # an answer nobody read (the next command came first) stays out of that command's reply
    pdb(seen, "n")
    assert tool.session.owed
    shown = pdb(seen, "p n * 2").observation
    assert "6" in shown and "dgym-inspect" not in shown
    # another frame's variables (not the one asked for ahead) are read fresh
    pdb(seen, "n")
    caller = tool.inspect(frame=tool.inspect().selected - 1)
    assert caller is not None and "test_seen" not in caller.frame.function
    assert pdb(seen, "p n").observation.startswith("3")


def test_an_agent_never_runs_the_inspection(seen):
    # nobody called inspect(): pdb runs only the agent's commands (no repr ran)
    folder = seen.marks
    pdb(seen, "n")
    pdb(seen, "n")
    assert not seen.tools["pdb"].session.owed
    assert not (folder / "seen-a").exists() and not (folder / "seen-b").exists()


def test_an_inspection_asked_ahead_that_hangs_is_interrupted_before_the_next_command(
        seen, monkeypatch):
    from dgym_tui.core.tools import pdb as pdb_tool

    monkeypatch.setattr(pdb_tool, "INSPECT_TIMEOUT", 0.5)
    tool = seen.tools["pdb"]
    tool.inspect()
    pdb(seen, "!hang = __import__('test_seen').Seen('hang')")  # the read-ahead's repr hangs
    assert tool.session.owed
    shown = pdb(seen, "p b.name").observation  # waits 0.5 s, interrupts, then runs
    assert "'b'" in shown and "dgym-inspect" not in shown


def test_later_inspections_run_the_code_the_first_one_kept(seen):
    # The first inspection of a pdb process sends the whole code (~1,600 characters: pdb
    # took several ms to read and compile it) and keeps it compiled in the process's pdb
    # module; the next ones send a short line. A program that deletes or replaces it gets
    # the whole code sent again, and no name lands in the frame.
    from dgym_tui.core.pdb.inspect import CODE_NAME

    tool, folder = seen.tools["pdb"], seen.marks
    session = tool.session
    lines: list[str] = []
    send, post = session.send_many, session.post
    session.send_many = lambda commands, timeout: lines.extend(commands) or send(commands,
                                                                                timeout)
    session.post = lambda command: lines.append(command) or post(command)
    assert [v.name for v in tool.inspect().variables] == ["a"]
    assert len(lines[-1]) > 1000  # the whole code, the first time
    pdb(seen, "n")  # the read-ahead: a short line
    assert len(lines[-1]) < 200 and CODE_NAME in lines[-1] and tool.session.owed
    got = tool.inspect()
    assert got.frame.line == 22 and [v.repr for v in got.variables] == ["Seen(a)", "Seen(b)"]
    assert _appears(Path(folder) / "seen-b")
    shown = pdb(seen, "p sorted(k for k in locals() if k not in ('a', 'b'))").observation
    assert "[]" in shown  # nothing bound in the frame
    pdb(seen, f"!delattr(__import__('pdb'), {CODE_NAME!r})")  # the program's doing
    pdb(seen, "n")
    got = tool.inspect()
    assert got is not None and got.frame.line == 23
    assert [v.name for v in got.variables] == ["a", "b", "n"]
    assert len(lines[-1]) > 1000  # sent whole again
    pdb(seen, f"!setattr(__import__('pdb'), {CODE_NAME!r}, 'print(1)')")  # replaced
    got = tool.inspect()
    assert got is not None and [v.name for v in got.variables] == ["a", "b", "n"]
    assert len(tool._inspect_command()) < 200  # kept again
