"""A stop at a breakpoint changes its hit count in place (real pdb, Pilot).

The breakpoints table was cleared and filled again at each stop that counted a hit: every
cell and the header drawn again (a tenth of the first ``c``'s frame). ``bench/bench_c.py
--app-only`` measures the stop; these tests pin down what is drawn and that the table
shows what a rebuilt one does.
"""

from __future__ import annotations

from tui_helpers import SIZE, settle

from dgym_tui.tui.actions import pdb_call
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.widgets.breakpoints import BreakpointsPane, Row


def _lines(pane: BreakpointsPane) -> list[list[tuple[str, object]]]:
    """The pane's rows on screen as (text, style) pairs."""
    return [[(segment.text, segment.style) for segment in pane.render_line(y)]
            for y in range(pane.size.height)]


def _rebuilt(pane: BreakpointsPane) -> list[list[tuple[str, object]]]:
    """The pane's rows when its table is built anew from the rows it shows."""
    rows, pane.rows_shown = pane.rows_shown, []
    pane.show_rows(rows)
    return _lines(pane)


async def test_a_stop_changes_the_hit_cell_in_place(calc_session, monkeypatch):
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.query_one(BreakpointsPane)
        for command in ("b test_calc.py:5", "b calc.py:2"):
            app.episode_screen.act(pdb_call(command))
            await settle(app, pilot)
        assert [row.hits for row in pane.rows_shown] == [0, 0]
        _lines(pane)  # drawn once
        cleared, drawn = [], []
        clear, render_cell = BreakpointsPane.clear, BreakpointsPane._render_cell
        monkeypatch.setattr(BreakpointsPane, "clear",
                            lambda self, *a, **k: cleared.append(1) or clear(self, *a, **k))

        def spy_render_cell(self, row_index, *args, **kwargs):
            drawn.append(row_index)
            return render_cell(self, row_index, *args, **kwargs)

        monkeypatch.setattr(BreakpointsPane, "_render_cell", spy_render_cell)
        app.episode_screen.act(pdb_call("c"))  # the first c: test_calc.py:5
        await settle(app, pilot)
        assert app.source_view.frame_line == 5
        assert [row.hits for row in pane.rows_shown] == [1, 0]
        shown = _lines(pane)
        assert cleared == [] and set(drawn) == {0}  # the header (-1), row 1 kept
        assert "".join(text for text, _ in shown[1]).rstrip().endswith("1")
        monkeypatch.setattr(BreakpointsPane, "_render_cell", render_cell)
        assert _rebuilt(pane) == shown


async def test_a_wider_hit_count_rebuilds_the_table(calc_session):
    """A count wider than the column (or one narrower that the column was sized for) lays
    the table out anew, as a rebuild sizes its columns."""
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        pane = app.query_one(BreakpointsPane)
        pane.show_rows([Row("calc.py", 2, None, hits=0, number=1)])
        for hits in (12345, 7, 8):
            rows = [Row("calc.py", 2, None, hits=hits, number=1)]
            pane.show_rows(rows)
            await pilot.pause()
            shown = _lines(pane)
            assert pane.rows_shown == rows and _rebuilt(pane) == shown
            assert str(hits) in "".join(text for text, _ in shown[1])
