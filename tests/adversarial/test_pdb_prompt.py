"""A program cannot fake pdb's prompt and shift the replies (issue 24, class 8).

The program prints ``(Pdb) `` and then ``42``: with pdb's fixed prompt the
reply to ``c`` ended at the fake prompt and ``p 1+1`` was answered ``42``.
Each session gives pdb a random prompt only it knows, so the fake one is
plain output.
"""

from __future__ import annotations

import pytest

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.pdb.session import PdbSession
from dgym_tui.core.terminals.bwrap import BwrapTerminal

PROGRAM = ('import sys\n'
           'sys.stdout.write("(Pdb) ")\n'
           'sys.stdout.flush()\n'
           'print("42")\n'
           'x = 1\n'
           'print("(Pdb) 43\\n(Pdb) 44")\n'
           'y = 2\n')


def _pdb(step, command):
    return step({"name": "pdb", "arguments": {"command": command}})


def test_a_printed_pdb_prompt_does_not_shift_the_replies(tmp_path, sandbox):
    (tmp_path / "prog.py").write_text(PROGRAM)
    kind, image = sandbox
    with RepoEnv(tmp_path, entrypoint="python prog.py", terminal=kind, image=image,
                 debug_entrypoint="python -m pdb prog.py", pdb_timeout=20) as env:
        env.reset()
        assert not _pdb(env.step, "b prog.py:5").error
        reply = _pdb(env.step, "c")
        assert "42" in reply.observation and reply.frame == ("prog.py", 5), reply.observation
        reply = _pdb(env.step, "p 1+1")
        assert reply.observation.strip().endswith("2") and "42" not in reply.observation, \
            reply.observation
        reply = _pdb(env.step, "n")
        assert "43" in reply.observation and "44" in reply.observation, reply.observation
        reply = _pdb(env.step, "p x + 40")
        assert reply.observation.strip().endswith("41"), reply.observation


def test_batched_commands_keep_their_own_replies(tmp_path, bwrap_ready):
    (tmp_path / "prog.py").write_text(PROGRAM)
    terminal = BwrapTerminal()
    terminal.start(str(tmp_path))
    session = PdbSession(terminal, "python -m pdb prog.py")
    try:
        first = session.start(20)
        assert "prog.py(1)" in first.output, first.output
        replies = session.send_many(["b 7", "c", "p 1+1", "p 'done'"], 20)
        assert [r.status for r in replies] == ["prompt"] * 4
        assert "(Pdb) 43" in replies[1].output
        assert replies[2].output.strip() == "2" and replies[3].output.strip() == "'done'"
    finally:
        session.close()
        terminal.close()


@pytest.mark.parametrize("command", ["debug print(7)"])
def test_a_nested_debugger_is_still_read_to_its_prompt(tmp_path, bwrap_ready, command):
    (tmp_path / "prog.py").write_text(PROGRAM)
    terminal = BwrapTerminal()
    terminal.start(str(tmp_path))
    session = PdbSession(terminal, "python -m pdb prog.py")
    try:
        session.start(20)
        entered = session.send(command, 20)
        assert entered.ok, entered.output
        left = session.send("c", 20)
        assert left.ok and "7" in left.output, left.output
        assert session.send("p 3*3", 20).output.strip() == "9"
    finally:
        session.close()
        terminal.close()
