"""The app at the sizes people use (80x24, 99x30, 120x36, 200x60), through Pilot: pdb's
stepping keys with the side column hidden (below 100 columns, after ``]``, or after a
resize below 100 in the middle of a session) and shown again."""

from __future__ import annotations

import pytest
from tui_helpers import settle, stop_at

from dgym_tui.tui.app import DgymApp


def _marked_frame(app) -> str:
    """The stack pane's row marked ▶ (pdb's current frame), as text."""
    stack = app.query_one("#stack")
    rows = [str(option.prompt) for option in stack.options]
    return next((row for row in rows if row.startswith("▶")), "")


async def _step_keys(app, pilot, keys: str) -> None:
    """Press ``keys`` one at a time on the source view, each step run to its end."""
    for key in keys:
        app.source_view.focus()
        await pilot.press(key)
        await settle(app, pilot)


@pytest.mark.parametrize("size", [(80, 24), (99, 30), (120, 36), (200, 60)])
async def test_stepping_keys_at_every_size(calc_session, size):
    """b, c, then s n u d at SIZE: every key is a pdb step (none crashes the app), and the
    stack pane follows pdb's current frame whether or not it is shown."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=size) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        side = app.query_one("#side")
        assert side.display is (size[0] >= 100)
        await _step_keys(app, pilot, "nu")
        assert _marked_frame(app).startswith("▶ test_single")
        await _step_keys(app, pilot, "dn")
        assert _marked_frame(app).startswith("▶ average  calc.py:5")
        commands = [turn.action.arguments.get("command") for turn in session.turns]
        assert commands[-4:] == ["n", "u", "d", "n"], commands
        assert app.is_running
    app.close_session()


async def test_stepping_after_resizing_and_hiding_the_side_column(calc_session):
    """A wide session: a resize to 80x24 hides the side column (n / u / d step), a resize
    back to 160x48 shows the frame pdb is in; ``]`` hides it (n / u / d step), ``]`` shows
    it again with the right frame marked."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        side = app.query_one("#side")
        await _step_keys(app, pilot, "n")  # the stack pane was drawn at full width
        await pilot.resize_terminal(80, 24)
        await settle(app, pilot)
        assert not side.display
        await _step_keys(app, pilot, "ud")
        await pilot.resize_terminal(160, 48)
        await settle(app, pilot)
        assert side.display
        assert _marked_frame(app).startswith("▶ average  calc.py:3")
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert not side.display
        await _step_keys(app, pilot, "udn")
        await pilot.press("right_square_bracket")
        await settle(app, pilot)
        assert side.display
        assert _marked_frame(app).startswith("▶ average  calc.py:5")
        commands = [turn.action.arguments.get("command") for turn in session.turns]
        assert commands[-6:] == ["n", "u", "d", "u", "d", "n"], commands
        assert app.is_running
    app.close_session()
