"""The run browser through Pilot: 0 / 3 / 1,000 episodes, sort, filter, review queue, live watch
(a run started by the test), side by side, open."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path

from rich.console import Console
from run_folders import write_bad_episodes, write_episode, write_run
from scripted import small_tools, tiny_config, tiny_policy
from textual.widgets import DataTable, Static

from dgym_tui.cli.tui import main
from dgym_tui.episode.policy import Policy
from dgym_tui.runs.reviews import REVIEWS_FILE, append_review
from dgym_tui.runs.runner import run_tasks
from dgym_tui.tui.screens.episode import CompareScreen, EpisodePane, EpisodeScreen
from dgym_tui.tui.screens.review import ReviewScreen
from dgym_tui.tui.screens.runs import RunsApp, RunsScreen, browsed_replay
from dgym_tui.tui.widgets.diff_view import DiffView

SIZE = (160, 40)


def _screen(app) -> RunsScreen:
    assert isinstance(app.screen, RunsScreen)
    return app.screen


def _at(table: DataTable, number: int) -> list[str]:
    """The cells of row ``number`` as text."""
    return [str(cell) for cell in table.get_row_at(number)]


def _by(table: DataTable, key: str) -> list[str]:
    """The cells of the row with ``key`` as text."""
    return [str(cell) for cell in table.get_row(key)]


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
        assert _by(table, key)[6] == "2"  # steps so far
        write_episode(run, "late", steps=3)
        for _ in range(40):
            await pilot.pause(0.1)
            if key in table.rows and _by(table, key)[4] == "yes":
                break
        assert _by(table, key)[4:7] == ["yes", "1/1", "3"]


async def test_three_episodes_sort_filter_review(tmp_path):
    run = write_run(tmp_path / "run", 3)
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = _screen(app)
        table = screen.query_one(DataTable)
        assert [_at(table, i)[0] for i in range(3)] == ["t0000", "t0001", "t0002"]
        assert "3 episode(s) · resolved 2 (67% of ended) · mean steps 3.0 · cost $0.0090" in \
            _summary(app)
        # sort by steps (column 6), then reversed
        table.move_cursor(column=6)
        await pilot.press("s")
        await pilot.press("s")
        assert [_at(table, i)[6] for i in range(3)] == ["4", "3", "2"]
        await pilot.press("u")
        assert table.row_count == 1 and _at(table, 0)[0] == "t0002"
        await pilot.press("u", "slash")
        await pilot.press(*"t0001", "enter")
        assert table.row_count == 1 and "filter 't0001'" in _summary(app)
        # review: reject with a note; the reviewer's name is asked once (issue 26: it was
        # the system's user name)
        await pilot.press("x")
        await pilot.pause()
        assert "Your name as reviewer" in str(app.screen.query_one(".modal-title").render())
        await pilot.press(*"ann", "enter")
        await pilot.pause()
        await pilot.press(*"wrong fix", "enter")
        await pilot.pause()
        assert _at(table, 0)[11] == "reject"
        (record,) = [json.loads(x) for x in (run / REVIEWS_FILE).read_text().splitlines()]
        assert (record["episode"], record["verdict"], record["note"], record["reviewer"]) == (
            "t0001", "reject", "wrong fix", "ann")
        # cancelling a review writes nothing; the name is not asked again
        await pilot.press("a")
        await pilot.pause()
        assert "note" in app.screen.query_one("#prompt-input").placeholder
        await pilot.press("escape")
        await pilot.pause()
        assert len((run / REVIEWS_FILE).read_text().splitlines()) == 1
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value is not None and app.return_value.episode == "t0001"


async def _filled(pilot, table: DataTable, rows: int) -> None:
    """Wait until the table holds ``rows`` rows (a big table fills in batches after the first paint)."""
    for _ in range(100):
        if table.row_count == rows:
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{table.row_count} rows, not {rows}")


async def test_thousand_episodes(tmp_path):
    run = write_run(tmp_path / "run", 1000)
    app = RunsApp([run], cursor=(run, "t0900"))  # back from the replay viewer at t0900
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        assert app.screen.current_row().episode == "t0900"
        assert "1000 episode(s) · resolved 667" in _summary(app)
        await _filled(pilot, table, 1000)
        table.move_cursor(row=999)
        await pilot.pause()
        assert app.screen.current_row().episode == "t0999"
        await pilot.press("u")
        await _filled(pilot, table, 333)
        assert all(_at(table, i)[4] == "no" for i in range(333))
        # one episode changes (a new verdict): that row is updated, nothing filled anew
        generation = app.screen._generation
        append_review(run, "t0002", "reject")
        app.screen.reindex()
        assert _at(table, 0)[11] == "reject" and app.screen._generation == generation


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
        assert viewer.replay_screen is not None and "replay step 0/2" in viewer.status.text
        assert not viewer.closed
        await pilot.press("escape")
        await viewer.workers.wait_for_complete()
        await pilot.pause()
        assert viewer.closed  # esc quit the viewer (back to the runs), not the source focus
    assert viewer.return_code == 0


def test_command_line_picks_the_browser(tmp_path, monkeypatch, capsys):
    import dgym_tui.tui.screens.runs as runs_screen

    run = write_run(tmp_path / "run", 1)
    seen = []
    monkeypatch.setattr(runs_screen, "browse_runs", lambda paths, theme, *rest: seen.append(paths) or 0)
    assert main([str(run), str(run)]) == 0
    assert seen == [[run, run]]
    (tmp_path / "repo").mkdir()
    assert main([str(run), str(tmp_path / "repo")]) == 2
    assert "holds no dgym run" in capsys.readouterr().err


def test_snapshot_three_episodes(snap_compare, tmp_path):
    run = write_run(tmp_path / "run", 3)
    append_review(run, "t0001", "accept", "clean")
    assert snap_compare(RunsApp([run]), terminal_size=SIZE)


def test_snapshot_no_episodes(snap_compare, tmp_path, monkeypatch):
    """An empty run folder: the empty table and 'no episodes yet in run (checked every 1 s)'."""
    monkeypatch.chdir(tmp_path)  # a relative folder name: the same picture on every machine
    Path("run").mkdir()
    Path("run", "summary.json").write_text("[]")
    assert snap_compare(RunsApp([Path("run")]), terminal_size=SIZE)


def test_snapshot_thousand_episodes(snap_compare, tmp_path):
    """1,000 episodes sorted by steps reversed: the summary line over all, the first screenful
    (the 6-step episodes), the scrollbar at the top."""
    run = write_run(tmp_path / "run", 1000)

    async def sort_by_steps(pilot):
        table = pilot.app.screen.query_one(DataTable)
        table.move_cursor(column=6)
        await pilot.press("s", "s")
        table.move_cursor(row=0, animate=False)
        await pilot.pause()

    assert snap_compare(RunsApp([run]), terminal_size=SIZE, run_before=sort_by_steps)


async def test_review_queue_shows_the_diff_and_the_trajectory_one_key_away(tmp_path):
    run = write_run(tmp_path / "run", 3)
    app = RunsApp([run], reviewer="bob")  # --reviewer bob
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        await pilot.pause()
        review = app.screen
        assert isinstance(review, ReviewScreen)
        assert review.row.episode == "t0000" and "return a + b" in review.query_one(DiffView).patch
        assert "review 1/3: t0000" in str(review.query_one("#review-title", Static).render())
        await pilot.press("t")  # the trajectory, one key away
        await pilot.pause()
        assert isinstance(app.screen, EpisodeScreen)
        assert app.screen.query_one(EpisodePane).table.row_count == 2
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is review
        await pilot.press("x")
        await pilot.pause()
        await pilot.press(*"adds twice", "enter")
        await pilot.pause()
        assert review.row.episode == "t0001"  # a verdict moves on to the next episode
        await pilot.press("right_square_bracket")
        assert review.row.episode == "t0002" and "return a * b" in review.query_one(DiffView).patch
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("enter")  # an empty note is fine
        await pilot.pause()
        assert review.row.episode == "t0002"  # the last one: the queue stays there
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert review.row.episode == "t0000"
        assert "verdict: reject (adds twice)" in str(
            review.query_one("#review-title", Static).render())
        await pilot.press("escape")
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        for _ in range(50):  # saving the note and re-reading the runs follow the dialogs' close
            if _at(table, 2)[11] == "accept":
                break
            await pilot.pause(0.1)
        assert [_at(table, i)[11] for i in range(3)] == ["reject", "", "accept"]
    records = [json.loads(x) for x in (run / REVIEWS_FILE).read_text().splitlines()]
    assert [(r["episode"], r["verdict"], r["note"], r["reviewer"]) for r in records] == [
        ("t0000", "reject", "adds twice", "bob"), ("t0002", "accept", "", "bob")]


async def test_two_episodes_of_a_task_side_by_side(tmp_path):
    run = tmp_path / "run"
    write_episode(run, "add", episode="add-a", agent="careful", steps=4)
    write_episode(run, "add", episode="add-b", agent="hasty", steps=2, resolved=False)
    write_episode(run, "mul", episode="mul-a", steps=3)
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.screen.query_one(DataTable).move_cursor(row=2)  # mul: no other episode
        await pilot.press("c")
        assert isinstance(app.screen, RunsScreen)
        app.screen.query_one(DataTable).move_cursor(row=0)
        await pilot.press("c")
        await pilot.pause()
        compare = app.screen
        assert isinstance(compare, CompareScreen)
        left, right = (p.table for p in compare.query(EpisodePane))
        assert (left.row_count, right.row_count) == (4, 2)
        titles = [str(p.query_one(".pane-title", Static).render()) for p in compare.query(EpisodePane)]
        assert "careful" in titles[0] and "hasty" in titles[1] and "not resolved" in titles[1]
        assert (left.cursor_row, right.cursor_row) == (0, 0)  # finished: from the first step
        left.focus()
        await pilot.press("down")
        await pilot.pause()
        assert (left.cursor_row, right.cursor_row) == (1, 1)  # step 2 beside step 2
        await pilot.press("down", "down")
        await pilot.pause()
        assert (left.cursor_row, right.cursor_row) == (3, 1)  # the right one has no step 4
        right.focus()
        await pilot.press("up")
        await pilot.pause()
        assert (left.cursor_row, right.cursor_row) == (0, 0)
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen)


async def test_served_enter_opens_the_steps_in_the_app(tmp_path):
    run = write_run(tmp_path / "run", 1)
    app = RunsApp([run], open_in_app=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, EpisodeScreen)
        pane = app.screen.query_one(EpisodePane)
        assert pane.table.row_count == 2
        assert "resolved, submitted" in str(pane.query_one(".pane-title", Static).render())
        await pilot.press("escape")
        assert isinstance(app.screen, RunsScreen) and app.return_value is None


class GatedPolicy(Policy):
    """tiny_policy's actions, each proposed only after the test releases it."""

    name = "gated"

    def __init__(self, task, gate: threading.Semaphore) -> None:
        self.inner, self.gate = tiny_policy(task), gate

    def reset(self, info) -> None:
        self.inner.reset(info)

    def propose(self, turns):
        assert self.gate.acquire(timeout=60), "the test never released the step"
        return self.inner.propose(turns)


async def test_live_episode_follows_a_run_started_by_the_test(tmp_path, tiny, monkeypatch):
    """A real `dgym run` (the tiny benchmark, one task) writes while the browser follows it."""
    small_tools(monkeypatch)
    config = tiny_config(tmp_path, tiny, "tasks=[add]")
    gate = threading.Semaphore(0)
    done = threading.Event()

    def run() -> None:
        try:
            run_tasks(config, policy_factory=lambda task: GatedPolicy(task, gate),
                      console=Console(file=io.StringIO()), progress=False)
        finally:
            done.set()

    out = tmp_path / "out"
    out.mkdir()
    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    app = RunsApp([out])

    async def until(check, what: str) -> None:
        for _ in range(300):
            if check():
                return
            await pilot.pause(0.1)
        raise AssertionError(f"never: {what}")

    try:
        async with app.run_test(size=SIZE) as pilot:
            table = app.screen.query_one(DataTable)
            await until(lambda: table.row_count == 1, "the episode row")
            await until(lambda: (out / "add" / "trajectory.jsonl").exists(), "the trajectory")
            await pilot.press("w")
            await pilot.pause()
            pane = app.screen.query_one(EpisodePane)
            title = pane.query_one(".pane-title", Static)
            await until(lambda: "running: following" in str(title.render()), "running title")
            assert pane.table.row_count == 0
            for shown in (1, 2, 3):
                gate.release()  # the agent takes one more step
                await until(lambda shown=shown: pane.table.row_count == shown, f"step {shown}")
                assert pane.table.cursor_row == shown - 1  # the cursor follows the last step
            assert [_at(pane.table, i)[2][:4] for i in range(3)] == ["view", "rewr", "subm"]
            await until(lambda: "resolved, submitted" in str(title.render()), "the footer")
            assert not pane.follower.problem
    finally:
        for _ in range(3):
            gate.release()
        runner.join(60)
    assert done.is_set()


def test_snapshot_review_screen(snap_compare, tmp_path):
    """The review queue on the unresolved t0002: title with position, state and verdict, its diff."""
    run = write_run(tmp_path / "run", 3)

    async def review_third(pilot):
        pilot.app.screen.query_one(DataTable).move_cursor(row=2)
        await pilot.press("r")
        await pilot.pause()

    assert snap_compare(RunsApp([run]), terminal_size=SIZE, run_before=review_third)


def test_snapshot_side_by_side(snap_compare, tmp_path):
    """Two agents on the task add: 4 steps beside 2, step 2 selected on both sides."""
    run = tmp_path / "run"
    write_episode(run, "add", episode="add-a", agent="careful", steps=4)
    write_episode(run, "add", episode="add-b", agent="hasty", steps=2, resolved=False)

    async def compare(pilot):
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("down")
        await pilot.pause()

    assert snap_compare(RunsApp([run]), terminal_size=SIZE, run_before=compare)


async def test_bad_input_rows_show_their_reason(tmp_path):
    """A run folder with every kind of bad input: every episode is a row, the broken ones say why;
    the corrupt one opens with its readable steps and names the skipped line."""
    run = write_bad_episodes(write_run(tmp_path / "run", 2))
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        reasons = {_at(table, i)[0]: _at(table, i)[10] for i in range(table.row_count)}
        assert len(reasons) == 8 and "5 with problems" in _summary(app)
        assert reasons["corrupt"].endswith("(corrupt line 3)")
        assert "(schema version 99 (this dgym-tui reads 1-2))" in reasons["newer"]
        assert "(schema version 0 (this dgym-tui reads 1-2))" in reasons["older"]
        assert "status.json unreadable" in reasons["junk"] and "empty trajectory" in reasons["empty"]
        assert reasons["live"] == "running"
        table.move_cursor(row=[_at(table, i)[0] for i in range(8)].index("corrupt"))
        await pilot.press("w")
        await pilot.pause()
        pane = app.screen.query_one(EpisodePane)
        assert pane.table.row_count == 2  # steps 1 and 3 of 3; line 3 held step 2
        assert "corrupt line 3 skipped" in str(pane.query_one(".pane-title", Static).render())
