"""Driving a live episode in the app: command palette, key help, themes, auto mode
with pause, the end-of-episode patch offer, quitting while a step runs, a narrow
terminal, the console's focus, an entrypoint that cannot run."""

from __future__ import annotations

import time

from process_helpers import alive
from tui_helpers import FIX, SIZE, console_text, records, settle, stub_agent

import dgym_tui.core.tools  # noqa: F401  registers the built-in tools
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.tui.app import DgymApp


async def test_palette_help_and_themes(calc_session):
    session = calc_session(tools=("view", "eval", "rewrite", "submit"))
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for expected in ("Eval [x]", "Diff [p]", "Keys [?]", "Apply patch [w]", "Theme"):
            assert expected in titles, titles
        assert not any(t.startswith("Approve") for t in titles)  # no agent: not offered
        # Run "Eval" from the command palette.
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"eval")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await settle(app, pilot)
        assert [t.action.name for t in session.turns] == ["eval"]

        await pilot.press("question_mark")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "LiveScreen"

        assert {"dgym-dark", "dgym-light"} <= set(app.available_themes)
        assert app.theme == "dgym-dark"
        app.theme = "dgym-light"
        await pilot.pause()
        assert app.source_view._dark is False  # source colours follow the theme
        await pilot.press("p")
        await pilot.pause()
        assert app.query_one("#side").active == "tab-diff"
        await pilot.press("q")
        await pilot.pause()


async def test_submit_offers_the_patch(calc_session, calc_repo):
    session = calc_session(tools=("view", "eval", "rewrite", "submit"))
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
        await settle(app, pilot)
        assert app.query_one("FileTree")._changed == {"calc.py"}
        app.episode_screen.act(ToolCall("submit", {}))
        await settle(app, pilot)
        assert session.done
        assert type(app.screen).__name__ == "ConfirmScreen"  # apply? asked once at the end
        await pilot.press("y")
        await settle(app, pilot)
        assert FIX in (calc_repo / "calc.py").read_text()
        assert "done: submitted" in app.status.text
        await pilot.press("x")  # the episode is over: nothing runs
        await pilot.pause()
        assert len(session.turns) == 2
        await pilot.press("q")
        await pilot.pause()


async def test_auto_mode_and_pause(calc_session, tmp_path, llm_server):
    # eval steps run pytest (about a second each), so the pause lands mid-run.
    evaluate = {"tool_calls": [{"name": "eval", "arguments": {}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1}}
    llm_server.script([dict(evaluate) for _ in range(6)])
    out = tmp_path / "auto.jsonl"
    session = calc_session(stub_agent(llm_server), "approve", out,
                           tools=("view", "eval", "rewrite", "submit"))
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert app.query_one("#approve").has_class("-shown")
        await pilot.press("g")  # go: the agent runs on its own
        await pilot.pause()
        assert session.mode == "auto"
        await pilot.press("space")  # pause after the current step
        await settle(app, pilot)
        assert session.mode == "approve"
        steps = len(session.turns)
        assert 1 <= steps < 6
        assert all(t.decision == "auto" for t in session.turns)
        assert app.query_one("#approve").has_class("-shown")  # waiting for a decision again
        await pilot.press("a")
        await settle(app, pilot)
        assert session.turns[-1].decision == "approved"
        await pilot.press("t")
        await pilot.pause()
        assert session.mode == "human"
        await pilot.press("q")
        await pilot.pause()
    lines = [r for r in records(out) if r["type"] == "step"]
    assert [r["decision"] for r in lines] == ["auto"] * steps + ["approved", "rejected"]
    assert lines[-1]["note"].startswith("taken over")  # t: the waiting proposal, not run


async def test_quit_while_a_step_runs_is_prompt(calc_session, tmp_path):
    out = tmp_path / "t.jsonl"
    session = calc_session(out=out, task_name="calc", pdb_timeout=60)
    env = session.env
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("pdb", {"command": "p 6*7"}))
        await settle(app, pilot)
        pdb_tool = env.tools["pdb"]
        app.episode_screen.act(ToolCall("pdb", {"command": "p __import__('time').sleep(50)"}))
        await pilot.pause(1.0)
        assert app.busy
        pids = [p.pid for p in _pdb_children(pdb_tool)]
        assert pids
        start = time.monotonic()
        await pilot.press("q")
        for _ in range(400):  # the quit action closes the session, then exits the app
            if app._exit:
                break
            await pilot.pause(0.05)
        elapsed = time.monotonic() - start
    assert elapsed < 8, f"quit took {elapsed:.1f} s"
    assert env.workspace is None and env.terminal is None
    assert not any(alive(pid) for pid in pids if pid)
    lines = records(out)
    kinds = [r["type"] for r in lines]
    assert kinds[0] == "header" and kinds[-1] == "footer" and kinds.count("footer") == 1
    steps = [r for r in lines if r["type"] == "step"]
    assert steps[0]["action"]["arguments"] == {"command": "p 6*7"} and "42" in steps[0]["observation"]
    assert lines[-1]["reason"] == "quit"


def _pdb_children(pdb_tool) -> list:
    """The pexpect child of the pdb tool's session (the pdb process)."""
    session = getattr(pdb_tool, "session", None)
    child = getattr(session, "child", None)
    return [child] if child is not None else []


async def test_narrow_terminal_keeps_the_source_view_usable(calc_session):
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(app, pilot)
        assert app.source_view.size.width >= 40
        assert app.query_one("#tree").size.width >= 16
    app.close_session()


async def test_help_shows_console_syntax_and_only_live_keys(calc_session):
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        screen = app.screen
        assert type(screen).__name__ == "HelpScreen"
        rows = {key: text for _, section in screen.sections for key, text in section}
        assert any(k.startswith("rewrite path=") and "new_code=" in k for k in rows)
        assert "h" not in rows  # replay keys only in replay
        assert "nothing re-executed" in rows["f"]  # f branches a live episode
        assert "rewrite path=" in app.pdb_console.input.placeholder
    app.close_session()


async def test_console_gives_focus_back_when_the_episode_ends(calc_session, tmp_path):
    out = tmp_path / "t.jsonl"
    session = calc_session(out=out)
    app = DgymApp(session=session, ask_apply=False)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        box = app.query_one("#console-input")
        box.focus()
        box.value = "submit"
        await pilot.press("enter")
        await settle(app, pilot)
        assert session.done
        assert app.focused is app.source_view
        await pilot.press("q")
        await pilot.pause()
    assert read_trajectory(out).footer["reason"] == "submitted"


async def test_entrypoint_that_cannot_run_is_reported(calc_session):
    session = calc_session(entrypoint="no_such_command_xyz --x")
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(app, pilot)
        # in the console, which keeps it (a notification expires after 10 s: on a slow
        # machine it could be gone before this line)
        assert "the entrypoint could not run (exit code 127); check --entrypoint" in \
            console_text(app), console_text(app)
    app.close_session()
