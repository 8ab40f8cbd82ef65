"""The key footer, rebuilt at most once per screen refresh."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """Textual's :class:`~textual.widgets.Footer` that coalesces its rebuilds.

    The footer rebuilds all its keys after each bindings change; at start-up the
    screen publishes three (stack, auto focus, after the first refresh), so the
    keys were built three times before the first paint. Here a rebuild already
    scheduled absorbs the changes published before it runs.
    """

    _rebuild_pending = False

    def bindings_changed(self, screen: Screen) -> None:
        """Schedule one rebuild after the next refresh unless one is pending."""
        if self._rebuild_pending:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._rebuild_pending = True
        super().bindings_changed(screen)

    async def recompose(self) -> None:
        """Rebuild the keys from the screen's bindings as they are now."""
        self._rebuild_pending = False
        await super().recompose()
