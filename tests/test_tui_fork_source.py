"""A fork from a replay starts from the original as it was recorded, not as it is today
(``w`` applied the fix meanwhile), and says so on screen; the real app through Pilot."""

from __future__ import annotations

from test_tui_app import _record_episode
from tui_helpers import FIX, SIZE, console_text, settle

from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.launch.replay import fork, recorded_start
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.replay_model import ReplayModel


async def test_fork_starts_from_the_recorded_original(calc_repo, tmp_path):
    recorded = tmp_path / "recorded.jsonl"
    await _record_episode(calc_repo, recorded)
    traj = read_trajectory(recorded)
    buggy = (calc_repo / "calc.py").read_text()
    assert recorded_start(traj, calc_repo) == ({}, [])  # as recorded
    # the fix is applied to the original afterwards (as w does), a new file appears
    (calc_repo / "calc.py").write_text(buggy.replace("    return total / len(xs[1:])", FIX))
    restore, changed = recorded_start(traj, calc_repo)
    assert restore == {"calc.py": buggy} and changed == []
    forked_out = tmp_path / "forked.jsonl"

    def make_fork(step):
        return fork(traj, step, None, output=forked_out, mode="human", start=False)

    app = DgymApp(replay=ReplayModel(traj), fork=make_fork)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("l", "l")
        await pilot.press("f")  # fork at step 2: b, c re-executed
        await settle(app, pilot)
        session = app.session
        assert session is not None and len(session.turns) == 2
        assert "tests 0/2" in app.status.text  # as recorded: failing
        assert session.initial.score == 0
        assert session.env.workspace.read_text("calc.py") == buggy
        assert "the original changed since this recording" in console_text(app)
        assert not app.episode_screen.can_apply  # w would write a rebuilt copy's patch: off
        await pilot.press("q")
        await pilot.pause()
    assert FIX in (calc_repo / "calc.py").read_text()  # the original is untouched
    header = read_trajectory(forked_out).header
    assert header["config"]["forked_source"]["restored"] == ["calc.py"]
