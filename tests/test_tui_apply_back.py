"""The app's `w` never overwrites changes made to the original outside the session."""

from __future__ import annotations

from tui_helpers import CALC, FIX, SIZE, console_text, settle

import dgym_tui.core.tools  # noqa: F401  registers the built-in tools
from dgym_tui.core.types import ToolCall
from dgym_tui.tui.app import DgymApp


async def test_w_refuses_a_conflicting_outside_edit(calc_repo, calc_session):
    """The user changed the line the session fixed: `w` says so, the user's line stays."""
    app = DgymApp(session=calc_session(tools=("view", "eval", "rewrite", "submit")),
                  ask_apply=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
        await settle(app, pilot)
        mine = CALC.replace("len(xs[1:])", "max(1, len(xs))")
        (calc_repo / "calc.py").write_text(mine)  # an editor, outside the session
        await pilot.press("w")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmScreen"
        await pilot.press("y")
        await settle(app, pilot)
        assert (calc_repo / "calc.py").read_text() == mine
        console = console_text(app)
        assert "patch not applied to" in console
        assert "not applied: calc.py changed in the original" in console
        await pilot.press("q")
        await pilot.pause()
