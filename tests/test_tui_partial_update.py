"""A step's frame draws only the widgets it changes, and the terminal ends up with what a
full drawing of the screen gives (real pdb, Pilot).

Textual draws a partial update by asking every widget in the bounding box of the changed
regions for its rows; ``dgym_tui.tui.partial_update`` asks only those whose rows reach
the terminal (``bench/bench_n_key.py`` measures the time an ``n`` takes).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.control import ControlType
from rich.segment import Segment
from textual._compositor import Compositor
from textual.geometry import Region
from textual.strip import Strip
from tui_helpers import SIZE, settle, stop_at

from dgym_tui.tui import partial_update
from dgym_tui.tui.app import DgymApp


def _watch_partial_updates(compositor, monkeypatch) -> list[tuple[set[Region], list, set]]:
    """Record each partial update of ``compositor``: (its changed regions, the widgets on
    screen then with their visible parts, front to back, the widgets asked for their rows
    while it was drawn). Every widget on screen is watched."""
    updates: list[tuple[set[Region], list, set]] = []
    drawing: list[set] = []

    def watch(widget) -> None:
        render_lines = widget.render_lines

        def counted(crop):
            if drawing:
                drawing[-1].add(widget)
            return render_lines(crop)
        monkeypatch.setattr(widget, "render_lines", counted)

    for widget in compositor.visible_widgets:
        watch(widget)
    render_partial_update = compositor.render_partial_update

    def recorded():
        drawing.append(set())
        regions, shown = set(compositor._dirty_regions), _shown(compositor)
        try:
            return render_partial_update()
        finally:
            updates.append((regions, shown, drawing.pop()))
    monkeypatch.setattr(compositor, "render_partial_update", recorded)
    return updates


def _shown(compositor) -> list[tuple[object, Region]]:
    """Each widget on screen with its visible part (region within clip), front to back."""
    return [(widget, region.intersection(clip))
            for widget, (region, clip) in compositor.visible_widgets.items()]


def _in_box(shown: list, regions: set[Region]) -> set:
    """The widgets of ``shown`` whose visible part overlaps the bounding box of
    ``regions`` (those Textual asks for their rows)."""
    box = Region.from_union(list(regions))
    return {widget for widget, part in shown if part.intersection(box)}


def _on_top(shown: list, regions: set[Region]) -> set:
    """The widgets of ``shown`` on top (the front-most visible part) at some cell of
    ``regions``: the only ones whose rows reach the terminal in an update of ``regions``."""
    on_top = set()
    for changed in regions:
        for y in changed.line_range:
            for x in range(changed.x, changed.right):
                on_top.add(next(widget for widget, part in shown if part.contains(x, y)))
    return on_top


class _Terminal:
    """The cells a terminal shows after the compositor's updates: (text, style) per cell,
    written as the updates' segments say (cursor moves, then text)."""

    def __init__(self, strips) -> None:
        self.rows = [self._cells(strip) for strip in strips]

    @staticmethod
    def _cells(segments) -> list[tuple[str, object]]:
        cells: list[tuple[str, object]] = []
        for segment in segments:
            for char in segment.text:
                cells.append((char, segment.style))
                cells.extend([("", segment.style)] * (cell_len(char) - 1))
        return cells

    def write(self, update, console) -> None:
        x = y = 0
        for segment in update.__rich_console__(console, console.options):
            if segment.control:
                for control in segment.control:
                    if control[0] == ControlType.CURSOR_MOVE_TO:
                        x, y = control[1], control[2]
                continue
            if segment == Segment.line():
                continue
            for cell in self._cells([segment]):
                self.rows[y][x] = cell
                x += 1


async def test_a_step_draws_only_the_widgets_it_changes(calc_session, monkeypatch):
    """``n`` and ``u`` change a few panes far apart (source view, console, variables,
    stack, status bar): only the widgets on top at a changed cell are asked for their rows;
    Textual asked every widget in the changed regions' bounding box, ~25 (the panes
    between them, and the containers under the changed panes)."""
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        compositor = app.screen._compositor
        assert isinstance(compositor, partial_update.ChangedOnlyCompositor)
        updates = _watch_partial_updates(compositor, monkeypatch)
        for key in ("n", "n", "u", "d"):
            await pilot.press(key)
            await settle(app, pilot)
        left_out = 0
        for regions, shown, drawn in updates:
            on_top = _on_top(shown, regions)
            assert drawn <= on_top, sorted(repr(widget) for widget in drawn - on_top)
            left_out += len(_in_box(shown, regions) - on_top)
        assert left_out  # the keys' frames had widgets in their box to leave out
        assert any(drawn for _, _, drawn in updates)


async def test_the_terminal_shows_what_a_full_drawing_gives(calc_session, monkeypatch):
    """After a series of steps drawn as partial updates (and two far-apart widgets
    refreshed alone), the cells the updates wrote are those of a full drawing of the
    screen, cell by cell (text and style)."""
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        compositor = app.screen._compositor
        terminal = _Terminal(compositor.render_strips())
        render_update = compositor.render_update
        kinds: list[str] = []

        def written(*args, **kwargs):
            update = render_update(*args, **kwargs)
            if update is not None:
                kinds.append(type(update).__name__)
                terminal.write(update, app.console)
            return update
        monkeypatch.setattr(compositor, "render_update", written)
        for key in ("n", "n", "n", "u", "d", "s"):
            await pilot.press(key)
            await settle(app, pilot)
            assert terminal.rows == _Terminal(compositor.render_strips()).rows, key
        app.query_one("#tree").refresh()
        app.query_one("#status").refresh()
        await pilot.pause()
        assert terminal.rows == _Terminal(compositor.render_strips()).rows
        assert "ChopsUpdate" in kinds


async def test_a_full_update_draws_only_the_widgets_it_shows(calc_session, monkeypatch):
    """A full update (the first frame, a new layout) gives the rows Textual's own full
    drawing gives, and asks no widget whose visible part is wholly covered by widgets in
    front of it (the screen and the containers under their children)."""
    app = DgymApp(session=calc_session())
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        compositor = app.screen._compositor
        asked: set = set()
        for widget in compositor.visible_widgets:
            def counted(crop, widget=widget, render_lines=widget.render_lines):
                asked.add(widget)
                return render_lines(crop)
            monkeypatch.setattr(widget, "render_lines", counted)
        full = compositor.render_full_update()
        drawn = set(asked)
        # the same rows as Textual's own drawing of every chop
        assert [Strip.join(row) for row in full.strips] == compositor.render_strips()
        covered = {app.screen, app.query_one("#body"), app.query_one("#center")}
        assert covered <= set(compositor.visible_widgets), covered
        assert not covered & drawn, covered & drawn
        assert app.source_view in drawn
        await settle(app, pilot)


def test_textual_other_than_expected_keeps_its_own_compositor(monkeypatch):
    """With a Textual whose partial update is not the expected one, a screen keeps
    Textual's compositor; with the pinned one (8.2.8) the check passes."""
    from textual.screen import Screen

    assert partial_update._textual_draws_as_expected()
    assert partial_update.draw_changed_widgets_only(Screen())
    monkeypatch.setattr(partial_update, "SUPPORTED", False)
    screen = Screen()
    assert not partial_update.draw_changed_widgets_only(screen)
    assert type(screen._compositor) is Compositor

    def renders(self, crop, widgets):  # a later Textual's signature  # pragma: no cover
        return []
    monkeypatch.setattr(Compositor, "_get_renders", renders)
    assert not partial_update._textual_draws_as_expected()
