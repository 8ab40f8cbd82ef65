"""Editing code from the source view (E, V): one manual `rewrite` through the session."""

from __future__ import annotations

from tui_helpers import CALC, FIX, SIZE, records, settle

from dgym_tui.cli.tui import build_app, build_parser
from dgym_tui.core.types import ToolCall
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.screens.modals import CodeEditScreen, QuitScreen
from dgym_tui.tui.widgets.code_area import CodeArea

BUGGY = "        return max(1, len(self.items) // self.per_page)"
FIXED = "        return max(1, -(-len(self.items) // self.per_page))"


def _mini_app(tmp_path, name="edit.jsonl"):
    out = tmp_path / name
    app = build_app(build_parser().parse_args(["--task", "pagination", "--trajectory", str(out),
                                               "--no-apply-prompt"]))
    return app, out


async def _open(app, pilot, path: str, line: int) -> None:
    app.episode_screen.open_file(path, line)
    app.source_view.focus()
    await pilot.pause()


async def test_edit_the_buggy_line_then_eval_is_green(tmp_path):
    app, out = _mini_app(tmp_path)
    session = app.session
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert not session.initial.resolved
        ws = session.env.workspace
        line = ws.read_text("paging.py").splitlines().index(BUGGY) + 1
        await _open(app, pilot, "paging.py", line - 1)
        await pilot.press("j")  # the cursor line is the selection
        assert app.source_view.selection == (line, line)
        assert "Edit code" in [b.binding.description for b in app.active_bindings.values()]
        await pilot.press("E")
        await pilot.pause()
        assert isinstance(app.screen, CodeEditScreen)
        area = app.screen.query_one(CodeArea)
        assert area.text == BUGGY + "\n"
        assert any(name == "keyword" for _, _, name in area._highlights[0])  # `return`
        # Edit like a person: go to `len(` and wrap the division in -(-...).
        area.move_cursor((0, area.text.index("len(")))
        await pilot.press(*"-(-")
        area.move_cursor((0, area.text.index(")\n")))
        await pilot.press(")")
        assert area.text == FIXED + "\n"
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert not isinstance(app.screen, CodeEditScreen)
        assert ws.read_text("paging.py").splitlines()[line - 1] == FIXED
        assert app.source_view.lines[line - 1] == FIXED  # the view shows the new text
        console = "\n".join(line.text for line in app.pdb_console.log_widget.lines)
        assert "› rewrite" in console and "+" + FIXED in console  # action + diff observation
        assert "rewrite" in app.transcript.text
        turn = session.turns[-1]
        assert (turn.action.name, turn.decision, turn.actor) == ("rewrite", "manual", "human")
        assert turn.action.arguments == {"path": "paging.py", "start": line, "end": line,
                                         "new_code": FIXED + "\n"}
        await pilot.press("x")
        await settle(app, pilot)
        assert session.last.resolved, session.last.observation
        await pilot.press("q")
        await pilot.pause()
    steps = [r for r in records(out) if r["type"] == "step"]
    assert [(s["action"]["name"], s["decision"]) for s in steps] == [
        ("rewrite", "manual"), ("eval", "manual")]
    assert records(out)[-1]["resolved"] is True


async def test_visual_line_selection_and_escape_cancels(tmp_path):
    app, out = _mini_app(tmp_path)
    session = app.session
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        text = session.env.workspace.read_text("paging.py")
        await _open(app, pilot, "paging.py", 33)
        await pilot.press("V", "j", "j")
        view = app.source_view
        assert view.selecting and view.selection == (33, 35)
        await pilot.press("k")
        assert view.selection == (33, 34)
        await pilot.press("E")
        await pilot.pause()
        area = app.screen.query_one(CodeArea)
        assert area.text == "".join(text.splitlines(keepends=True)[32:34])
        area.insert("# x\n", (0, 0))
        await pilot.press("escape")  # cancels: nothing runs, nothing recorded
        await pilot.pause()
        assert not isinstance(app.screen, CodeEditScreen)
        await settle(app, pilot)
        assert session.turns == []
        assert session.env.workspace.read_text("paging.py") == text
        assert not view.selecting  # the selection ends with the editor
        await pilot.press("V", "j", "escape")  # escape also ends a selection
        assert not view.selecting and app.focused is view
        await pilot.press("q")
        await pilot.pause()


async def test_edit_refused_on_a_read_only_file(tmp_path):
    app, out = _mini_app(tmp_path)
    session = app.session
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        ws = session.env.workspace
        before = ws.read_text("test_pagination.py")
        await _open(app, pilot, "test_pagination.py", 3)
        await pilot.press("E")
        await pilot.pause()
        assert not isinstance(app.screen, CodeEditScreen)
        messages = [n.message for n in app._notifications]
        assert any("read-only" in m and "test_pagination.py" in m for m in messages), messages
        app.episode_screen.action_edit_code()  # the command palette's entry: refused the same way
        await settle(app, pilot)
        assert not isinstance(app.screen, CodeEditScreen)
        assert session.turns == []
        assert ws.read_text("test_pagination.py") == before
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Edit code [E]" in titles
        await pilot.press("q")
        await pilot.pause()
    assert [r for r in records(out) if r["type"] == "step"] == []


async def test_editor_numbers_lines_as_the_file_and_auto_indents(tmp_path):
    """The editor's gutter counts from the selection's first line (36, 37 for lines 36-37
    of the file, not 1, 2); enter starts the new line at the indentation of the line above,
    one level deeper after a ``:``."""
    app, out = _mini_app(tmp_path)
    session = app.session
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await _open(app, pilot, "paging.py", 36)
        await pilot.press("V", "j", "E")
        await pilot.pause()
        area = app.screen.query_one(CodeArea)
        assert area.line_number_start == 36
        gutters = [area.render_line(y).text.split("▊")[0].strip() for y in range(2)]
        assert gutters[0].startswith("36") and gutters[1].startswith("37"), gutters
        area.move_cursor((0, len(area.document[0])))  # end of `self.items = items`
        await pilot.press("enter", *"a = 1")
        assert area.document[1] == "        a = 1"  # the 8 spaces of line 36
        await pilot.press("enter", *"if a:", "enter", "b")
        assert area.document[2:4] == ["        if a:", "            b"]
        await pilot.press("escape")
        await settle(app, pilot)
        assert session.turns == []
        await pilot.press("q")
        await pilot.pause()


async def _closed(app, pilot) -> None:
    """Wait (at most 60 s) until the app closed its session on the way out."""
    for _ in range(600):
        if app.closed:
            return
        await pilot.pause(0.1)
    raise AssertionError("the app did not quit")


class TestQuitWithUnappliedFix:
    """q with a resolved fix that `w` did not write to the original asks first."""

    @staticmethod
    def _resolved(calc_session):
        return DgymApp(session=calc_session(tools=("view", "eval", "rewrite", "submit")))

    async def _fix(self, app, pilot):
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("eval", {}))
        await settle(app, pilot)
        assert app.session.last.resolved

    async def test_cancel_then_apply_and_quit(self, calc_repo, calc_session, tmp_path):
        """escape stays; w applies the fix to the original, then the app quits."""
        app = self._resolved(calc_session)
        async with app.run_test(size=SIZE) as pilot:
            await self._fix(app, pilot)
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, QuitScreen)
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, QuitScreen) and not app.closed
            await pilot.press("q")
            await pilot.pause()
            await pilot.press("w")
            await _closed(app, pilot)
        assert (calc_repo / "calc.py").read_text() == CALC.replace(
            "    return total / len(xs[1:])", FIX)
        assert records(tmp_path / "t.jsonl")[-1]["type"] == "footer"

    async def test_quit_anyway_keeps_the_original(self, calc_repo, calc_session, tmp_path):
        """q in the question quits without touching the original (the fix stays in the
        trajectory); an apply refused for an outside edit keeps the app open."""
        app = self._resolved(calc_session)
        async with app.run_test(size=SIZE) as pilot:
            await self._fix(app, pilot)
            mine = CALC.replace("len(xs[1:])", "max(1, len(xs))")
            (calc_repo / "calc.py").write_text(mine)  # an editor, outside the session
            await pilot.press("q")
            await pilot.pause()
            await pilot.press("w")  # refused: the same line changed outside
            await settle(app, pilot)
            assert not app.closed and not isinstance(app.screen, QuitScreen)
            assert (calc_repo / "calc.py").read_text() == mine
            await pilot.press("q")
            await pilot.pause()
            assert isinstance(app.screen, QuitScreen)
            await pilot.press("q")
            await _closed(app, pilot)
        assert (calc_repo / "calc.py").read_text() == mine
        footer = records(tmp_path / "t.jsonl")[-1]
        assert footer["type"] == "footer" and footer["resolved"] is True
        assert FIX.strip() in footer["patch"]
