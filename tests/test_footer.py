"""KeyFooter: rebuilt once at start, skipped when the keys are the same, rebuilt when
the focused widget brings other keys (Textual app through Pilot)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from dgym_tui.tui.widgets.footer import KeyFooter


class Pane(Static, can_focus=True):
    pass


class Left(Pane):
    BINDINGS = [Binding("x", "noop", "left key")]


class Right(Pane):
    BINDINGS = [Binding("y", "noop", "right key")]


class Twin(Pane):
    BINDINGS = [Binding("x", "noop", "left key")]


class FooterApp(App):
    def compose(self) -> ComposeResult:
        yield Left("left", id="left")
        yield Twin("twin", id="twin")
        yield Right("right", id="right")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.query_one("#left").focus()


def _keys(app: App) -> set[str]:
    return {key.key for key in app.query(FooterKey)}


async def test_footer_follows_focus_with_fewer_rebuilds(monkeypatch):
    builds = []
    original = KeyFooter.compose

    def counting(self):
        builds.append(1)
        return original(self)

    monkeypatch.setattr(KeyFooter, "compose", counting)
    app = FooterApp()
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "x" in _keys(app) and "y" not in _keys(app)
        start = len(builds)
        assert start <= 2, builds  # the mount's empty compose and one build of the keys
        app.query_one("#twin").focus()  # same keys: no rebuild
        await pilot.pause()
        assert len(builds) == start and "x" in _keys(app)
        app.query_one("#right").focus()  # other keys: rebuilt
        await pilot.pause()
        assert len(builds) == start + 1
        assert "y" in _keys(app) and "x" not in _keys(app)
