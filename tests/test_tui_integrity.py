"""Issue 10's integrity bugs, each through the real app (Pilot): a fold click crashed the
app, ``w`` could lose a failure silently, an LLM error looped in approve mode, and the
smaller ones (keys after the episode ended, ``m`` without an agent, 0/0 tests, ...)."""

from __future__ import annotations

import pytest
from tui_helpers import CALC, ENTRYPOINT, SIZE, TESTS, console_text, records, settle, stub_agent

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.session import Session
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.live.screen import LiveScreen
from dgym_tui.tui.replay_model import ReplayModel


def _click_target(app, selector: str) -> tuple[int, int]:
    """Screen cell of the first ``@click`` action drawn inside ``selector``."""
    region = app.query_one(selector).content_region.intersection(app.screen.region)
    for y in range(region.y, region.bottom):
        for x in range(region.x, region.right):
            if "@click" in app.screen.get_style_at(x, y).meta:
                return x, y
    raise AssertionError(f"no clickable cell in {selector}")


class TestTranscriptFolds:
    async def test_fold_click_and_keys(self, calc_session, tmp_path):
        """A click on "▶ N more lines" expands the observation (it crashed the app);
        enter / Z on the focused transcript do the same from the keyboard."""
        out = tmp_path / "t.jsonl"
        session = calc_session(out=out)
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("x")  # eval: a long observation, folded
            await settle(app, pilot)
            transcript = app.transcript
            app.query_one("#side").active = "tab-transcript"  # human sessions open on Debug
            await pilot.pause()
            assert "more lines (click)" in transcript.text
            x, y = _click_target(app, "#transcript-body")
            await pilot.click(offset=(x, y))
            await pilot.pause()
            assert transcript.expanded == {1} and "▼ fold" in transcript.text
            transcript.focus()
            await pilot.press("enter")  # every long one is expanded: fold the newest
            assert transcript.expanded == set()
            await pilot.press("Z")
            assert transcript.expanded == {1}
            await pilot.press("Z")
            assert transcript.expanded == set()
            app.source_view.focus()
            await pilot.press("q")
            await pilot.pause()
        assert records(out)[-1]["type"] == "footer"

    async def test_fold_click_in_replay(self, calc_session, tmp_path):
        """The same click in --replay."""
        out = tmp_path / "t.jsonl"
        session = calc_session(out=out)
        env = session.env
        session.start()
        session.act(ToolCall("eval", {}))
        session.finish("quit")
        env.close()
        app = DgymApp(replay=ReplayModel(read_trajectory(out)))
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("l")
            await pilot.pause()
            x, y = _click_target(app, "#transcript-body")
            await pilot.click(offset=(x, y))
            await pilot.pause()
            assert app.transcript.expanded == {1}


async def _quit(app, pilot) -> None:
    app.source_view.focus()
    await pilot.press("q")
    await pilot.pause()


class TestApply:
    async def test_apply_failure_is_shown_not_lost(self, make_repo, tmp_path):
        """`w` that cannot write the original says so (console + notification) and the
        app keeps running; nothing is reported as applied."""
        repo = make_repo({"pkg/calc.py": CALC, "test_calc.py": TESTS.replace("from calc",
                                                                               "from pkg.calc")})
        session = Session(RepoEnv(repo, entrypoint=ENTRYPOINT), trajectory_path=tmp_path / "t.jsonl")
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.episode_screen.act(ToolCall("rewrite", {"path": "pkg/calc.py", "start": 1, "end": 1,
                                         "new_code": "def average(xs):  # edited"}))
            await settle(app, pilot)
            # Outside the session, the folder became a file: nothing can be written there.
            (repo / "pkg" / "calc.py").unlink()
            (repo / "pkg").rmdir()
            (repo / "pkg").write_text("mine\n")
            await pilot.press("w")
            await pilot.pause()
            await pilot.press("y")
            await settle(app, pilot)
            assert "patch not applied" in console_text(app)
            assert app.episode_screen._applied_patch is None
            assert (repo / "pkg").read_text() == "mine\n"
            await _quit(app, pilot)
        assert session.done

    async def test_apply_keeps_an_outside_edit(self, calc_session, calc_repo):
        """A line edited in the original outside the session survives `w`: merged, or the
        apply is refused and said so."""
        session = calc_session()
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5,
                                         "new_code": "    return total / len(xs)"}))
            await settle(app, pilot)
            mine = CALC.replace("total = 0", "total = 0  # mine")
            (calc_repo / "calc.py").write_text(mine)
            await pilot.press("w")
            await pilot.pause()
            await pilot.press("y")
            await settle(app, pilot)
            text = (calc_repo / "calc.py").read_text()
            assert "# mine" in text
            assert "len(xs)\n" in text or "patch not applied" in console_text(app)
            await _quit(app, pilot)


@pytest.fixture
def agent_session(calc_session, tmp_path, llm_server):
    def make(script, mode="approve", tools=None):
        llm_server.script(script)
        kwargs = {"tools": tools} if tools else {}
        return calc_session(stub_agent(llm_server), mode, tmp_path / "a.jsonl", **kwargs)
    return make


USAGE = {"prompt_tokens": 100, "completion_tokens": 10}


class TestAgentKeys:
    async def test_llm_error_backs_off(self, agent_session, llm_server, monkeypatch):
        """An LLM error is shown once, not re-asked in a loop; keys stay live; m retries."""
        session = agent_session([
            {"status": 400, "message": "model is confused"},
            {"content": "Look.", "usage": USAGE,
             "tool_calls": [{"name": "view", "arguments": {"path": "calc.py"}}]}])
        app = DgymApp(session=session)
        # no automatic retry while the test runs
        monkeypatch.setattr(LiveScreen, "AGENT_RETRY", (3600.0,))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            for _ in range(20):
                await pilot.pause()
            assert len(llm_server.requests) == 1 and not app.busy
            await pilot.press("question_mark")  # `?` lists space (pause), too
            await pilot.pause()
            rows = [row for _title, section in app.screen.sections for row in section]
            assert any(key == "space" for key, _ in rows)
            await pilot.press("escape")
            panel = app.query_one("#approve")
            assert panel.has_class("-shown") and "model is confused" in str(
                panel.query_one("#approve-action").render())
            app.source_view.focus()
            await pilot.press("x")  # keys live: the person's own eval runs
            await settle(app, pilot)
            assert session.turns[-1].action.name == "eval" and len(llm_server.requests) == 1
            await pilot.press("m")  # retry now
            await settle(app, pilot)
            assert len(llm_server.requests) == 2
            assert panel.proposal is not None and panel.proposal.action.name == "view"
            await _quit(app, pilot)

    async def test_reject_key_and_pdb_r_do_not_clash(self, agent_session):
        """With a proposal pending, `r` is pdb's return (source focused), `R` rejects; the
        tokens of proposals dropped by a manual step or by `t` count."""
        session = agent_session([
            {"content": "Break.", "usage": USAGE,
             "tool_calls": [{"name": "pdb", "arguments": {"command": "b calc.py:4"}}]},
            {"content": "Again.", "usage": USAGE,
             "tool_calls": [{"name": "eval", "arguments": {}}]},
            {"content": "Once more.", "usage": USAGE,
             "tool_calls": [{"name": "eval", "arguments": {}}]}])
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            shown = {k for k, b in app.screen.active_bindings.items() if b.binding.show}
            assert {"a", "e", "R", "t", "g"} <= shown and "r" not in shown
            app.source_view.focus()
            await pilot.press("r")
            await settle(app, pilot)
            assert session.turns[-1].action.arguments == {"command": "r"}
            assert session.turns[-1].decision == "manual"
            assert session.pending is not None  # the agent proposes again after the step
            await pilot.press("R")
            await pilot.pause()
            assert type(app.screen).__name__ == "RejectScreen"
            app.screen.query_one("Input").value = "no"
            await pilot.press("enter")
            await settle(app, pilot)
            assert session.turns[-1].decision == "rejected"
            assert session.pending is not None
            await pilot.press("t")  # the eval proposal is dropped: its tokens still count
            await pilot.pause()
            assert "330 tok" in app.status.text
            await pilot.press("colon", *"eval", "enter")  # console focused: `:` is harmless
            await settle(app, pilot)
            assert session.turns[-1].action.name == "eval"
            await pilot.press("escape")
            await _quit(app, pilot)
        assert session.footer["usage"]["prompt_tokens"] == 300

    async def test_keys_after_submit(self, agent_session):
        """After submit the footer offers no take over / pause; a pdb key says why nothing
        runs."""
        session = agent_session([
            {"content": "Done.", "usage": USAGE,
             "tool_calls": [{"name": "submit", "arguments": {}}]}])
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            await pilot.press("a")
            await settle(app, pilot)
            assert session.done
            shown = {k for k, b in app.screen.active_bindings.items() if b.binding.show}
            assert not shown & {"t", "g", "space", "a", "R", "m", "x"}, shown
            app.source_view.focus()
            await pilot.press("n")
            await pilot.pause()
            assert "the episode is over (submitted)" in console_text(app)
            assert len(session.turns) == 1
            await _quit(app, pilot)


class TestHumanHints:
    async def test_m_without_agent_and_help(self, calc_session):
        """`m` without --agent says why; `?` and the console accept the JSON new_code form."""
        session = calc_session()
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            app.source_view.focus()
            await pilot.press("m")
            await pilot.pause()
            assert "--agent NAME --llm NAME" in console_text(app)
            await pilot.press("question_mark")
            await pilot.pause()
            rows = [row for _title, section in app.screen.sections for row in section]
            help_text = " ".join(text for _key, text in rows)
            assert '"new_code": "a = 1\\nb = 2"' in help_text
            await pilot.press("escape")
            console_input = app.query_one("#console-input")
            console_input.focus()
            console_input.value = ('rewrite {"path": "calc.py", "start": 5, "end": 5, '
                                   '"new_code": "    n = len(xs)\\n    return total / n"}')
            await pilot.press("enter")
            await settle(app, pilot)
            assert app.source_view.lines[4:6] == ["    n = len(xs)", "    return total / n"]
            await pilot.press("escape")
            await _quit(app, pilot)

    async def test_zero_tests_hint(self, make_repo, tmp_path):
        """A folder whose tests are in test.py scores 0/0: the app says what to pass."""
        repo = make_repo({"calc.py": CALC, "test.py": TESTS})
        session = Session(RepoEnv(repo, entrypoint=ENTRYPOINT), trajectory_path=tmp_path / "t.jsonl")
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert "--entrypoint 'python -m pytest -q -p no:cacheprovider test.py'" in \
                console_text(app)
            await _quit(app, pilot)

    async def test_frame_after_an_edit_while_stopped(self, calc_session):
        """A rewrite while stopped drops the stale ▶; the next `n` goes back to the
        breakpoint (the restarted pdb would otherwise step in pytest's __main__)."""
        session = calc_session()
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            view = app.source_view
            view.focus()
            await pilot.press("b")
            await settle(app, pilot)
            await pilot.press("c")
            await settle(app, pilot)
            assert view.frame_line == 5
            app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 2, "end": 2,
                                         "new_code": "    total = 0  # start"}))
            await settle(app, pilot)
            assert view.frame_line is None and "pdb restarts" in console_text(app)
            view.focus()
            await pilot.press("n")
            await settle(app, pilot)
            assert session.turns[-1].action.arguments == {"command": "c"}
            assert session.env.frame == ("calc.py", 5) and view.frame_line == 5
            await _quit(app, pilot)
