"""Command palette, key help, themes, auto mode with pause, the end-of-episode patch offer."""

from __future__ import annotations

import pytest
from llm_stub import llm_server  # noqa: F401  (pytest fixture)
from test_tui_app import CALC, ENTRYPOINT, FIX, SIZE, TESTS, _stub_agent, records, settle

import dgym_tui.core.tools  # noqa: F401  registers the built-in tools
from dgym_tui.core.env import RepoEnv
from dgym_tui.core.types import ToolCall
from dgym_tui.session import Session
from dgym_tui.tui.app import DgymApp


@pytest.fixture
def calc_repo(make_repo):
    return make_repo({"calc.py": CALC, "test_calc.py": TESTS})


async def test_palette_help_and_themes(calc_repo, tmp_path):
    env = RepoEnv(calc_repo, entrypoint=ENTRYPOINT, tools=("view", "eval", "rewrite", "submit"))
    session = Session(env, trajectory_path=tmp_path / "t.jsonl")
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
        assert type(app.screen).__name__ == "Screen"

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


async def test_submit_offers_the_patch(calc_repo, tmp_path):
    env = RepoEnv(calc_repo, entrypoint=ENTRYPOINT, tools=("view", "eval", "rewrite", "submit"))
    session = Session(env, trajectory_path=tmp_path / "t.jsonl")
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
        await settle(app, pilot)
        assert app.query_one("FileTree")._changed == {"calc.py"}
        app.act(ToolCall("submit", {}))
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


async def test_auto_mode_and_pause(calc_repo, tmp_path, llm_server):  # noqa: F811
    # eval steps run pytest (about a second each), so the pause lands mid-run.
    evaluate = {"tool_calls": [{"name": "eval", "arguments": {}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 1}}
    llm_server.script([dict(evaluate) for _ in range(6)])
    out = tmp_path / "auto.jsonl"
    env = RepoEnv(calc_repo, entrypoint=ENTRYPOINT, tools=("view", "eval", "rewrite", "submit"))
    session = Session(env, _stub_agent(llm_server), mode="approve", trajectory_path=out)
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
    decisions = [r["decision"] for r in records(out) if r["type"] == "step"]
    assert decisions == ["auto"] * steps + ["approved"]
