"""UI-free helpers of the app, the widgets in a bare app, themes and the command line."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from dgym_tui.tui.actions import console_action, pdb_call
from dgym_tui.tui.locate import first_source_file, locate_failure, match_file
from dgym_tui.tui.screens.modals import parse_action_json
from dgym_tui.tui.themes import ThemeFileError, load_theme, load_themes
from dgym_tui.tui.widgets.file_tree import FileTree
from dgym_tui.tui.widgets.source_view import SourceView

FILES = ["pkg/__init__.py", "pkg/cart.py", "tests/test_cart.py", "conftest.py"]

PYTEST_OUTPUT = """\
F.                                                                       [100%]
=================================== FAILURES ===================================
__________________________________ test_total __________________________________

    def test_total():
>       assert total([1, 2]) == 3

tests/test_cart.py:5: 
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

    def total(xs):
>       return helper(xs) + 1

pkg/cart.py:12: in total
    return helper(xs) + 1
/usr/lib/python3/site-packages/other/lib.py:3: in helper
    raise ValueError
E   ValueError

pkg/cart.py:30: ValueError
__________________________________ test_other __________________________________
tests/test_cart.py:9: AssertionError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total - ValueError
"""


def test_locate_first_failure_enters_repo_code():
    assert locate_failure(PYTEST_OUTPUT, FILES) == ("pkg/cart.py", 12)


def test_locate_plain_traceback_with_container_paths():
    out = ('Traceback (most recent call last):\n'
           '  File "/usr/lib/python3.11/runpy.py", line 198, in _run_module_as_main\n'
           '  File "/workspace/tests/test_cart.py", line 7, in <module>\n'
           '  File "/workspace/pkg/cart.py", line 21, in total\n'
           'ZeroDivisionError: division by zero\n')
    assert locate_failure(out, FILES) == ("pkg/cart.py", 21)


def test_locate_falls_back_to_test_line_and_none():
    out = "tests/test_cart.py:9: AssertionError\n1 failed in 0.1s\n"
    assert locate_failure(out, FILES) == ("tests/test_cart.py", 9)
    assert locate_failure("2 passed in 0.01s", FILES) is None
    assert locate_failure("other/lib.py:3: in helper", FILES) is None


def test_match_file_and_first_source_file():
    assert match_file("/tmp/dgym-x1/pkg/cart.py", FILES) == "pkg/cart.py"
    assert match_file("./pkg/cart.py", FILES) == "pkg/cart.py"
    assert match_file("/elsewhere/nothing.py", FILES) is None
    assert first_source_file(FILES) == "pkg/__init__.py"
    assert first_source_file(["tests/test_a.py", "README.md"]) == "tests/test_a.py"
    assert first_source_file([]) is None


def test_console_lines_become_tool_calls():
    tools = ["view", "eval", "pdb", "rewrite"]
    assert console_action("p total", tools).to_dict()["arguments"] == {"command": "p total"}
    assert console_action("pdb view", tools).arguments == {"command": "view"}
    call = console_action('rewrite path=a.py start=3 end=3 new_code="x = 1"', tools)
    assert call.name == "rewrite"
    assert call.arguments["path"] == "a.py" and call.arguments["new_code"] == "x = 1"
    assert console_action("eval", tools).name == "eval"
    with pytest.raises(ValueError):
        console_action('rewrite path="a.py', tools)
    assert pdb_call("b a.py:3").arguments == {"command": "b a.py:3"}


def test_edit_dialog_json():
    call = parse_action_json('{"name": "pdb", "arguments": {"command": "n"}}', "call_1")
    assert (call.name, call.arguments, call.id) == ("pdb", {"command": "n"}, "call_1")
    for bad in ("{", "[]", '{"arguments": {}}', '{"name": "x", "arguments": 3}'):
        with pytest.raises(ValueError):
            parse_action_json(bad)


def test_themes_load_dark_and_light(tmp_path):
    themes = {t.name: t for t in load_themes()}
    assert themes["dgym-dark"].dark is True and themes["dgym-light"].dark is False
    bad = tmp_path / "bad.toml"
    bad.write_text("name = 'x'\nprimary = '#fff'\ncolour = 'red'\n")
    with pytest.raises(ThemeFileError, match="unknown theme keys"):
        load_theme(bad)
    bad.write_text("name: x\nprimary: '#fff'\n")  # YAML, not TOML
    with pytest.raises(ThemeFileError, match="cannot read theme"):
        load_theme(bad)
    bad.write_text("name = 'x'\n")
    with pytest.raises(ThemeFileError, match="at least 'name' and 'primary'"):
        load_theme(bad)


class ViewApp(App):
    def compose(self) -> ComposeResult:
        yield SourceView(id="source")


async def test_source_view_renders_only_visible_lines_of_a_big_file():
    text = "\n".join(f"value_{i} = {i}  # line {i + 1}" for i in range(10_000)) + "\n"
    app = ViewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(SourceView)
        view.load("big.py", text, 5000)
        view.set_marks({5000: None, 5003: "i > 3"}, 5001)
        await pilot.pause()
        assert len(view.lines) == 10_000
        assert view.virtual_size.height == 10_000
        # Only the rows on screen were turned into segments.
        assert 0 < len(view._cache) <= 90
        top = int(view.scroll_offset.y)
        assert top <= 4999 < top + 30
        row = view.render_line(4999 - top).text
        assert row.startswith("●") and "5000 │value_4999 = 4999" in row
        assert view.render_line(5002 - top).text.startswith("◆")  # conditional
        assert view.render_line(5000 - top).text[1] == "▶"  # the frame
        view.focus()
        await pilot.press("end")
        assert view.cursor_line == 10_000
        await pilot.press("pageup", "up")
        assert view.cursor_line < 10_000
        assert len(view._cache) <= 200


async def test_source_view_lexes_a_file_shown_again_once(monkeypatch):
    """u / d between two files: the file shown before is drawn from its kept lexed lines;
    a changed text is lexed again; a new theme colours the kept lines again."""
    from dgym_tui.tui.widgets import source_view

    lexed = []

    def counting(lexer, text):
        lexed.append(text.split("\n", 1)[0])
        return real(lexer, text)

    real = source_view.lex_lines
    monkeypatch.setattr(source_view, "lex_lines", counting)
    app = ViewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(SourceView)
        for path, text in [("a.py", "a = 1\n"), ("b.py", "b = 2\n"), ("a.py", "a = 1\n"),
                           ("b.py", "b = 2\n"), ("a.py", "a = 3\n")]:
            view.load(path, text, 1)
            await pilot.pause()
            assert path[0] in view.render_line(0).text
        assert lexed == ["a = 1", "b = 2", "a = 3"]
        view.load("b.py", "b = 2\n", 1)
        await pilot.pause()
        dark = list(view.render_line(0))
        view.load("a.py", "a = 3\n", 1)
        app.theme = "textual-light" if app.current_theme.dark else "textual-dark"
        await pilot.pause()
        view.load("b.py", "b = 2\n", 1)
        await pilot.pause()
        assert list(view.render_line(0)) != dark and "b = 2" in view.render_line(0).text
        assert lexed == ["a = 1", "b = 2", "a = 3"]


async def test_source_view_keeps_drawn_rows_until_they_change():
    """A row drawn before is reused while nothing it shows changed (u / d back to a file
    redraws only the rows whose arrow or cursor moved); a breakpoint, the frame, the
    cursor, a selection, a theme or style change draw it again."""
    app = ViewApp()
    async with app.run_test(size=(100, 30)) as pilot:
        view = app.query_one(SourceView)
        view.load("a.py", "a = 1\nb = 2\nc = 3\n", 1)
        await pilot.pause()
        row = view.render_line(1)
        view.load("b.py", "x = 1\n", 1)
        await pilot.pause()
        view.load("a.py", "a = 1\nb = 2\nc = 3\n", 1)
        await pilot.pause()
        assert view.render_line(1) is row  # kept with the file
        view.set_marks({2: None}, None)
        assert view.render_line(1).text.startswith("●")
        view.set_marks({2: "b > 1"}, 2, follow=False)  # the cursor stays on line 1
        assert view.render_line(1).text.startswith("◆▶")
        view.set_marks({}, None)
        assert view.render_line(1) is row
        view.go_to(2)
        await pilot.pause()
        assert list(view.render_line(1)) != list(row)  # the cursor's highlight
        app.theme = "textual-light" if app.current_theme.dark else "textual-dark"
        await pilot.pause()
        assert view.render_line(1) is not row and "b = 2" in view.render_line(1).text


async def test_stack_pane_new_prompt_of_another_height():
    """A frame's row that wraps to another number of lines after a step (a longer line
    number in a narrow pane) moves the rows below it: OptionList's full redraw is used."""
    from rich.text import Text
    from textual.widgets.option_list import Option

    from dgym_tui.tui.widgets.stack import StackPane

    class StackApp(App):
        CSS = "StackPane { width: 20; height: 6; }"

        def compose(self) -> ComposeResult:
            yield StackPane(id="stack")

    app = StackApp()
    async with app.run_test(size=(40, 10)) as pilot:
        stack = app.query_one(StackPane)
        stack.add_options([Option(Text("f  a.py:9")), Option(Text("g  b.py:2"))])
        await pilot.pause()
        stack.replace_option_prompt_at_index(0, Text("f  a.py:10"))  # same height
        await pilot.pause()
        assert [stack.render_line(y).text.strip() for y in range(2)] == ["f  a.py:10", "g  b.py:2"]
        stack.replace_option_prompt_at_index(0, Text("f  a_very_long_name.py:11"))  # 2 lines
        await pilot.pause()
        rows = [stack.render_line(y).text.strip() for y in range(stack.size.height)]
        below = rows.index("g  b.py:2")  # moved down by the wrapped row
        assert below > 1 and "".join(rows[:below]).replace(" ", "") == "fa_very_long_name.py:11"


async def test_source_view_gutter_click_and_pdb_keys():
    messages = []

    class Recorder(ViewApp):
        def on_source_view_breakpoint_toggle(self, m):
            messages.append(("toggle", m.path, m.line, m.present))

        def on_source_view_pdb_command(self, m):
            messages.append(("pdb", m.command))

    app = Recorder()
    async with app.run_test(size=(80, 20)) as pilot:
        view = app.query_one(SourceView)
        view.load("a.py", "x = 1\ny = 2\nz = 3\n", 1)
        view.set_marks({2: None}, None)
        view.focus()
        await pilot.click(SourceView, offset=(1, 1))  # gutter of line 2
        await pilot.press("down", "down", "b", "n", "s", "c", "r", "u", "d")
        await pilot.pause()
    assert messages[0] == ("toggle", "a.py", 2, True)
    assert ("toggle", "a.py", 3, False) in messages
    assert [m[1] for m in messages if m[0] == "pdb"] == ["n", "s", "c", "r", "u", "d"]


async def test_source_view_scrolls_long_lines():
    app = ViewApp()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(SourceView)
        view.load("long.py", "x = '" + "a" * 200 + "'\n", 1)
        view.focus()
        await pilot.pause()
        await pilot.press("right", "right")
        await pilot.pause()
        assert view.scroll_offset.x == 8
        assert view.render_line(0).text.split("│", 1)[1].startswith("aaaa")
        await pilot.press("left", "left", "left")
        assert view.scroll_offset.x == 0


async def test_file_tree_select_path_expands_only_closed_folders():
    """Opening a file selects it in the tree; when its folders are open already the cursor
    moves at once (a pdb stop in another file: no whole-tree redraw, no frame after)."""
    expanded = []

    class TreeApp(App):
        def compose(self) -> ComposeResult:
            yield FileTree(id="tree")

        def on_tree_node_expanded(self, event) -> None:
            expanded.append(str(event.node.label))

    app = TreeApp()
    async with app.run_test(size=(40, 20)) as pilot:
        tree = app.query_one(FileTree)
        tree.set_files([*FILES, "pkg/sub/deep.py"])
        await pilot.pause()
        expanded.clear()
        tree.select_path("pkg/sub/deep.py")  # in a closed folder: moved after the refresh
        for _ in range(50):  # the refresh comes at the screen's next update (later at load)
            await pilot.pause()
            if tree.cursor_node is not None and tree.cursor_node.data == "pkg/sub/deep.py":
                break
        assert tree.cursor_node is not None and tree.cursor_node.data == "pkg/sub/deep.py"
        assert expanded == ["sub/"]
        tree.select_path("conftest.py")
        assert tree.cursor_node.data == "conftest.py"  # at once
        tree.select_path("pkg/sub/deep.py")
        assert tree.cursor_node.data == "pkg/sub/deep.py"
        await pilot.pause()
        assert expanded == ["sub/"]


def test_every_key_action_has_its_handler_and_conditions():
    """Each KeySpec of the table is handled by every screen that has it, and names only
    conditions that screen's key_state() knows (a typo would leave a key dead)."""
    from dgym_tui.tui.keys import KEYS
    from dgym_tui.tui.live.screen import LiveScreen
    from dgym_tui.tui.replay.screen import ReplayScreen

    conditions = {"running", "started", "pending", "agent", "no_agent", "not_human",
                  "not_auto", "auto", "can_apply"}
    for spec in KEYS:
        screens = {"live": [LiveScreen], "replay": [ReplayScreen],
                   "both": [LiveScreen, ReplayScreen]}[spec.where]
        for screen in screens:
            assert callable(getattr(screen, f"action_{spec.name}", None)), (screen, spec.action)
            assert spec in screen.SPECS
        assert set(spec.when) <= conditions, spec
    assert {s.action for s in LiveScreen.SPECS} & {"fork", "replay_step(1)"} == set()
    assert "branch" not in ReplayScreen.SPEC_OF
