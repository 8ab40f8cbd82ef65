"""A partial screen update that draws only the widgets whose rows reach the terminal.

When some widgets were refreshed and the screen was not laid out again, Textual (8.2.8)
draws a partial update: ``Compositor.render_partial_update`` takes the bounding box of the
changed regions and asks every visible widget that overlaps that box for its rows
(``_render_chops`` -> ``_get_renders(crop)``), yet its ``ChopsUpdate`` writes to the
terminal only the cells inside the changed regions. A pdb ``n`` changes about 7 widgets
spread over the screen (source view, console, variables, stack, status bar): their
bounding box held ~25 widgets, the panes between them and every container under them
(~0.1 ms each from their cached rows, docs/performance.md).

The compositor cuts each line at the edges of every widget's visible part (region within
clip); a "chop" is the piece of a line between two cuts, and a widget covers a chop whole
or not at all. Front to back, the first widget that covers a chop fills it, and the update
writes the chops that have a cell in a changed region. :class:`ChangedOnlyCompositor`
asks a widget for its rows only when it covers such a chop that no widget in front of it
has filled: the terminal receives the same cells, from the same widgets, as with
Textual's own update. A chop counts as filled only when the front widget's row is as wide
as its visible part (Textual then fills each chop it covers); a shorter row leaves the
widgets behind it asked, as Textual would.

A full update (the first frame, a new layout, a resize) is drawn the same way, its
changed region the whole screen: the screen and the containers wholly covered by their
children are not asked for rows (~6-8 ms of the first frame).

:func:`draw_changed_widgets_only` installs it on a screen when Textual's partial update
is built the way described above; otherwise the screen keeps Textual's own compositor.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise

from textual._compositor import ChopsUpdate, Compositor, LayoutUpdate
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


class ChangedOnlyCompositor(Compositor):
    """Textual's compositor, whose partial and full updates draw only the widgets whose
    rows reach the terminal (screenshots and layouts are Textual's own)."""

    #: The changed regions (screen cells) of the update being drawn (a full update: the
    #: whole screen), else None.
    _painting: tuple[Region, ...] | None = None

    def render_partial_update(self) -> ChopsUpdate | None:
        self._painting = tuple(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._painting = None

    def render_full_update(self, simplify: bool = False) -> LayoutUpdate:
        """Textual's full update (every line of the screen), its rows asked only of the
        widgets that fill a chop no widget in front of them fills: the containers wholly
        covered by their children are not drawn (~6-8 ms of the first frame)."""
        self._painting = (self.size.region,)
        try:
            return super().render_full_update(simplify)
        finally:
            self._painting = None

    def _get_renders(self, crop: Region | None = None
                     ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        """Textual's ``(region, clip, rows)`` of each widget to draw, front to back; during a
        partial update only those that would fill a chop the update writes and no widget
        in front of them fills, each asked for the rows of its visible part (region within
        clip) as Textual asks."""
        painting = self._painting
        if painting is None or crop is None:
            yield from super()._get_renders(crop)
            return
        open_chops = self._written_chops(painting)
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if not (shown.intersection(crop) and any(shown.intersection(changed)
                                                     for changed in painting)):
                continue
            left, right = shown.column_span
            if not any(left <= x < right
                       for y in shown.line_range for x in open_chops.get(y, ())):
                continue  # each chop of it that is written has a widget in front
            strips = widget.render_lines(shown.translate((-region.x, -region.y)))
            yield region, clip, strips
            for y, strip in zip(shown.line_range, strips, strict=False):  # as Textual
                chops = open_chops.get(y)
                if chops and strip.cell_length >= shown.width:  # fills each chop it spans
                    chops.difference_update([x for x in chops if left <= x < right])

    def _written_chops(self, painting: tuple[Region, ...]) -> dict[int, set[int]]:
        """The chops a ``ChopsUpdate`` of ``painting`` writes: line -> the x of each chop
        (a piece of the line between two cuts) that has a cell in a changed region."""
        cuts = self.cuts
        written: dict[int, set[int]] = {}
        for y, x1, x2 in self._regions_to_spans(painting):
            line = cuts[y]
            written.setdefault(y, set()).update(
                start for start, end in pairwise(line) if start < x2 and end > x1)
        return written


def _textual_draws_as_expected() -> bool:
    """True when Textual's partial update is the one :class:`ChangedOnlyCompositor` was
    written for (verified on 8.2.8): it takes the changed regions from ``_dirty_regions``,
    writes only their spans through a ``ChopsUpdate``, and gets the widgets' rows from
    ``_get_renders(crop)`` called by ``_render_chops``. A cheap look at the functions'
    names, not Textual's version (reading that costs ~18 ms of the app's start)."""
    try:
        partial = Compositor.render_partial_update.__code__
        chops = Compositor._render_chops.__code__
        renders = Compositor._get_renders.__code__
        console = ChopsUpdate.__rich_console__.__code__
    except AttributeError:
        return False
    return ({"_dirty_regions", "_regions_to_spans", "_render_chops", "cuts", "ChopsUpdate"}
            <= set(partial.co_names)
            and "_get_renders" in chops.co_names
            and renders.co_varnames[:renders.co_argcount] == ("self", "crop")
            and not renders.co_kwonlyargcount
            and {"visible_widgets", "render_lines"} <= set(renders.co_names)
            and "spans" in console.co_names)


#: Whether screens get a :class:`ChangedOnlyCompositor` (checked once, at import).
SUPPORTED = _textual_draws_as_expected()


def draw_changed_widgets_only(screen: Screen) -> bool:
    """Give ``screen`` (a Textual ``Screen`` not yet mounted) a
    :class:`ChangedOnlyCompositor`, when Textual's partial update is the expected one and
    the screen has Textual's own compositor. Returns True when it was installed."""
    if not SUPPORTED or type(getattr(screen, "_compositor", None)) is not Compositor:
        return False
    screen._compositor = ChangedOnlyCompositor()
    return True


__all__ = ["ChangedOnlyCompositor", "SUPPORTED", "draw_changed_widgets_only"]
