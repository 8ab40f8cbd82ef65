"""KeyFooter: rebuilt once at start, skipped when the keys are the same, rebuilt when
the focused widget brings other keys, built before the first frame by show_keys; its keys
drawn by one widget (KeyStrip) that a click presses, a disabled key rings the bell, the
key under the mouse shows its tooltip (Textual app through Pilot)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static
from textual.widgets._footer import FooterKey

from dgym_tui.tui.widgets.footer import KeyFooter, KeyStrip


class Pane(Static, can_focus=True):
    pass


class Left(Pane):
    BINDINGS = [Binding("x", "noop", "left key")]


class Keys(Pane):
    BINDINGS = [Binding("x", "press('x')", "left key"), Binding("z", "press('z')", "zed"),
                Binding("w", "press('w')", "off", tooltip="not now")]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return None if parameters == ("w",) else True  # w: shown disabled

    def action_press(self, key: str) -> None:
        self.app.pressed.append(key)  # type: ignore[attr-defined]


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
    return set(app.query_one(KeyFooter).shown_keys())


def _count_builds(monkeypatch) -> list[int]:
    """A list that grows by one each time a KeyFooter builds its keys (compose)."""
    builds: list[int] = []
    original = KeyFooter.compose

    def counting(self):
        builds.append(1)
        return original(self)

    monkeypatch.setattr(KeyFooter, "compose", counting)
    return builds


async def test_footer_follows_focus_with_fewer_rebuilds(monkeypatch):
    builds = _count_builds(monkeypatch)
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


class KeysAtOnce(FooterApp):
    def on_mount(self) -> None:  # as DgymApp does: focus now, then the footer's keys
        self.screen.set_focus(self.query_one("#left"))
        self.query_one(KeyFooter).show_keys()


async def test_show_keys_draws_the_focused_keys_in_the_first_frame(monkeypatch):
    builds = _count_builds(monkeypatch)
    app = KeysAtOnce()
    first: list[set[str]] = []
    display = app._display

    def first_frame(screen, update) -> None:  # the keys laid out in the first frame drawn
        display(screen, update)
        if update is not None and not app._batch_count and not first:
            first.append({key.key for strip in screen.query(KeyStrip) if strip.region
                          for key in strip.keys})

    app._display = first_frame
    async with app.run_test() as pilot:
        await pilot.pause()
        assert first and "x" in first[0] and "y" not in first[0]
        assert len(builds) == 2  # the mount's empty compose, show_keys: no rebuild after
        assert "x" in _keys(app)


class ClickApp(App):
    def compose(self) -> ComposeResult:
        yield Keys("keys", id="keys")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.pressed: list[str] = []
        self.query_one("#keys").focus()

    def bell(self) -> None:
        self.pressed.append("bell")


async def test_the_keys_are_one_widget_that_a_click_presses():
    app = ClickApp()
    async with app.run_test(size=(100, 10)) as pilot:
        await pilot.pause()
        footer = app.query_one(KeyFooter)
        strip = footer.query_one(KeyStrip)
        # one widget for the keys, the command palette's key on its own (docked right)
        assert [type(child) for child in footer.children] == [KeyStrip, FooterKey]
        assert [key.key for key in strip.keys] == ["x", "z", "w"]
        assert footer.shown_keys() == ["x", "z", "w", "ctrl+p"]
        # drawn as Textual's keys are: " x left key  z zed  w off " (key padded, label
        # followed by a space), the disabled one included
        assert strip.render().plain == " x left key  z zed  w off "
        assert strip.region.width == 26
        await pilot.click(strip, offset=(13, 0))  # on z
        await pilot.click(strip, offset=(5, 0))  # on x's label
        await pilot.click(strip, offset=(20, 0))  # w: disabled
        await pilot.pause()
        assert app.pressed == ["z", "x", "bell"]
        await pilot.hover(strip, offset=(22, 0))  # the key under the mouse: its tooltip
        await pilot.pause()
        assert strip.tooltip == "not now" and strip._hovered == 2


class Many(Pane):
    BINDINGS = [Binding(k, f"press('{k}')", label) for k, label in
                (("b", "Breakpoint"), ("n", "next"), ("s", "step"), ("c", "continue"),
                 ("r", "return"), ("u", "up"), ("d", "down"))]

    def action_press(self, key: str) -> None:
        self.app.pressed.append(key)  # type: ignore[attr-defined]


class NarrowApp(App):
    BINDINGS = [Binding("q", "press_quit", "Quit"), Binding("question_mark", "help", "Keys")]

    def compose(self) -> ComposeResult:
        yield Many("many", id="many")
        yield KeyFooter(always=("press_quit", "help"))

    def on_mount(self) -> None:
        self.pressed: list[str] = []
        self.query_one("#many").focus()

    def action_press_quit(self) -> None:
        self.pressed.append("q")

    def action_help(self) -> None:
        self.pressed.append("?")


async def test_keys_that_do_not_fit_leave_quit_and_help_shown():
    """Before, the strip was cut at the footer's right edge: at 80 columns the episode
    screen's ``q Quit`` and ``? Keys`` (after the pane's pdb keys) were not shown."""
    app = NarrowApp()
    async with app.run_test(size=(60, 10)) as pilot:
        await pilot.pause()
        strip = app.query_one(KeyStrip)
        text = strip.render().plain
        # the first keys while they fit beside q and ?, the palette's key on the right
        assert text == " b Breakpoint  n next  s step  q Quit  ? Keys "
        palette = app.query_one(FooterKey)
        assert strip.region.right <= palette.region.x and palette.region.right == 60
        await pilot.click(strip, offset=(text.index("Quit"), 0))
        await pilot.click(strip, offset=(text.index("Keys"), 0))
        await pilot.click(strip, offset=(text.index("next"), 0))
        await pilot.pause()
        assert app.pressed == ["q", "?", "n"]
        await pilot.resize_terminal(140, 10)  # room for every key, in their order
        await pilot.pause()
        assert strip.render().plain == (" b Breakpoint  n next  s step  c continue  r return  "
                                        "u up  d down  q Quit  ? Keys ")
