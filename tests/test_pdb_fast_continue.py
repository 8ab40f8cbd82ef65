"""The session's cheap ``continue`` (core/pdb/fastcontinue.py) against real pdb processes.

Every sequence of commands runs four times per terminal (local, bwrap, docker marked
``docker``): with the cheap ``continue`` and with bdb's plain trace
(``session.FAST_CONTINUE``), each once from a cold start and once from a preloaded spare;
pdb's replies must be the same (memory addresses blanked). Two more tests show the cheap path is the one running (the global trace
function's name, the count of bdb's Python-level ``dispatch_call``), so the comparisons
cannot pass with it silently off.
"""

from __future__ import annotations

import logging
import os
import re
import sys

import pexpect
import pytest

from dgym_tui.core.pdb import fastcontinue
from dgym_tui.core.pdb import session as pdb_session
from dgym_tui.core.pdb.session import PdbSession, _prompt_setter
from dgym_tui.core.terminals.bwrap import BwrapTerminal
from dgym_tui.core.terminals.docker import DockerTerminal
from dgym_tui.core.terminals.local import LocalTerminal

FILES = {
    "main.py": """\
import helper


def gen(n):
    for i in range(n):
        yield helper.double(i)


def run():
    total = 0
    for v in gen(3):
        total += v
    import late
    total += late.triple(total)
    print("total", total)
    return total


if __name__ == "__main__":
    run()
    print("done")
""",
    "helper.py": """\
def double(x):
    y = x * 2
    return y


def unused():
    return 0
""",
    "late.py": """\
def triple(x):
    z = x * 3
    return z
""",
    "boom.py": """\
import helper


def f():
    helper.double(1)
    raise ValueError("boom")


f()
""",
    # many calls in a file without breakpoints: what the cheap path skips
    "busy.py": """\
import helper


def step(i):
    return i + 1


def spin(n):
    total = 0
    for i in range(n):
        total = step(total)
    return total


spin(3000)
helper.double(5)
""",
    # collected by pytest: its assertion rewriter compiles and execs the module
    "test_lazy.py": """\
import helper


def test_one():
    a = helper.double(2)
    assert a == 4
""",
    # a file run by runpy, and code of a file compiled and called as a function
    "runner.py": """\
import runpy

runpy.run_path("tool.py", run_name="tool")
print("ran")
""",
    "tool.py": """\
n = 3
n = n + 1
print("tool", n)
""",
    # gen.py's code made without compiling gen.py (another name, renamed in marshal's
    # bytes), then called as a function: no ``exec`` and no ``compile`` of gen.py
    "genrun.py": """\
import marshal
import types

with open("gen.py") as f:
    code = compile(f.read(), "xyz.py", "exec")
code = marshal.loads(marshal.dumps(code).replace(b"xyz.py", b"gen.py"))
fn = types.FunctionType(code.co_consts[0], {})
print("gen", fn(4))
""",
    "gen.py": """\
def g(v):
    w = v + 1
    return w
""",
    # what code imported while pdb continues sees as the trace function
    "probe.py": """\
import sys

T = getattr(sys.gettrace(), "__name__", None)
""",
    # a thread imports a module with a breakpoint; the debugged thread then calls it
    "threaded.py": """\
import importlib
import threading

t = threading.Thread(target=importlib.import_module, args=("late",))
t.start()
t.join()
import helper
import late

print(late.triple(2), helper.double(1))
""",
    # the program turns the trace off itself before a breakpoint's file runs
    "untrace.py": """\
import sys

sys.settrace(None)
import late

print(late.triple(2))
""",
    # reads the trace function as pytest-timeout does to tell a debugger is on (a stand-in
    # of that name: the check goes by the module's name)
    "pytest_timeout.py": """\
import sys


def debugging():
    return sys.gettrace() is not None
""",
    "timed.py": """\
import pytest_timeout

debugging = pytest_timeout.debugging()
import late

print("debugging", debugging, late.triple(1))
""",
    # modules with breakpoints that import others before they define anything
    "shaded.py": """\
import shaded2
import inner


def f(v):
    w = v * 2
    return w
""",
    "shaded2.py": """\
import inner2


def k(v):
    u = v - 1
    return u
""",
    "inner.py": """\
import sys

T = getattr(sys.gettrace(), "__name__", None)
""",
    "inner2.py": """\
import sys

T = getattr(sys.gettrace(), "__name__", None)
""",
    "shadedrun.py": """\
import shaded
import shaded2

print(shaded.f(3), shaded2.k(3))
""",
    # the module a breakpoint's module imports next is imported meanwhile by another one
    "early.py": """\
import pre
import post


def f(v):
    w = v + 2
    return w
""",
    "pre.py": """\
import importlib

importlib.import_module("post")
""",
    "post.py": "P = 1\n",
    "earlyrun.py": """\
import early

print(early.f(1))
""",
    # a module with a breakpoint defines a function, then imports a module that calls it
    "circ.py": """\
def g(v):
    w = v + 1
    return w


import caller
""",
    "circrun.py": "import circ\n",
    "caller.py": """\
import circ

print("g", circ.g(1))
""",
    "probed.py": """\
import probe
import late

print(probe.T, late.triple(1))
""",
}

#: (script, commands) run from pdb's first prompt
SEQUENCES = {
    "several files, the end and a restart": (
        "main.py", ["b helper.py:2", "b late.py:2", "c", "p x", "c", "c", "c", "p z", "c",
                    "c", "p x",
                    # how pytest-timeout tells a debugger is on (the trace's module)
                    "p __import__('inspect').getmodule(__import__('sys').gettrace()).__name__"]),
    "a function breakpoint": (
        "main.py", ["n", "b helper.double", "c", "where", "c", "clear 1", "c", "c"]),
    "a condition and a temporary breakpoint": (
        "main.py", ["b helper.py:3, x == 2", "tbreak late.py:3", "c", "p x, y", "c", "p z",
                    "c", "c", "c"]),
    "s into another file after c": (
        "main.py", ["b main.py:14", "c", "s", "s", "s", "s", "n", "c", "b main.py:6", "c",
                    "s", "s", "s", "c"]),
    "disable, clear, then c to the end": (
        "main.py", ["b helper.py:2", "b late.py:2", "c", "disable 1", "c", "clear 2", "c",
                    "c", "enable 1", "c", "condition 1 x == 1", "c", "p x", "c"]),
    "until and return": (
        "main.py", ["b main.py:11", "c", "until", "until", "until", "until 15", "b helper.py:2",
                    "c", "r", "r", "n", "c"]),
    "jump and post mortem": (
        "boom.py", ["b helper.py:2", "c", "j 3", "c", "c", "p 1", "c", "c", "c"]),
    "a nested debugger": (
        "main.py", ["b helper.py:2", "c", "debug double(7)", "s", "s", "p x", "c", "c", "p x",
                    "c"]),
    "a breakpoint added while stopped elsewhere": (
        "busy.py", ["b busy.py:16", "c", "b helper.py:3", "c", "p y", "c", "c"]),
    # the cases where the global trace may be off until a breakpoint's file runs
    "a conditional breakpoint in a module imported later": (
        "main.py", ["b late.py:2, x > 1", "c", "p x", "c", "c", "c"]),
    "the test file through pytest's assertion rewriter": (
        "-m pytest -q -s -p no:cacheprovider -p no:timeout test_lazy.py",
        ["b test_lazy.py:6", "b helper.py:3", "c", "p a", "c", "c", "c"]),
    "the test file with pytest-timeout's plugin": (
        "-m pytest -q -s -p no:cacheprovider test_lazy.py", ["b test_lazy.py:5", "c", "c", "c"]),
    "a file run by runpy": (
        "runner.py", ["b tool.py:2", "c", "p n", "c", "c", "p n"]),
    "code of a file compiled and called as a function": (
        "genrun.py", ["b gen.py:2", "c", "p v", "c", "c"]),
    "a module imported by another thread": (
        "threaded.py", ["b late.py:2", "c", "p x", "c", "c"]),
    "the program turns the trace off": (
        "untrace.py", ["b late.py:2", "c", "c"]),
    "breakpoints' modules importing others first": (
        "shadedrun.py", ["b shaded.py:6", "b shaded2.py:5", "c", "p v", "c", "p v", "c", "c"]),
    "a breakpoint at module level after an import": (
        "shadedrun.py", ["b shaded.py:2", "c", "n", "n", "c", "c"]),
    "the next import of a breakpoint's module done meanwhile": (
        "earlyrun.py", ["b early.py:6", "c", "p v", "c", "c"]),
    "a module with a breakpoint whose import calls it back": (
        "circrun.py", ["b circ.py:2", "c", "p v", "c", "c"]),
    "a module that reads the trace function to tell a debugger is on": (
        "timed.py", ["b late.py:2", "c", "c", "c"]),
}


#: the sandbox image of the docker cases (set by the ``kind`` fixture)
_IMAGE: list[str] = []


def _terminal(kind: str):
    if kind == "docker":
        return DockerTerminal(_IMAGE[0])
    return LocalTerminal() if kind == "local" else BwrapTerminal()


def _normal(text: str) -> str:
    return re.sub(r" in \d+\.\d+s", " in ?s", re.sub(r"0x[0-9a-f]+", "0x?", text))


def _transcripts(kind: str, root, script: str, commands: list[str],
                 order: tuple[bool, bool]) -> tuple[dict[bool, list[str]], list[str]]:
    """Run ``commands`` twice in one terminal: first cold with ``FAST_CONTINUE =
    order[0]``, then from the spare the first session started, with ``order[1]``."""
    replies: dict[bool, list[str]] = {}
    starts = []
    with _terminal(kind) as term:
        term.start(str(root))
        for fast in order:
            old, pdb_session.FAST_CONTINUE = pdb_session.FAST_CONTINUE, fast
            try:
                session = PdbSession(term, f"python -m pdb {script}")
                out = [_normal(session.start(20).output)]
                starts.append(session.started_as)
                for command in commands:
                    reply = session.send(command, 20)
                    assert reply.ok, (command, reply.output)
                    out.append(f"{command} -> {_normal(reply.output)}")
                session.close()
                term.wait_spares(30)
            finally:
                pdb_session.FAST_CONTINUE = old
            replies[fast] = out
    return replies, starts


@pytest.fixture(params=["local", "bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def kind(request) -> str:
    if request.param == "docker":
        _IMAGE[:] = [request.getfixturevalue("docker_ready")]
    elif request.param == "bwrap":
        request.getfixturevalue("bwrap_ready")
    return request.param


#: The sequence whose working copy holds a module named ``pytest_timeout``: when the
#: sandbox's ``python`` has the real pytest-timeout plugin (an activated virtualenv with
#: this project's test dependencies, as in CI), pytest's run imports the working copy's
#: module as that plugin, so the spare, which imported the real one, must stand down.
SHADOWS_A_PLUGIN = "the test file with pytest-timeout's plugin"


def _sandbox_has_pytest_timeout(kind: str, tmp_path) -> bool:
    """True when ``python`` in a ``kind`` terminal (in an empty folder) imports the
    pytest-timeout plugin through pytest's entry points (installed, autoloading on)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    with _terminal(kind) as term:
        term.start(str(empty))
        out = term.run("python -c \"import importlib.util as u, os; print('plugin', "
                       "u.find_spec('pytest_timeout') is not None and not "
                       "os.environ.get('PYTEST_DISABLE_PLUGIN_AUTOLOAD'))\"", 60).output
    assert "plugin True" in out or "plugin False" in out, out
    return "plugin True" in out


@pytest.mark.parametrize("name", list(SEQUENCES))
def test_stops_and_replies_are_bdbs(make_repo, kind, name, caplog, tmp_path):
    caplog.set_level(logging.INFO, logger="dgym_tui.core.terminals.preload")
    root = make_repo(FILES)
    script, commands = SEQUENCES[name]
    first, first_starts = _transcripts(kind, root, script, commands, (True, False))
    second, second_starts = _transcripts(kind, root, script, commands, (False, True))
    if name == SHADOWS_A_PLUGIN and _sandbox_has_pytest_timeout(kind, tmp_path):
        assert first_starts == second_starts == ["cold", "cold"], caplog.text
        assert caplog.text.count("not used: stale: the current folder holds a module named "
                                 "like one it imported") == 2, caplog.text
    else:
        assert first_starts == second_starts == ["cold", "preloaded"], caplog.text
    plain = second[False]
    assert first[True] == plain, "cold, cheap continue"
    assert first[False] == plain, "preloaded, bdb's continue"
    assert second[True] == plain, "preloaded, cheap continue"
    assert any("->" in line and "> " in line.split("->", 1)[1] for line in plain[1:])


def _trace_name(session: PdbSession) -> str:
    return session.send("p getattr(__import__('sys').gettrace(), '__name__', None)",
                        10).output.strip()


def test_the_cheap_path_is_the_global_trace_only_while_continuing(make_repo, kind):
    root = make_repo(FILES)
    with _terminal(kind) as term:
        term.start(str(root))
        session = PdbSession(term, "python -m pdb main.py")
        session.start(20)
        assert _trace_name(session) == "'trace_dispatch'"
        session.send_many(["b helper.py:2", "c"], 20)
        assert _trace_name(session) == "'_dgym_continue'"
        session.send("s", 20)
        assert _trace_name(session) == "'trace_dispatch'"
        session.send("c", 20)
        assert _trace_name(session) == "'_dgym_continue'"
        session.send_many(["n", "n"], 20)
        assert _trace_name(session) == "'trace_dispatch'"
        session.send_many(["clear 1", "c"], 20)  # no breakpoint: bdb's own (no trace)
        session.send("b late.py:2", 20)
        replies = session.send_many(["c", "c"], 20)
        assert "The program finished" in replies[1].output
        assert _trace_name(session) == "'trace_dispatch'"  # restarted, stopped at line 1
        session.close()


def _dispatch_calls(fast: bool, kind: str, root) -> tuple[int, str]:
    """bdb's ``dispatch_call`` runs during one ``c`` over busy.py's 3,000 calls."""
    old, pdb_session.FAST_CONTINUE = pdb_session.FAST_CONTINUE, fast
    try:
        with _terminal(kind) as term:
            term.start(str(root))
            session = PdbSession(term, "python -m pdb busy.py")
            session.start(20)
            count = ("!import bdb; bdb._n = [0]; bdb._f = bdb.Bdb.dispatch_call; "
                     "bdb.Bdb.dispatch_call = lambda s, f, a: "
                     "(bdb._n.__setitem__(0, bdb._n[0] + 1), bdb._f(s, f, a))[1]")
            replies = session.send_many(["b helper.py:2", count, "c", "p __import__('bdb')._n[0]",
                                         "p x"], 20)
            session.close()
    finally:
        pdb_session.FAST_CONTINUE = old
    return int(replies[3].output.strip()), replies[4].output.strip()


def test_bdb_dispatches_only_the_files_with_breakpoints(make_repo, kind):
    root = make_repo(FILES)
    plain, plain_x = _dispatch_calls(False, kind, root)
    fast, fast_x = _dispatch_calls(True, kind, root)
    assert plain_x == fast_x == "5"
    assert plain > 3000
    assert fast < 10


def _raw(root, fast: bool) -> list[str]:
    """``commands``, ``interact`` and ``debug`` (prompts of their own) through pexpect."""
    child = pexpect.spawn(sys.executable, ["-m", "pdb", "main.py"], cwd=str(root),
                          encoding="utf-8", timeout=20)
    prompt = "\n(Pdb) "
    out = []

    def say(line: str, until: str = prompt) -> None:
        child.sendline(line)
        child.expect_exact(until)
        out.append(_normal(child.before.replace("\r\n", "\n")))

    try:
        child.expect_exact("(Pdb) ")
        child.sendline(_prompt_setter("(Pdb) ", fast))
        child.expect_exact(prompt)
        say("b helper.py:2")
        say("b late.py:2")
        say("commands 1", "(com) ")
        say("silent", "(com) ")
        say("p 'hit', x", "(com) ")
        say("continue")  # a resuming command ends the list
        say("c")
        say("interact", ">>> ")
        say("print(x * 10)", ">>> ")
        child.sendeof()
        child.expect_exact(prompt)
        say("debug triple(2)", "\n((Pdb)) ")
        say("c", "\n((Pdb)) ")
        say("c")
        say("commands 2", "(com) ")
        say("p 'two'", "(com) ")
        say("end")
        say("c")
        say("c")
        say("c")
    finally:
        child.close(force=True)
    return out


def test_commands_interact_and_debug(make_repo):
    root = make_repo(FILES)
    plain, fast = _raw(root, False), _raw(root, True)
    assert fast == plain
    assert "('hit', 0)" in "".join(plain) and "('hit', 2)" in "".join(plain)


def _replies(kind: str, root, fast: bool, script: str, commands: list[str]) -> list:
    """pdb's replies to ``commands`` in ``python -m pdb SCRIPT``, with the cheap ``continue``
    on (``fast``) or off."""
    old, pdb_session.FAST_CONTINUE = pdb_session.FAST_CONTINUE, fast
    try:
        with _terminal(kind) as term:
            term.start(str(root))
            session = PdbSession(term, f"python -m pdb {script}")
            session.start(20)
            replies = session.send_many(commands, 20)
            session.close()
    finally:
        pdb_session.FAST_CONTINUE = old
    return replies


def test_code_imported_before_a_breakpoints_file_runs_untraced(make_repo, kind):
    """With the cheap ``continue``, no trace function runs until code of a breakpoint's
    file is about to: probe.py, imported first, sees none (bdb's: ``trace_dispatch``)."""
    root = make_repo(FILES)
    seen = {}
    for fast in (False, True):
        replies = _replies(kind, root, fast, "probed.py",
                           ["b late.py:2", "c", "p __import__('probe').T", "c"])
        assert "late.py(2)triple()" in replies[1].output
        seen[fast] = (replies[2].output.strip(), replies[3].output)
    assert seen[False][0] == "'trace_dispatch'"
    assert seen[True][0] == "None"
    assert "None 3" in seen[True][1] and "trace_dispatch 3" in seen[False][1]


def test_a_breakpoints_module_imports_others_untraced(make_repo, kind):
    """A module with breakpoints that imports others before it defines anything: those run
    with no trace function while the module has another import to make before anything
    else (shaded2, and inner2 in it), then with getattr's C function answering their
    ``call`` events (inner: the last import before the module's functions)."""
    root = make_repo(FILES)
    seen = {}
    for fast in (False, True):
        replies = _replies(kind, root, fast, "shadedrun.py",
                           ["b shaded.py:6", "c",
                            "p __import__('inner').T, __import__('inner2').T", "c"])
        assert "shaded.py(6)f()" in replies[1].output
        seen[fast] = replies[2].output.strip()
    assert seen[False] == "('trace_dispatch', 'trace_dispatch')"
    assert seen[True] == "('getattr', None)"


def test_the_script_is_read_from_the_terminals_plugin_folder(make_repo, kind, monkeypatch):
    """pdb reads the script from the terminal's plugin folder: the start's command line is
    short (it carried the whole script compressed, ~2,700 characters echoed by the terminal
    and read by pdb at each start)."""
    sent: list[str] = []
    real = pdb_session._prompt_setter
    monkeypatch.setattr(pdb_session, "_prompt_setter",
                        lambda *args: sent.append(real(*args)) or sent[-1])
    root = make_repo(FILES)
    with _terminal(kind) as term:
        term.start(str(root))
        session = PdbSession(term, "python -m pdb main.py")
        session.start(20)
        assert len(sent) == 1 and fastcontinue.FILE in sent[0] and len(sent[0]) < 600, sent
        path = os.path.join(term.plugin_dir, fastcontinue.FILE)
        with open(path) as f:
            assert f.read() == fastcontinue.SCRIPT
        assert os.stat(path).st_mode & 0o777 == 0o644
        session.send_many(["b helper.py:2", "c"], 20)
        assert _trace_name(session) == "'_dgym_continue'"
        session.close()
