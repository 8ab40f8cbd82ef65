"""The pudb-like panes and the typed session messages, through the real app (Pilot).

Variables, stack and breakpoints come from pdb through structured inspection
(never the agent's observation); the UI thread never reads the environment."""

from __future__ import annotations

import threading

from tui_helpers import ENTRYPOINT, SIZE, records, settle

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.workspace import Workspace
from dgym_tui.session import Session
from dgym_tui.tui.app import DgymApp


async def _press_on(app, pilot, widget, *keys) -> None:
    """Focus ``widget`` and press ``keys`` one by one, each step run to its end."""
    for key in keys:
        widget.focus()
        await pilot.press(key)
        await settle(app, pilot)


class TestDebugPanes:
    async def test_variables_stack_breakpoints(self, calc_repo, tmp_path, monkeypatch):
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
        session = Session(RepoEnv(calc_repo, entrypoint=ENTRYPOINT), trajectory_path=out)
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


class TestNavigation:
    async def test_goto_search_frame_and_completion(self, calc_repo, tmp_path):
        """`:N` goes to a line, `G` to the last, `/text` searches with `;` / `,` repeating
        (n stays pdb's next), `.` jumps back to the frame, the console completes the
        frame's names."""
        session = Session(RepoEnv(calc_repo, entrypoint=ENTRYPOINT),
                          trajectory_path=tmp_path / "t.jsonl")
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

    async def test_small_terminal(self, calc_repo, tmp_path):
        """At 80x24 the tree and the side column start hidden ([ / ] show them), z zooms
        the focused pane, and the console wraps long lines inside its width."""
        session = Session(RepoEnv(calc_repo, entrypoint=ENTRYPOINT),
                          trajectory_path=tmp_path / "t.jsonl")
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
