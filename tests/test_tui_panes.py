"""The pudb-like panes and the typed session messages, through the real app (Pilot).

Variables, stack and breakpoints come from pdb through structured inspection
(never the agent's observation); the UI thread never reads the environment."""

from __future__ import annotations

import json
import threading

from tui_helpers import CALC, FIX, SIZE, records, settle, stub_agent

from dgym_tui.core.fs.workspace import Workspace
from dgym_tui.tui.app import DgymApp


async def _press_on(app, pilot, widget, *keys) -> None:
    """Focus ``widget`` and press ``keys`` one by one, each step run to its end."""
    for key in keys:
        widget.focus()
        await pilot.press(key)
        await settle(app, pilot)


class TestDebugPanes:
    async def test_variables_stack_breakpoints(self, calc_session, tmp_path, monkeypatch):
        """b, c: the variables pane shows the locals (changed ones marked after n), the
        stack selects the caller (pdb `u 1`, recorded), the breakpoints pane lists the hit
        count and disables / deletes; no workspace / patch call runs on the UI thread."""
        ui_calls: list[str] = []
        main = threading.main_thread()
        for name in ("files", "patch", "read_text", "apply_to_source"):
            original = getattr(Workspace, name)

            def spy(self, *a, _original=original, _name=name, **k):
                if threading.current_thread() is main:
                    ui_calls.append(_name)
                return _original(self, *a, **k)

            monkeypatch.setattr(Workspace, name, spy)
        out = tmp_path / "t.jsonl"
        session = calc_session(out=out)
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert app.query_one("#side").active == "tab-debug"  # human: the debug tab
            view = app.source_view
            view.go_to(4)
            await _press_on(app, pilot, view, "b", "c")
            variables = app.query_one("#variables")
            assert variables.shown["total"] == "0" and variables.shown["x"] == "4"
            assert variables.shown["xs"] == "[4]"
            where = str(app.query_one("#debug-where").render())
            assert "average · calc.py:4" in where
            await _press_on(app, pilot, view, "n")
            assert variables.shown["total"] == "4" and "total" in variables.changed
            # the observation the agent would read holds no inspection
            assert "dgym-inspect" not in session.turns[-1].result.observation
            stack = app.query_one("#stack")
            assert stack.inspection.frame.function == "average"
            stack.focus()
            await pilot.press("down", "enter")  # the caller: test_single
            await settle(app, pilot)
            assert session.turns[-1].action.arguments == {"command": "u 1"}
            assert app.query_one("#stack").inspection.frame.function == "test_single"
            assert "average" not in app.query_one("#variables").shown
            bps = app.query_one("#breakpoints")
            [row] = bps.rows_shown
            assert (row.path, row.line, row.hits, row.enabled) == ("calc.py", 4, 1, True)
            await _press_on(app, pilot, bps, "enter")
            assert session.turns[-1].action.arguments == {"command": f"disable {row.number}"}
            assert bps.rows_shown[0].enabled is False
            await _press_on(app, pilot, bps, "delete")
            assert session.turns[-1].action.arguments == {"command": "cl calc.py:4"}
            assert bps.rows_shown == [] and view.breakpoints == {}
            await _press_on(app, pilot, app.query_one("#variables"), "v")  # globals
            assert "average" in app.query_one("#variables").shown
            view.focus()
            await pilot.press("q")
            await pilot.pause()
        assert ui_calls == []
        steps = [r for r in records(out) if r["type"] == "step"]
        assert all("dgym-inspect" not in r["observation"] for r in steps)
        assert len(steps) == 6  # b, c, n, u 1, disable, cl: nothing hidden was recorded


    async def test_click_selects_the_clicked_frame(self, calc_session):
        """A click on the unfocused stack pane selects the frame under the mouse (the focus
        it gives the pane must not move the rows: it selected the frame above before)."""
        session = calc_session()
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            view = app.source_view
            view.go_to(4)
            await _press_on(app, pilot, view, "b", "c")
            stack = app.query_one("#stack")
            assert not stack.has_focus
            await pilot.click("#stack", offset=(4, 1))  # row 1: test_single
            await settle(app, pilot)
            assert session.turns[-1].action.arguments == {"command": "u 1"}
            assert stack.inspection.frame.function == "test_single"
            view.focus()
            await pilot.press("q")
            await pilot.pause()


class TestNavigation:
    async def test_goto_search_frame_and_completion(self, calc_session):
        """`:N` goes to a line, `G` to the last, `/text` searches with `;` / `,` repeating
        (n stays pdb's next), `.` jumps back to the frame, the console completes the
        frame's names."""
        session = calc_session()
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            view = app.source_view
            console_input = app.query_one("#console-input")
            view.focus()
            await pilot.press("colon", "2", "enter")
            assert view.cursor_line == 2 and view.has_focus
            await pilot.press("G")
            assert view.cursor_line == 5
            await pilot.press("slash")
            assert console_input.has_focus and console_input.value == "/"
            await pilot.press(*"total", "enter")
            assert view.cursor_line == 2 and view.has_focus  # wrapped around
            await pilot.press("semicolon")
            assert view.cursor_line == 4
            await pilot.press("comma")
            assert view.cursor_line == 2
            assert session.turns == []  # navigation is not an action
            view.go_to(4)
            await _press_on(app, pilot, view, "b", "c")
            view.go_to(1)
            await pilot.press("full_stop")
            assert view.cursor_line == 4
            assert await console_input.suggester.get_suggestion("p to") == "p total"
            await pilot.press("q")
            await pilot.pause()

    async def test_small_terminal(self, calc_session):
        """At 80x24 the tree and the side column start hidden ([ / ] show them), z zooms
        the focused pane, and the console wraps long lines inside its width."""
        session = calc_session()
        app = DgymApp(session=session)
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(app, pilot)
            tree, side = app.query_one("#tree"), app.query_one("#side")
            assert not tree.display and not side.display
            assert app.source_view.size.width >= 70
            app.source_view.focus()
            await pilot.press("right_square_bracket")
            await pilot.pause()
            assert side.display and side.size.width >= 30
            await pilot.press("right_square_bracket", "left_square_bracket")
            await pilot.pause()
            assert tree.display and not side.display
            await pilot.press("z")
            await pilot.pause()
            assert app.screen.maximized is app.source_view
            await pilot.press("z")
            await pilot.pause()
            assert app.screen.maximized is None
            log = app.pdb_console.log_widget  # 62 cells wide now: narrower than 78
            before = len(log.lines)
            long = "[" + ", ".join(str(i) for i in range(40)) + "]"
            app.pdb_console.write(long)
            await pilot.pause()
            mine = log.lines[before:]
            assert "".join(strip.text for strip in mine).replace(" ", "") == long.replace(" ", "")
            assert max(strip.cell_length for strip in mine) <= log.scrollable_content_region.width
            await pilot.press("q")
            await pilot.pause()


def _rows(view) -> list[str]:
    """The source view's rows as text (the calc file fits on screen)."""
    return [view.render_line(y).text.rstrip() for y in range(view.size.height)]


class TestProposalPreview:
    async def test_rewrite_diff_and_breakpoint_mark_until_decided(self, calc_session,
                                                                  llm_server):
        """Approve mode: a proposed `rewrite` shows in the source pane as a diff (the old
        line `-`, the new ones `+` under it, later lines keep their numbers) and goes away
        on approve; a proposed `b calc.py:4` shows `○` at line 4 and goes on reject; a
        proposed `b 2` (the frame's file) goes on edit, and the edited breakpoint is real."""
        usage = {"prompt_tokens": 100, "completion_tokens": 10}
        new_code = "    if not xs:\n        return 0\n" + FIX.strip("\n") + "\n"
        llm_server.script([
            {"content": "Fix it.", "usage": usage, "tool_calls": [{"name": "rewrite",
             "arguments": {"path": "calc.py", "start": 5, "end": 5, "new_code": new_code}}]},
            {"content": "Break.", "usage": usage,
             "tool_calls": [{"name": "pdb", "arguments": {"command": "b calc.py:4"}}]},
            {"content": "Break.", "usage": usage,
             "tool_calls": [{"name": "pdb", "arguments": {"command": "b 2"}}]},
            {"content": "Run.", "usage": usage, "tool_calls": [{"name": "eval", "arguments": {}}]},
        ])
        session = calc_session(stub_agent(llm_server), "approve")
        app = DgymApp(session=session)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            view = app.source_view
            assert view.path == "calc.py" and view.preview is not None
            rows = _rows(view)
            assert rows[4].startswith("-") and "len(xs[1:])" in rows[4]
            assert [r[0] for r in rows[5:8]] == ["+", "+", "+"]
            assert "if not xs:" in rows[5] and "len(xs)" in rows[7]
            assert not any(ch.isdigit() for ch in rows[5].split("│")[0])  # not in the file yet
            assert "5 │" in rows[4] and rows[8] == ""
            assert session.env.workspace.read_text("calc.py") == CALC  # only a preview
            await pilot.press("a")
            await settle(app, pilot)
            assert session.turns[-1].action.name == "rewrite"
            assert view.lines[4] == "    if not xs:" and "len(xs)" in view.lines[6]
            # the next proposal (b calc.py:4) is previewed in the gutter
            assert view.preview is not None and view.preview.line == 4
            rows = _rows(view)
            assert rows[3].startswith("○") and not any(r.startswith(("-", "+")) for r in rows)
            assert view.breakpoints == {}
            await pilot.press("R")
            await pilot.pause()
            assert view.preview is not None  # still shown while the note is written
            app.screen.query_one("Input").value = "not there"
            await pilot.press("enter")
            await settle(app, pilot)
            assert session.turns[-1].decision == "rejected"
            assert view.breakpoints == {} and not _rows(view)[3].startswith("○")
            # `b 2`: pdb is not stopped, so a bare line means no file; no preview then
            assert view.preview is None
            await pilot.press("e")
            await pilot.pause()
            app.screen.query_one("TextArea").text = json.dumps(
                {"name": "pdb", "arguments": {"command": "b calc.py:3"}})
            await pilot.press("ctrl+s")
            await settle(app, pilot)
            assert session.turns[-1].decision == "edited"
            assert view.breakpoints == {3: None} and _rows(view)[2].startswith("●")
            assert view.preview is None and app.query_one("#approve").proposal.action.name == "eval"
            await pilot.press("t")
            await pilot.pause()
            await pilot.press("q")
            await pilot.pause()
