"""The run browser through Pilot: 0 / 3 / 1,000 episodes, sort, filter, review, live watch, open."""

from __future__ import annotations

import json

from run_folders import write_episode, write_run
from textual.widgets import DataTable, Static

from dgym_tui.reviews import REVIEWS_FILE, append_review
from dgym_tui.tui.cli import main
from dgym_tui.tui.screens.runs import RunsApp, RunsScreen, browsed_replay

SIZE = (160, 40)


def _screen(app) -> RunsScreen:
    assert isinstance(app.screen, RunsScreen)
    return app.screen


def _summary(app) -> str:
    return str(app.screen.query_one("#runs-summary", Static).render())


async def test_empty_folder_then_an_episode_appears(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text("[]")
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 0 and "no episodes yet" in _summary(app)
        await pilot.press("enter", "a", "s", "u", "u")  # nothing to act on: no crash
        assert table.row_count == 0
        # live watch: the run writes an episode (still running), then finishes it
        write_episode(run, "late", finished=False, steps=2)
        for _ in range(40):
            await pilot.pause(0.1)
            if table.row_count:
                break
        assert table.row_count == 1 and "1 running" in _summary(app)
        key = f"{run}/late"
        assert table.get_row(key)[6] == "2"  # steps so far
        write_episode(run, "late", steps=3)
        for _ in range(40):
            await pilot.pause(0.1)
            if key in table.rows and table.get_row(key)[4] == "yes":
                break
        assert table.get_row(key)[4:7] == ["yes", "1/1", "3"]


async def test_three_episodes_sort_filter_review(tmp_path):
    run = write_run(tmp_path / "run", 3)
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = _screen(app)
        table = screen.query_one(DataTable)
        assert [table.get_row_at(i)[0] for i in range(3)] == ["t0000", "t0001", "t0002"]
        assert "3 episode(s) · resolved 2 (67% of ended) · mean steps 3.0 · cost $0.0090" in \
            _summary(app)
        # sort by steps (column 6), then reversed
        table.move_cursor(column=6)
        await pilot.press("s")
        await pilot.press("s")
        assert [table.get_row_at(i)[6] for i in range(3)] == ["4", "3", "2"]
        await pilot.press("u")
        assert table.row_count == 1 and table.get_row_at(0)[0] == "t0002"
        await pilot.press("u", "slash")
        await pilot.press(*"t0001", "enter")
        assert table.row_count == 1 and "filter 't0001'" in _summary(app)
        # review: reject with a note
        await pilot.press("x")
        await pilot.pause()
        await pilot.press(*"wrong fix", "enter")
        await pilot.pause()
        assert table.get_row_at(0)[11] == "reject"
        (record,) = [json.loads(x) for x in (run / REVIEWS_FILE).read_text().splitlines()]
        assert (record["episode"], record["verdict"], record["note"]) == ("t0001", "reject",
                                                                           "wrong fix")
        # cancelling a review writes nothing
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert len((run / REVIEWS_FILE).read_text().splitlines()) == 1
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value is not None and app.return_value.episode == "t0001"


async def test_thousand_episodes(tmp_path):
    run = write_run(tmp_path / "run", 1000)
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1000
        assert "1000 episode(s) · resolved 667" in _summary(app)
        table.move_cursor(row=999)
        await pilot.pause()
        assert app.screen.current_row().episode == "t0999"
        await pilot.press("u")
        assert table.row_count == 333


async def test_opened_episode_replays_and_escape_goes_back(tmp_path):
    run = write_run(tmp_path / "run", 1)
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
    row = app.return_value
    viewer = browsed_replay(row)
    async with viewer.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert viewer.replay is not None and "replay step 0/2" in viewer.status.text
        assert not viewer._closed
        await pilot.press("escape")
        await viewer.workers.wait_for_complete()
        await pilot.pause()
        assert viewer._closed  # esc quit the viewer (back to the runs), not the source focus
    assert viewer.return_code == 0


def test_command_line_picks_the_browser(tmp_path, monkeypatch, capsys):
    import dgym_tui.tui.screens.runs as runs_screen

    run = write_run(tmp_path / "run", 1)
    seen = []
    monkeypatch.setattr(runs_screen, "browse_runs", lambda paths, theme: seen.append(paths) or 0)
    assert main([str(run), str(run)]) == 0
    assert seen == [[run, run]]
    (tmp_path / "repo").mkdir()
    assert main([str(run), str(tmp_path / "repo")]) == 2
    assert "holds no dgym run" in capsys.readouterr().err


def test_snapshot_three_episodes(snap_compare, tmp_path):
    run = write_run(tmp_path / "run", 3)
    append_review(run, "t0001", "accept", "clean")
    assert snap_compare(RunsApp([run]), terminal_size=SIZE)
