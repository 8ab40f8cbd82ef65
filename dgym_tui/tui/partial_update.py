"""A partial screen update that draws only the widgets whose changed rows it writes.

When some widgets were refreshed and the screen was not laid out again, Textual (8.2.8)
draws a partial update: ``Compositor.render_partial_update`` takes the bounding box of the
changed regions and asks every visible widget that overlaps that box for its rows
(``_render_chops`` -> ``_get_renders(crop)``), yet its ``ChopsUpdate`` writes to the
terminal only the cells inside the changed regions. A pdb ``n`` changes about 7 widgets
spread over the screen (source view, console, variables, stack, status bar): their
bounding box held ~25 widgets, each unchanged one drawn for nothing (~1.8 ms at load 2,
docs/performance.md).

:class:`ChangedOnlyCompositor` asks only the widgets whose visible part overlaps at least
one changed region. The terminal receives the same cells: a cell written lies in a changed
region and in one chop of its line (the compositor cuts each line at the edges of every
widget's visible part), so every widget that could paint that chop overlaps the changed
region at that cell and is still asked, front to back as before. A widget left out only
filled chops that are never written.

:func:`draw_changed_widgets_only` installs it on a screen when Textual's partial update
is built the way described above; otherwise the screen keeps Textual's own compositor.
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


class ChangedOnlyCompositor(Compositor):
    """Textual's compositor, whose partial updates draw only the widgets that overlap a
    changed region (full updates, screenshots and layouts are Textual's own)."""

    #: The changed regions (screen cells) of the partial update being drawn, else None.
    _painting: tuple[Region, ...] | None = None

    def render_partial_update(self) -> ChopsUpdate | None:
        self._painting = tuple(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._painting = None

    def _get_renders(self, crop: Region | None = None
                     ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        """Textual's ``(region, clip, rows)`` of each widget to draw, front to back; during a
        partial update only those whose visible part (region within clip) overlaps a
        changed region, each asked for the rows of that visible part as Textual asks."""
        painting = self._painting
        if painting is None or crop is None:
            yield from super()._get_renders(crop)
            return
        for widget, (region, clip) in self.visible_widgets.items():
            shown = region.intersection(clip)
            if shown.intersection(crop) and any(shown.intersection(changed)
                                                for changed in painting):
                yield region, clip, widget.render_lines(
                    shown.translate((-region.x, -region.y)))


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
    return ({"_dirty_regions", "_regions_to_spans", "_render_chops", "ChopsUpdate"}
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
