"""The real Textual app through Pilot: a human episode, an approve-mode episode, replay and fork.

Real pdb, real pytest subprocesses, a real trajectory file, and (approve
mode) litellm talking HTTP to the scripted LLM stub server.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tui_helpers import CALC, ENTRYPOINT, FIX, SIZE, records, screen_text, settle, stub_agent, type_console

from dgym_tui.benchmarks.local import folder_task
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.replay_model import ReplayModel


async def test_human_episode(calc_repo, calc_session, tmp_path):
    out = tmp_path / "runs" / "human.jsonl"
    session = calc_session(out=out, task_name="calc")
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        view = app.source_view
        # The source view starts where the first failing test enters the repo's code.
        assert (view.path, view.cursor_line) == ("calc.py", 5)
        assert "tests 0/2" in app.status.text
        assert "human" in app.status.text

        view.focus()
        await pilot.press("b")  # breakpoint at the cursor line, through the session
        await settle(app, pilot)
        assert session.turns[-1].action.arguments == {"command": "b calc.py:5"}
        assert view.breakpoints == {5: None}

        view.focus()
        await pilot.press("c")  # continue to the breakpoint: the frame is shown
        await settle(app, pilot)
        assert session.env.frame == ("calc.py", 5)
        assert (view.path, view.frame_line) == ("calc.py", 5)

        await type_console(app, pilot, "p total")
        assert "4" in session.turns[-1].result.observation
        assert app.query_one("#console-input").history[-1] == "p total"

        await type_console(app, pilot,
                           f'rewrite path=calc.py start=5 end=5 new_code="{FIX}"')
        assert session.turns[-1].action.name == "rewrite"
        assert not session.turns[-1].result.error, session.turns[-1].result.observation
        assert view.lines[4] == FIX  # the view shows the rewritten file
        assert "calc.py" in session.turns[-1].result.changed_files
        assert "+    return total / len(xs)" in app.query_one("#diff").patch

        view.focus()
        await pilot.press("x")  # eval
        await settle(app, pilot)
        assert "tests 2/2" in app.status.text
        assert session.last.resolved

        # Apply the patch to the original repository only after confirmation.
        await pilot.press("w")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmScreen"
        await pilot.press("n")
        await pilot.pause()
        assert (calc_repo / "calc.py").read_text() == CALC
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert FIX in (calc_repo / "calc.py").read_text()

        await pilot.press("q")
        await pilot.pause()
    assert session.done and session.reason == "quit"
    assert session.env.workspace is None and session.env.terminal is None  # closed: processes and copy gone
    lines = records(out)
    assert [r["type"] for r in lines] == ["header"] + ["step"] * 5 + ["footer"]
    assert [r["action"]["name"] for r in lines[1:-1]] == ["pdb", "pdb", "pdb", "rewrite", "eval"]
    assert all(r["actor"] == "human" and r["decision"] == "manual" for r in lines[1:-1])
    assert lines[-1]["resolved"] is True


async def test_console_errors_and_history(calc_session):
    session = calc_session(tools=("view", "eval", "rewrite"))
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        # Without a pdb tool, a pdb command is refused by the parser, not sent.
        await type_console(app, pilot, "p total")
        assert session.turns == []
        await type_console(app, pilot, "view path=calc.py")
        assert session.turns[-1].action.name == "view"
        console_input = app.query_one("#console-input")
        console_input.focus()
        await pilot.press("up")
        assert console_input.value == "view path=calc.py"
        await pilot.press("up")
        assert console_input.value == "p total"
        await pilot.press("down", "down")
        assert console_input.value == ""
        await pilot.press("q")  # typed into the input, does not quit
        assert console_input.value == "q"
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert session.done and session.env.workspace is None


async def test_approve_mode_episode(calc_session, tmp_path, llm_server):
    usage = {"prompt_tokens": 100, "completion_tokens": 10}
    llm_server.script([
        {"content": "Let me read the code.", "usage": usage,
         "tool_calls": [{"name": "view", "arguments": {"path": "calc.py"}}]},
        {"content": "Break in the loop.", "usage": usage,
         "tool_calls": [{"name": "pdb", "arguments": {"command": "b calc.py:4"}}]},
        {"content": "Run the tests.", "usage": usage,
         "tool_calls": [{"name": "eval", "arguments": {}}]},
        {"content": "Rewrite everything.", "usage": usage,
         "tool_calls": [{"name": "rewrite", "arguments": {"path": "calc.py", "new_code": ""}}]},
    ])
    out = tmp_path / "approve.jsonl"
    session = calc_session(stub_agent(llm_server), "approve", out)
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        panel = app.query_one("#approve")
        assert panel.has_class("-shown")
        assert panel.proposal.action.name == "view"
        # While the agent drives, the footer shows the decision keys only ...
        shown = {key for key, active in app.screen.active_bindings.items() if active.binding.show}
        assert shown == {"q", "question_mark", "a", "e", "R", "t", "g"}
        # ... and the other keys still work (p: the diff tab).
        await pilot.press("p")
        assert app.query_one("TabbedContent").active == "tab-diff"
        await pilot.press("a")  # approve; the next proposal is asked for right away
        await settle(app, pilot)
        assert session.turns[-1].decision == "approved"
        assert panel.proposal.action.arguments == {"command": "b calc.py:4"}

        await pilot.press("e")  # edit the arguments as JSON
        await pilot.pause()
        editor = app.screen.query_one("TextArea")
        editor.text = json.dumps({"name": "pdb", "arguments": {"command": "b calc.py:5"}})
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        edited = session.turns[-1]
        assert (edited.decision, edited.actor) == ("edited", "human")
        assert edited.action.arguments == {"command": "b calc.py:5"}
        assert app.source_view.breakpoints.get(5, "absent") is None

        assert panel.proposal.action.name == "eval"
        await pilot.press("R")  # reject with a note
        await pilot.pause()
        note_input = app.screen.query_one("Input")
        note_input.value = "read the loop with pdb first"
        await pilot.press("enter")
        await settle(app, pilot)
        assert session.turns[-1].decision == "rejected"
        # The note went back to the agent in the next request.
        assert "read the loop with pdb first" in json.dumps(llm_server.requests[-1]["messages"])
        # 4 proposals x (100 + 10) tokens at 1e-6 / 2e-6 dollars per token
        assert "440 tok $0.0005" in app.status.text

        assert panel.proposal.action.name == "rewrite"
        await pilot.press("t")  # take over: human mode, proposal dropped
        await pilot.pause()
        assert session.mode == "human" and not panel.has_class("-shown")
        await type_console(app, pilot, "eval")
        assert session.turns[-1].decision == "manual"
        await pilot.press("q")
        await pilot.pause()
    steps = [r for r in records(out) if r["type"] == "step"]
    # t recorded the dropped rewrite proposal: a rejected turn whose note says taken over
    assert [r["decision"] for r in steps] == ["approved", "edited", "rejected", "rejected",
                                              "manual"]
    assert steps[3]["note"].startswith("taken over") and steps[3]["action"] is None
    assert steps[3]["proposed"]["name"] == "rewrite" and steps[3]["usage"]["prompt_tokens"]
    assert llm_server.remaining == 0


async def test_approve_keys_stay_in_view_under_long_reasoning(calc_session, llm_server):
    """At 100x30 (a short screen: the panel shows 5 rows) a proposal whose reasoning is
    longer than the approve panel is tall: the reasoning and arguments scroll, the keys hint
    stays on the panel's last row (it was scrolled out of view below them), on one row cut
    with an ellipsis, so the proposal keeps the panel's other rows."""
    reasoning = "\n".join(f"thought {i}: the division looks wrong" for i in range(30))
    llm_server.script([{"content": reasoning, "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                        "tool_calls": [{"name": "pdb", "arguments": {"command": "b calc.py:5"}}]}])
    app = DgymApp(session=calc_session(stub_agent(llm_server), "approve"))
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        panel = app.query_one("#approve")
        assert panel.proposal.reasoning.count("thought") == 30
        assert panel.max_scroll_y > 0  # the panel does scroll: the proposal is taller than it
        assert app.screen.has_class("-short")
        keys = panel.query_one("#approve-keys").region
        assert keys.height == 1 and panel.content_region.contains_region(keys)
        assert keys.bottom == panel.content_region.bottom
        assert panel.content_region.height - keys.height >= 3  # rows left for the proposal
        hint = panel.query_one("#approve-keys").render_line(0).text.rstrip()
        assert hint.startswith("[a] approve  [e] edit") and hint.endswith("…")
        assert "[a] approve  [e] edit" in screen_text(app)
        panel.scroll_end(animate=False)
        await pilot.pause()
        keys = panel.query_one("#approve-keys").region
        assert panel.content_region.contains_region(keys)
        # scrolled to the end, the arguments' last row is just above the hint, not under it
        assert panel.query_one("#approve-action").region.bottom == keys.y


async def _record_episode(repo: Path, out: Path) -> None:
    from dgym_tui.launch.open import open_session

    session = open_session(folder_task(repo, entrypoint=ENTRYPOINT, name="calc"), trajectory=out)
    env = session.env
    session.start()
    from dgym_tui.tui.actions import pdb_call

    session.act(pdb_call("b calc.py:5"))
    session.act(pdb_call("c"))
    session.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
    session.act(ToolCall("eval", {}))
    session.finish("quit")
    env.close()


async def test_replay_and_fork(calc_repo, tmp_path, bwrap_ready):
    recorded = tmp_path / "recorded.jsonl"
    await _record_episode(calc_repo, recorded)
    traj = read_trajectory(recorded)
    forked_out = tmp_path / "forked.jsonl"

    def fork(step):
        from dgym_tui.launch.replay import fork as replay_fork
        return replay_fork(traj, step, None, output=forked_out, mode="human", start=False)

    app = DgymApp(replay=ReplayModel(traj), fork=fork)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        view = app.source_view
        assert app.episode_screen.step_index == 0 and "replay step 0/4" in app.status.text
        assert (view.path, view.breakpoints, view.frame_line) == ("calc.py", {}, None)
        await pilot.press("l")
        assert view.breakpoints == {5: None} and view.frame_line is None
        await pilot.press("l")
        assert (view.path, view.frame_line) == ("calc.py", 5)
        assert view.lines[4] == "    return total / len(xs[1:])"
        await pilot.press("dollar_sign")
        assert app.episode_screen.step_index == 4 and view.lines[4] == FIX  # source re-derived from rewrites
        assert "tests 2/2" in app.status.text
        await pilot.press("h", "h")
        assert app.episode_screen.step_index == 2 and view.lines[4] != FIX
        await pilot.press("0")
        assert app.episode_screen.step_index == 0
        await pilot.press("l", "l")
        await pilot.press("f")  # fork at step 2: re-executed live, then human mode
        await settle(app, pilot)
        assert app.replay_screen is None and app.session is not None
        # the recording's local cannot lower the person's sandbox: the fork runs in bwrap
        assert "│ bwrap │" in app.status.text and "unsandboxed" not in app.status.text
        session = app.session
        assert len(session.turns) == 2 and session.env.frame == ("calc.py", 5)
        assert view.frame_line == 5
        await type_console(app, pilot, "p total")
        assert "4" in session.turns[-1].result.observation
        await pilot.press("q")
        await pilot.pause()
    steps = [r for r in records(forked_out) if r["type"] == "step"]
    assert len(steps) == 3 and steps[-1]["action"]["arguments"] == {"command": "p total"}


async def test_human_episode_on_a_mini_task(tmp_path):
    """`dgym-tui --task pagination` as built by the command line: debug and fix it by hand."""
    from dgym_tui.cli.tui import build_app, build_parser

    out = tmp_path / "mini.jsonl"
    app = build_app(build_parser().parse_args(["--task", "pagination", "--trajectory", str(out),
                                               "--no-apply-prompt"]))
    session = app.session
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "mini/pagination" in app.status.text
        # The failing assertion is in the test file: the view starts there.
        assert app.source_view.path == "test_pagination.py"
        assert app.source_view.cursor_line > 1
        tree = app.query_one("FileTree")
        tree.focus()
        await pilot.press("home")
        while tree.cursor_node is None or tree.cursor_node.data != "paging.py":
            await pilot.press("down")
        await pilot.press("enter")  # open the file from the tree
        await pilot.pause()
        assert app.source_view.path == "paging.py"
        text = session.env.workspace.read_text("paging.py")
        line = next(i for i, s in enumerate(text.splitlines(), 1)
                    if "len(self.items) // self.per_page" in s)
        app.source_view.go_to(line)
        app.source_view.focus()
        await pilot.press("b")
        await settle(app, pilot)
        assert app.source_view.breakpoints == {line: None}
        await pilot.press("c")
        await settle(app, pilot)
        assert app.source_view.frame_line == line
        await type_console(app, pilot, "p len(self.items), self.per_page")
        assert "(" in session.turns[-1].result.observation
        fixed = "        return max(1, -(-len(self.items) // self.per_page))"
        await type_console(app, pilot, f"rewrite path=paging.py start={line} end={line} "
                                       f"new_code='{fixed}'")
        assert app.source_view.lines[line - 1] == fixed
        await type_console(app, pilot, "eval")
        assert session.last.resolved, session.last.observation
        await pilot.press("q")  # typed into the focused console: no quit
        assert not session.done
        await pilot.press("escape", "q")  # escape leaves the console, q quits
        await pilot.pause()
    assert session.done and session.env.workspace is None
    lines = records(out)
    assert lines[0]["task"]["benchmark"] == "mini" and lines[-1]["resolved"] is True
    assert [r["action"]["name"] for r in lines[1:-1]] == ["pdb", "pdb", "pdb", "rewrite", "eval"]


async def test_crash_keeps_the_trajectory(calc_session, tmp_path):
    out = tmp_path / "crash.jsonl"
    session = calc_session(out=out, tools=("view", "eval"))
    app = DgymApp(session=session)

    def broken_handler(*_args):
        raise RuntimeError("a bug in the app")

    with pytest.raises(RuntimeError, match="a bug in the app"):
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.transcript.add_turn = broken_handler  # the app's turn handler fails
            app.episode_screen.act(ToolCall("view", {"path": "calc.py"}))
            await app.workers.wait_for_complete()
            for _ in range(50):
                await pilot.pause()
    # The step was on disk before the app died; main() then closes like this:
    assert [r["type"] for r in records(out)] == ["header", "step"]
    app.close_session("error: the app crashed")
    lines = records(out)
    assert lines[-1]["type"] == "footer" and lines[-1]["reason"] == "error: the app crashed"
    assert session.env.workspace is None


@pytest.mark.docker
async def test_docker_episode_in_the_app(docker_ready, tmp_path):
    """`dgym-tui --task pagination --terminal docker`: eval and pdb run in a container."""
    import os

    import docker

    from dgym_tui.cli.tui import build_app, build_parser
    from dgym_tui.core.terminals.docker import LABEL, LABEL_PID

    out = tmp_path / "docker.jsonl"
    app = build_app(build_parser().parse_args([
        "--task", "pagination", "--terminal", "docker", "--image", docker_ready,
        "--trajectory", str(out), "--no-apply-prompt"]))
    session = app.session
    client = docker.from_env()

    def ours():
        return [c for c in client.containers.list(all=True, filters={"label": LABEL})
                if c.labels.get(LABEL_PID) == str(os.getpid())]

    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert session.env.terminal.workdir == "/workspace" and len(ours()) == 1
        assert "tests " in app.status.text and "tests -/-" not in app.status.text
        await type_console(app, pilot, "p 6 * 7")
        assert "42" in session.turns[-1].result.observation
        await pilot.press("escape", "q")
        await pilot.pause()
    assert session.done and ours() == []  # the container is gone after q
    assert records(out)[-1]["type"] == "footer"
