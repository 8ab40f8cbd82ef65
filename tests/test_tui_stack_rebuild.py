"""A stop in another test rebuilds the stack pane with the options of the frames it keeps
(real pdb, Pilot).

A test runner's stack changes its innermost frames from one test to the next and keeps the
runner's twenty or thirty frames below them: their options keep their prompts' visuals
(Textual's conversion of each row, a part of the stop's frame). ``bench/bench_c.py
--app-only`` measures the stop; this test pins down what is kept and that the rows shown
are those of a list built anew.
"""

from __future__ import annotations

from tui_helpers import SIZE, settle, stop_at

from dgym_tui.tui.actions import pdb_call
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.widgets.stack import StackPane


def _lines(stack: StackPane) -> list[list[tuple[str, object]]]:
    """The pane's rows on screen as (text, style) pairs."""
    return [[(segment.text, segment.style) for segment in stack.render_line(y)]
            for y in range(stack.size.height)]


async def test_another_tests_stop_keeps_the_runners_frames(calc_session):
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")  # in test_single
        stack = app.query_one(StackPane)
        before = {row: option for row, option in zip(stack._rows, stack.options, strict=True)}
        assert stack._rows[1].function == "test_single"
        app.episode_screen.act(pdb_call("c"))  # the same line, in test_three
        await settle(app, pilot)
        rows = stack._rows
        assert rows[1].function == "test_three" and len(rows) > 10
        kept = [row for row in rows if row in before]
        assert len(kept) == len(rows) - 1  # all but test_three's (average's line is the same)
        assert all(stack.options[rows.index(row)] is before[row] for row in kept)
        assert [option.id for option in stack.options] == [str(row.index) for row in rows]
        shown, highlighted = _lines(stack), stack.highlighted

        stack._rows = []  # the same stop on a list built anew: the same rows on screen
        stack.show_inspection(stack.inspection)
        await pilot.pause()
        assert not any(option is before.get(row) for row, option in zip(rows, stack.options, strict=True))
        assert stack.highlighted == highlighted and _lines(stack) == shown


async def test_the_rows_are_measured_at_the_width_left_by_the_scroll_bar(calc_session):
    """A stop whose stack is taller than the pane (its scroll bar appears): each frame's
    option has the rows its prompt wraps into at the width the pane has with the bar."""
    app = DgymApp(session=calc_session())
    async with app.run_test(size=(120, 36)) as pilot:  # the side column: a path wraps
        await stop_at(app, pilot, "calc.py:4")
        stack = app.query_one(StackPane)
        assert stack.show_vertical_scrollbar
        width = stack.scrollable_content_region.width
        wanted = [stack._get_visual(option).get_height(stack.styles, width)
                  for option in stack.options]
        assert max(wanted) > 1  # paths wrap at this size
        assert [stack._heights[index] for index in range(len(stack.options))] == wanted
        await pilot.pause()
        screen = [stack.render_line(y).text for y in range(stack.size.height)]
        for index, row in enumerate(stack._rows):  # each option wholly in view ends on
            first = stack._index_to_line[index]    # its line number
            if first + stack._heights[index] <= len(screen):
                text = "".join(screen[first:first + stack._heights[index]])
                assert text.replace(" ", "").endswith(f":{row.line}"), text
