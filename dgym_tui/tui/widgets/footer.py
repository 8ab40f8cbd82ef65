"""The key footer: its keys drawn by one widget, rebuilt at most once per screen refresh
and only when its keys change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.compose import compose
from textual.geometry import Size
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey


@dataclass(frozen=True)
class ShownKey:
    """One key of the footer: the key (``"n"``), how it is shown, its label, its action,
    whether it works now (``enabled``) and its tooltip."""

    key: str
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str


class KeyStrip(Widget):
    """The footer's keys in one widget, drawn as Textual's footer keys are (the same
    colours, the disabled ones dim); a click on a key presses it, a disabled one rings the
    bell; the key under the mouse is highlighted and its tooltip shown.

    One widget instead of one per key: the 14 keys of the episode's screen were a quarter
    of the first frame's drawing and a sixth of its styling (docs/performance.md).

    Args:
        keys: the keys, left to right.
    """

    ALLOW_SELECT = False
    COMPONENT_CLASSES = {"key-strip--key", "key-strip--description", "key-strip--hover"}
    # FooterKey's own rules, for a strip of keys (non-compact)
    DEFAULT_CSS = """
    KeyStrip {
        width: auto;
        height: 1;
        text-wrap: nowrap;
        background: $footer-item-background;
        .key-strip--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
            padding: 0 1;
        }
        .key-strip--description {
            padding: 0 1 0 0;
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        .key-strip--hover {
            color: $footer-key-foreground;
            background: $block-hover-background;
        }
    }
    """

    def __init__(self, keys: list[ShownKey], always: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.keys = keys
        self.always = always
        self._room: int | None = None  # the cells the strip may take (None: any)
        self._spans: list[tuple[int, int, int]] = []  # shown keys: (index, start, end)
        self._hovered: int | None = None

    def _parts(self) -> list[Text]:
        """Each key as drawn (not yet dimmed nor highlighted), left to right."""
        key_style = self.get_component_rich_style("key-strip--key")
        description_style = self.get_component_rich_style("key-strip--description")
        key_pad = self.get_component_styles("key-strip--key").padding
        description_pad = self.get_component_styles("key-strip--description").padding
        return [Text.assemble(
            (" " * key_pad.left + key.display + " " * key_pad.right, key_style),
            (" " * description_pad.left + key.description + " " * description_pad.right
             if key.description else "", description_style)) for key in self.keys]

    def shown(self, room: int | None = None) -> list[int]:
        """Indexes of the keys drawn in ``room`` cells (default: the room the footer gives
        the strip), left to right: every key when they fit; else the keys whose action is
        in :attr:`always` (quit, help) first, then the others in order while they fit."""
        room = self._room if room is None else room
        widths = [part.cell_len for part in self._parts()]
        if room is None or sum(widths) <= room:
            return list(range(len(self.keys)))
        kept = {i for i, key in enumerate(self.keys) if key.action in self.always}
        used = sum(widths[i] for i in kept)
        for i, width in enumerate(widths):
            if i not in kept and used + width <= room:
                kept.add(i)
                used += width
        return sorted(kept)

    def get_content_width(self, container: Size, viewport: Size) -> int:
        self._room = container.width
        parts = self._parts()
        return sum(parts[i].cell_len for i in self.shown())

    def render(self) -> Text:
        hover_style = self.get_component_rich_style("key-strip--hover")
        base = self.rich_style
        parts = self._parts()
        text = Text(no_wrap=True, end="")
        self._spans = []
        for index in self.shown():
            key, part = self.keys[index], parts[index]
            start = text.cell_len
            style = base + Style(dim=True) if not key.enabled else base
            if index == self._hovered:
                part.stylize(hover_style)
            part.stylize_before(style)
            text.append_text(part)
            self._spans.append((index, start, text.cell_len))
        return text

    def key_at(self, x: int) -> ShownKey | None:
        """The key drawn at column ``x`` of the strip (None: none)."""
        index = self._index_at(x)
        return None if index is None else self.keys[index]

    def _index_at(self, x: int) -> int | None:
        return next((i for i, start, end in self._spans if start <= x < end), None)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        key = self.key_at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        index = self._index_at(event.x)
        if index != self._hovered:
            self._hovered = index
            self.tooltip = self.keys[index].tooltip or None if index is not None else None
            self.refresh()

    def on_leave(self, event: events.Leave) -> None:
        if self._hovered is not None:
            self._hovered = None
            self.tooltip = None
            self.refresh()


class KeyFooter(Footer):
    """Textual's :class:`~textual.widgets.Footer`, its keys in one :class:`KeyStrip`
    (the command palette's key on the right stays Textual's own), rebuilt less often.

    The footer rebuilds its keys after each bindings change the screen publishes: three
    at start-up (stack, auto focus, after the first refresh) and one per focus move.
    Here a rebuild already scheduled absorbs the changes published before it runs, and a
    rebuild that would show the same keys (same bindings, enabled states and tooltips) is
    skipped. Binding groups are shown as single keys (the app has none); the compact
    style is not supported.
    """

    _rebuild_pending = False
    _shown: Any = None  # what the keys were last built from

    def __init__(self, *args: Any, always: tuple[str, ...] = (), **kwargs: Any) -> None:
        """Args as Textual's footer's; ``always``: actions whose keys stay shown when the
        keys do not fit the footer's width (see :meth:`KeyStrip.shown`)."""
        super().__init__(*args, **kwargs)
        self.always = always

    def bindings_changed(self, screen: Screen) -> None:
        """Schedule one rebuild after the next refresh unless one is pending."""
        if self._rebuild_pending:
            return
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self._rebuild_pending = True
        super().bindings_changed(screen)

    def _keys_shown(self) -> tuple[Any, ...]:
        """Everything :meth:`compose` reads to build the keys."""
        bindings = tuple((key, binding, enabled, tooltip) for key, (_, binding, enabled, tooltip)
                         in self.screen.active_bindings.items())
        return bindings, self.show_command_palette, self.app.ENABLE_COMMAND_PALETTE

    def compose(self) -> ComposeResult:
        """The keys of the screen's active bindings (one per action, as Textual's footer
        shows them) in a :class:`KeyStrip`, then the command palette's key."""
        if not self._bindings_ready:
            return
        active = self.screen.active_bindings
        palette = self.app.COMMAND_PALETTE_BINDING
        keys: dict[str, ShownKey] = {}
        for key, (_, binding, enabled, tooltip) in active.items():
            if binding.show and binding.action not in keys and key != palette:
                keys[binding.action] = ShownKey(
                    binding.key, self.app.get_key_display(binding), binding.description,
                    binding.action, enabled, tooltip)
        yield KeyStrip(list(keys.values()), self.always)
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette in active:
            _, binding, enabled, _ = active[palette]
            yield FooterKey(binding.key, self.app.get_key_display(binding),
                            binding.description, binding.action,
                            # FooterKey is compact unless bound to a footer that is not;
                            # built with the class its mount would add (and restyle for)
                            classes="-command-palette -compact",
                            disabled=not enabled, tooltip=binding.tooltip or binding.description)

    def shown_keys(self) -> list[str]:
        """The keys shown now, left to right (the command palette's last)."""
        keys = [key.key for strip in self.query(KeyStrip) for key in strip.keys]
        return keys + [key.key for key in self.query(FooterKey)]

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
        with self._context():
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
