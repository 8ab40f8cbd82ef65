"""The first stop at a breakpoint finds its file laid out ahead (real pdb, Pilot).

A ``b`` step has the breakpoint's file read and lexed in a worker while the app is idle,
and the rows of a stop there are drawn while pdb continues; the stop then only looks them
up.
``bench/bench_c.py`` measures the stop; these tests pin down that nothing is lexed or drawn
for it and that the screen is the one a stop without the work ahead draws.
"""

from __future__ import annotations

from tui_helpers import SIZE, settle

from dgym_tui.tui.actions import pdb_call
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.widgets import source_view
from dgym_tui.tui.widgets.source_view import SourceView


def _count_rows(monkeypatch) -> tuple[list[int], list[int]]:
    """(rows drawn while pdb continued, by :meth:`SourceView.draw_ahead`; rows drawn at
    any other time), as the file lines they show, from now on."""
    ahead, other, inside = [], [], []
    line_row = SourceView._line_row
    draw_ahead = getattr(SourceView, "draw_ahead", None)  # None before it existed

    def counted_line_row(self, *args):
        (ahead if inside else other).append(args[1])
        return line_row(self, *args)

    def counted_draw_ahead(self, *args):
        inside.append(True)
        try:
            return draw_ahead(self, *args)
        finally:
            inside.pop()

    monkeypatch.setattr(SourceView, "_line_row", counted_line_row)
    monkeypatch.setattr(SourceView, "draw_ahead", counted_draw_ahead, raising=False)
    return ahead, other


def _rows(view: SourceView) -> list[list[tuple[str, object]]]:
    """The source view's rows on screen as (text, style) pairs."""
    return [[(segment.text, segment.style) for segment in view.render_line(y)]
            for y in range(view.scrollable_content_region.height)]


async def test_the_first_stop_in_another_file_lexes_and_draws_nothing(calc_session,
                                                                      monkeypatch):
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        view = app.source_view
        assert view.path == "calc.py"
        app.episode_screen.act(pdb_call("b test_calc.py:5"))
        await settle(app, pilot)
        assert view.path == "calc.py"  # nothing shown changed

        lexed = []
        lex_lines = source_view.lex_lines
        monkeypatch.setattr(source_view, "lex_lines",
                            lambda *a: lexed.append(a) or lex_lines(*a))
        ahead, drawn = _count_rows(monkeypatch)
        app.episode_screen.act(pdb_call("c"))
        await settle(app, pilot)
        assert (view.path, view.frame_line) == ("test_calc.py", 5)
        shown = _rows(view)
        assert lexed == [] and drawn == [] and 5 in ahead
        assert shown[4][0][0] == "●" and shown[4][1][0] == "▶"

        # the same rows drawn from scratch: the work ahead drew what the stop would
        view._chunks.clear()
        view._cache.clear()
        view._strips.clear()
        assert _rows(view) == shown and drawn


async def test_a_breakpoint_in_the_shown_file_draws_its_stop_ahead(calc_session, monkeypatch):
    """A breakpoint set in the file shown: the rows of its stop (the frame's arrow and
    highlight moved there) are drawn ahead as well."""
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for command in ("b test_calc.py:5", "c", "b test_calc.py:9"):
            app.episode_screen.act(pdb_call(command))
            await settle(app, pilot)
        view = app.source_view
        assert (view.path, view.frame_line) == ("test_calc.py", 5)

        ahead, drawn = _count_rows(monkeypatch)
        app.episode_screen.act(pdb_call("c"))  # test_single failed: test_three
        await settle(app, pilot)
        assert view.frame_line == 9 and drawn == [] and 9 in ahead
        assert _rows(view)[8][1][0] == "▶" and _rows(view)[4][1][0] == " "


async def test_no_collection_between_a_slow_steps_end_and_its_frame(calc_session,
                                                                    monkeypatch):
    """A step slower than the screen hold's grace (its hold released, its busy frame and
    spinner drawn, as a first ``c``): the collector waits from the step's start to the frame
    that shows its result (from its busy frame on, here: the threshold is low), and runs
    again after that frame; a step longer than the grace
    and ``GC_RESUME`` has it run again meanwhile."""
    import gc

    from tui_helpers import stop_at

    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        screen = app.episode_screen
        seen: list[str] = []  # "gcN" at each collection, "turn" at the result, "frame"
        display, after_step = app._display, screen._after_step

        def spy_display(*args):
            seen.append("frame")
            return display(*args)

        def spy_after_step(*args):
            seen.append("turn")
            return after_step(*args)

        def collected(phase, info):
            if phase == "start":
                seen.append(f"gc{info['generation']}")

        monkeypatch.setattr(app, "_display", spy_display)
        monkeypatch.setattr(screen, "_after_step", spy_after_step)
        threshold = gc.get_threshold()
        gc.set_threshold(50, *threshold[1:])  # a pass every 50 allocations
        gc.callbacks.append(collected)
        try:
            for number in range(4):  # a pdb step of 0.4 s: its busy frame comes first
                seen.clear()
                assert screen.act(pdb_call("!__import__('time').sleep(0.4)"))
                await settle(app, pilot)
                assert "frame" in seen[:seen.index("turn")], (number, seen)
                busy, frame = seen.index("frame"), seen.index("frame", seen.index("turn"))
                assert not any(s.startswith("gc") for s in seen[busy:frame]), (number, seen)
                assert gc.isenabled(), number
            seen.clear()
            assert screen.act(pdb_call("!__import__('time').sleep(1.0)"))
            await settle(app, pilot)
            assert any(s.startswith("gc") for s in seen[:seen.index("turn")]), seen
        finally:
            gc.callbacks.remove(collected)
            gc.set_threshold(*threshold)


async def test_a_c_draws_the_stops_of_the_breakpoints_set_last(calc_session, monkeypatch):
    """With several breakpoints, a ``c`` draws ahead the stops of the last ones set
    (``AHEAD_STOPS``), newest first: not a view's height of rows per breakpoint."""
    from dgym_tui.tui.live import screen as live_screen

    monkeypatch.setattr(live_screen, "AHEAD_STOPS", 2)
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        for where in ("calc.py:2", "calc.py:4", "test_calc.py:5", "test_calc.py:9"):
            app.episode_screen.act(pdb_call(f"b {where}"))
            await settle(app, pilot)
        drawn: list[tuple[str, list[int]]] = []
        draw_ahead = SourceView.draw_ahead

        def spy(self, ahead, breakpoints, stops):
            drawn.append((ahead.path, stops))
            return draw_ahead(self, ahead, breakpoints, stops)

        monkeypatch.setattr(SourceView, "draw_ahead", spy)
        app.episode_screen.act(pdb_call("c"))
        await settle(app, pilot)
        assert drawn == [("test_calc.py", [9, 5])]
