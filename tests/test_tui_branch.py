"""``f`` on a live episode branches it (Session.fork: nothing re-executed) and goes on in the
branch; the parent's trajectory ends as ``forked``. The real app through Pilot, real pdb."""

from __future__ import annotations

from tui_helpers import SIZE, console_text, settle, stop_at

from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.tui.actions import pdb_call
from dgym_tui.tui.app import DgymApp


async def test_f_branches_the_live_episode_at_pdbs_frame(calc_session, tmp_path):
    out = tmp_path / "t.jsonl"
    parent = calc_session(out=out, task_name="calc")
    app = DgymApp(session=parent)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:5")
        assert parent.env.frame == ("calc.py", 5)
        app.episode_screen.act(pdb_call("p total"))
        await settle(app, pilot)
        total = parent.turns[-1].observation
        await pilot.press("f")
        await settle(app, pilot)
        branch = app.session
        assert branch is not parent and len(branch.turns) == 3
        assert parent.done and parent.reason == "forked"
        assert parent.env.workspace is None  # the parent's environment is closed
        assert branch.env.frame == ("calc.py", 5)  # pdb replayed to the same frame
        assert "branched at step 3" in console_text(app)
        app.episode_screen.act(pdb_call("p total"))
        await settle(app, pilot)
        assert branch.turns[-1].observation == total != ""
        await pilot.press("q")
        await pilot.pause()
    header = read_trajectory(tmp_path / "t.fork3.jsonl").header
    assert header["config"]["forked_from"] == {"path": str(out), "step": 3, "live": True}
    assert read_trajectory(out).footer["reason"] == "forked"
