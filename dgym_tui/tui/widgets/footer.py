"""The key footer, rebuilt at most once per screen refresh and only when its keys change."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.compose import compose
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


class KeyFooter(Footer):
    """Textual's :class:`~textual.widgets.Footer`, rebuilt less often.

    The footer rebuilds all its keys after each bindings change the screen
    publishes: three at start-up (stack, auto focus, after the first refresh)
    and one per focus move. Here a rebuild already scheduled absorbs the changes
    published before it runs, and a rebuild that would show the same keys
    (same bindings, enabled states and tooltips) is skipped.

    Each key bound to the footer's compact state starts in it: such a key is built
    compact (its default) and then bound to the footer's (not compact), which
    restyled every key twice as it was mounted (a tenth of the first paint's CPU
    time). The command palette's key is not bound and stays compact.
    """

    _rebuild_pending = False
    _shown: Any = None  # what the keys were last built from

    def bindings_changed(self, screen: Screen) -> None:
        """Schedule one rebuild after the next refresh unless one is pending."""
        if self._rebuild_pending:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._rebuild_pending = True
        super().bindings_changed(screen)

    def _keys_shown(self) -> tuple[Any, ...]:
        """Everything :meth:`Footer.compose` reads to build the keys."""
        bindings = tuple((key, binding, enabled, tooltip) for key, (_, binding, enabled, tooltip)
                         in self.screen.active_bindings.items())
        return bindings, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    def compose(self) -> ComposeResult:
        """Footer's keys, the bound ones set to the footer's compact state before mounting."""
        for widget in super().compose():
            if isinstance(widget, FooterKey) and "compact" in (widget._reactive_connect or {}):
                widget.set_reactive(FooterKey.compact, self.compact)
            yield widget

    def show_keys(self) -> None:
        """Build the keys now from the screen's current bindings (the footer must have none).

        Textual's footer builds no keys until the screen publishes its bindings, which it
        does only after its first refresh: the first frame had no keys, and they came
        4-5 frames (~0.15 s) later. The app calls this from its mount handler, once its
        first focus is set, so that its first frame has them. A rebuild scheduled
        meanwhile finds the same keys and is skipped.
        """
        self.set_reactive(Footer._bindings_ready, True)
        self._shown = self._keys_shown()
        with self._context():  # the keys bind to this footer's reactives (data_bind)
            keys = compose(self)
        self.mount_all(keys)  # not awaited: drawn in the first frame with the rest

    async def recompose(self) -> None:
        """Rebuild the keys from the screen's bindings, unless they are the ones shown."""
        self._rebuild_pending = False
        if not self.is_attached:  # its screen was replaced (a fork went live) meanwhile
            return
        shown = self._keys_shown()
        if shown == self._shown:
            return
        self._shown = shown
        await super().recompose()
