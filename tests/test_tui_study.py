"""``dgym-tui --study`` through Pilot and in a real terminal.

- A 3-task study in the app, in both conditions (all tools / without pdb): the
  first task is solved from the console, the second given up (F6, after a
  pause with F7), the third runs out of time; the final screen shows the
  participant's summary, and ``dgym study summary``'s counts match the
  trajectories written.
- A quit (q) mid-task leaves the task to restart; the episode was reset once.
- The real app in tmux is killed with SIGKILL mid-task and started again with
  the same id: it resumes at the unfinished task, marked restarted, and the
  finished task's files are untouched.
- The CLI refuses a bad study or participant id in one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dgym_tui.cli.tui import main
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.study.plan import StudyClock, load_study, open_results, open_task, remaining
from dgym_tui.study.summary import ALL_TASKS, load_study_episodes, summarize
from dgym_tui.tui.study_app import StudyApp, StudyRun
from dgym_tui.tui.study_end import StudyEndApp

SIZE = (160, 48)
REPO = Path(__file__).resolve().parent.parent
TASKS = ["log_parser", "bank_account", "shopping_cart"]
FIX = "rewrite path=logparse.py start=42 end=42 new_code='    source, message = rest.split(\": \", 1)'"


async def wait_until(pilot, done, rounds: int = 1200) -> None:
    for _ in range(rounds):
        if done():
            return
        await pilot.pause(0.1)
    raise AssertionError("the condition never held")


async def exited(app, seconds: float = 120) -> None:
    """Wait until the app left by itself (its message loop ended).

    Leaving ``run_test`` earlier would shut the app down while the messages of
    its last step (e.g. the episode's end) are still queued.
    """
    for _ in range(int(seconds * 10)):
        if not app.is_running:
            return
        await asyncio.sleep(0.1)  # not pilot.pause: it waits on the app's screen
    raise AssertionError("the app never exited")


async def start(app, pilot) -> None:
    """Wait for the instructions and the episode's start, then close the instructions."""
    task = app.study_task
    await wait_until(pilot, lambda: len(app.screen_stack) > 1 and app.started)
    assert type(app.screen).__name__ == "ConfirmScreen"
    assert task.description and app.screen.detail.startswith(task.description)  # the symptom
    assert task.clock.paused  # the clock waits for the instructions
    await pilot.press("y")
    await wait_until(pilot, lambda: len(app.screen_stack) == 1)


async def console(app, pilot, line: str) -> None:
    """Type ``line`` into the console and wait until its step is recorded."""
    steps = len(app.session.turns)
    box = app.query_one("#console-input")
    box.focus()
    box.value = line
    await pilot.press("enter")
    await wait_until(pilot, lambda: len(app.session.turns) > steps and not app.busy)


async def solve(app, pilot, with_pdb: bool) -> None:
    if with_pdb:
        await console(app, pilot, "b logparse.py:42")
        await console(app, pilot, "c")
        assert app.session.env.frame == ("logparse.py", 42)
    else:
        await console(app, pilot, "view path=logparse.py start=40 end=44")
    await console(app, pilot, FIX)
    assert not app.session.turns[-1].result.error, app.session.turns[-1].result.observation
    app.query_one("#console-input").value = "submit"
    await pilot.press("enter")  # the episode ends: the app leaves by itself


async def give_up(app, pilot) -> None:
    await console(app, pilot, "eval")
    assert "task 2/3" in app.status.text and "left" in app.status.text
    app.source_view.focus()
    await pilot.press("f7")
    assert app.study_task.clock.paused and "paused" in app.status.text
    await pilot.press("f7")
    assert not app.study_task.clock.paused
    await pilot.press("f6")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
    await pilot.press("y")


def write_study(folder: Path, **keys) -> Path:
    path = folder / "study.yaml"
    path.write_text(json.dumps({"id": "pilot", "benchmark": "mini", "time_limit": 900,
                                "tasks": TASKS, "results": "results", **keys}))
    return path


async def _read_end_screen(app, pilot) -> tuple[list[list[str]], str]:
    """The study end screen's table rows (cells as text) and totals line; then quit it."""
    table = app.query_one("#study-end-table")
    rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
    totals = str(app.query_one("#study-end-totals").render())
    await pilot.press("q")
    return rows, totals


@pytest.mark.timeout(900)  # 6 episodes; minutes on a loaded machine
@pytest.mark.parametrize("tools", ["all", {"without": ["pdb"]}], ids=["all-tools", "no-pdb"])
async def test_three_task_study_in_the_app(tmp_path, tools):
    study = load_study(write_study(tmp_path, tools=tools))
    with_pdb = "pdb" in study.tools
    lines: list[str] = []
    run = StudyRun(study, "P01", out=lines.append)
    end_rows = end_totals = None
    for app in run:
        async with app.run_test(size=SIZE) as pilot:
            if isinstance(app, StudyEndApp):
                end_rows, end_totals = await _read_end_screen(app, pilot)
                continue
            index = app.study_task.item.index
            if index == 2:  # a one-second limit instead of waiting out the study's 900 s
                app.study_task.clock = StudyClock(1.0)
                app.study_task.clock.pause()
            await start(app, pilot)
            if index < 2:  # (the third task's second is up at once: the app leaves)
                assert f"P01 · task {index + 1}/3" in app.status.text
                assert not app.study_task.clock.paused  # it runs once the instructions close
            if index == 0:
                await solve(app, pilot, with_pdb)
            elif index == 1:
                await give_up(app, pilot)
            await exited(app)
            assert app.session.footer is not None
    assert run.exit_code == 0
    assert lines[:3] == ["task 1/3: solved", "task 2/3: gave up", "task 3/3: timed out"]
    assert [row[1:3] for row in end_rows] == [[t, o] for t, o in
                                               zip(TASKS, ["solved", "gave up", "timed out"],
                                                   strict=True)]
    assert "solved 1 of 3" in end_totals

    # the summary's counts are those of the trajectories written
    trajectories = [read_trajectory(study.results / "P01" / name / "trajectory.jsonl")
                    for name in TASKS]
    reasons = [t.footer["reason"] for t in trajectories]
    assert reasons == ["submitted", "gave up", "timed out"]
    assert [t.header["config"]["condition"] for t in trajectories] == [study.condition] * 3
    pdb_calls = [sum(s["action"]["name"] == "pdb" for s in t.steps) for t in trajectories]
    assert (pdb_calls[0] == 2) is with_pdb and sum(pdb_calls[1:]) == 0
    rows = summarize(load_study_episodes([study.results]))
    total = next(r for r in rows if r["task"] == ALL_TASKS)
    assert total == {
        "condition": study.condition, "task": ALL_TASKS, "episodes": 3,
        "solved": sum(bool(t.footer["resolved"]) for t in trajectories),
        "solved_rate": round(1 / 3, 4), "gave_up": reasons.count("gave up"),
        "timed_out": reasons.count("timed out"),
        "median_time_s": total["median_time_s"],
        "median_steps": statistics.median(t.footer["steps"] for t in trajectories),
        "used_pdb": sum(n > 0 for n in pdb_calls), "pdb_calls": sum(pdb_calls)}
    assert total["solved"] == 1


async def test_quit_mid_task_restarts_it(tmp_path):
    study = load_study(write_study(tmp_path, tasks=["bank_account", "log_parser"]))
    open_results(study)
    task = open_task(study, "P02", remaining(study, "P02")[0])
    starts = []
    session_start = task.session.start
    task.session.start = lambda: starts.append(1) or session_start()
    app = StudyApp(task)
    async with app.run_test(size=SIZE) as pilot:
        await start(app, pilot)
        app.source_view.focus()
        await pilot.press("q")
        await exited(app)
    assert len(starts) == 1  # the episode was reset once (it was twice: on_mount ran twice)
    assert task.session.footer["reason"] == "quit"
    assert task.close().state == "interrupted"
    first = remaining(study, "P02")[0]
    assert first.task == task.item.task and first.restarted


@pytest.mark.parametrize("slow", ["setup", "entrypoint"])
async def test_give_up_during_the_first_eval_is_recorded_and_counted(tmp_path, slow):
    """F6 while the episode's start still runs (the screen shows before it ends): the
    task is recorded as given up (a trajectory with its header and footer) and the final
    screen and the summary count it. A setup command or the first eval sleeps a minute
    (a give-up during the setup left no trajectory: the task was left out, 'solved 0 of 0')."""
    study = load_study(write_study(tmp_path, tasks=["bank_account"], time_limit=None))
    lines: list[str] = []
    run = StudyRun(study, "P03", out=lines.append)
    end_rows = end_totals = None
    for app in run:
        if isinstance(app, StudyEndApp):
            async with app.run_test(size=SIZE) as pilot:
                end_rows, end_totals = await _read_end_screen(app, pilot)
            continue
        env = app.study_task.session.env
        if slow == "setup":
            env.setup_commands = ["sleep 60"]
        else:
            env.entrypoint = "sleep 60"
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda a=app: len(a.screen_stack) > 1)  # the instructions
            await pilot.press("y")
            await wait_until(pilot, lambda a=app: len(a.screen_stack) == 1)
            assert app.busy and not app.started  # the first eval runs
            await pilot.press("f6")
            await wait_until(pilot, lambda a=app: type(a.screen).__name__ == "ConfirmScreen")
            await pilot.press("y")
            await exited(app)
    assert run.exit_code == 0 and lines[0] == "task 1/1: gave up"
    assert end_rows is not None and [row[1:3] for row in end_rows] == [["bank_account",
                                                                         "gave up"]]
    assert "solved 0 of 1" in end_totals
    trajectory = read_trajectory(study.results / "P03" / "bank_account" / "trajectory.jsonl")
    assert trajectory.footer["reason"] == "gave up" and trajectory.footer["steps"] == 0
    assert trajectory.header["config"]["condition"] == study.condition
    assert [(e.task, e.outcome) for e in load_study_episodes([study.results])] == [
        ("bank_account", "gave up")]


def test_a_task_killed_during_its_first_eval_restarts_marked(tmp_path):
    """What a kill during the episode's start leaves on disk (no trajectory yet, no
    status) marks the task restarted, as a kill after the first eval does."""
    import threading

    from dgym_tui.episode.events import EpisodeStarting

    study = load_study(write_study(tmp_path, tasks=["bank_account", "log_parser"]))
    open_results(study)
    task = open_task(study, "P04", remaining(study, "P04")[0])
    task.session.env.setup_commands = ["sleep 60"]
    copied = threading.Event()
    task.session.subscribe(lambda event: isinstance(event, EpisodeStarting) and copied.set())

    def start() -> None:
        with contextlib.suppress(Exception):  # the environment is closed under it
            task.session.start()

    starting = threading.Thread(target=start)
    starting.start()
    try:
        assert copied.wait(120)  # the setup runs: a SIGKILL now leaves the disk as it is
        assert not (task.folder / "trajectory.jsonl").exists()
        left = remaining(study, "P04")
        assert [(i.task, i.restarted) for i in left] == [("bank_account", True),
                                                         ("log_parser", False)]
    finally:
        task.session.env.close()
        starting.join(60)


class Tmux:
    """The real app in a tmux session of its own server (socket), read as plain text."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.servers = 0
        self.server = self._next_server()

    def _next_server(self) -> list[str]:
        """A tmux server (socket) of its own: a session started right after ``close`` could
        reach the server still shutting down and fail ("server exited unexpectedly")."""
        self.servers += 1
        return ["tmux", "-L", f"dgym-study-{os.getpid()}-{self.servers}"]

    def start(self, command: str) -> None:
        subprocess.run([*self.server, "new-session", "-d", "-s", "study", "-x", "160", "-y", "48",
                        command], check=True, cwd=self.folder)

    def screen(self) -> str:
        proc = subprocess.run([*self.server, "capture-pane", "-p", "-t", "study"],
                              capture_output=True, text=True, check=False)
        return proc.stdout

    def wait_for(self, text: str, seconds: float = 240) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if text in self.screen():
                return
            time.sleep(0.3)
        raise AssertionError(f"{text!r} never appeared; the screen:\n{self.screen()}")

    def keys(self, *keys: str) -> None:
        subprocess.run([*self.server, "send-keys", "-t", "study", *keys], check=True)

    def pid(self) -> int:
        proc = subprocess.run([*self.server, "display", "-p", "-t", "study", "#{pane_pid}"],
                              capture_output=True, text=True, check=True)
        return int(proc.stdout)

    def close(self) -> None:
        subprocess.run([*self.server, "kill-server"], capture_output=True, check=False)
        self.server = self._next_server()


@pytest.fixture
def tmux(tmp_path):
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (scripts/setup_system.sh installs it)")
    session = Tmux(tmp_path)
    yield session
    session.close()


@pytest.mark.timeout(900)
def test_killed_mid_task_resumes_there(tmp_path, tmux):
    study_file = write_study(tmp_path, tasks=["bank_account", "log_parser"], time_limit=None)
    run = tmp_path / "results" / "P01"
    (tmp_path / "tmp").mkdir()  # the killed app's temporary folders stay here, not in /tmp
    app = (f"env PYTHONPATH={REPO} TMPDIR={tmp_path / 'tmp'} {sys.executable} -m dgym_tui.cli.tui "
           f"--study {study_file} --participant P01")
    # exec: the pane's process is the app itself, killed below without any cleanup.
    # (Textual draws on stderr: it is not redirected.)
    tmux.start(f"exec {app}")
    tmux.wait_for("Task 1 of 2")
    tmux.keys("y")
    tmux.wait_for("P01 · task 1/2")
    tmux.keys("F6")
    tmux.wait_for("Give up this task?")
    tmux.keys("y")
    tmux.wait_for("Task 2 of 2")
    tmux.keys("y")
    tmux.wait_for("P01 · task 2/2")
    # the episode has started (its first eval ended) once the observation shows: x before
    # that is dropped (the status line shows the study's clock from the start on)
    tmux.wait_for("Tools: listdir")
    tmux.keys("x")  # eval: one step recorded before the crash
    killed = run / "log_parser" / "trajectory.jsonl"
    deadline = time.monotonic() + 240
    while not (killed.exists() and len(killed.read_text().splitlines()) >= 2):
        assert time.monotonic() < deadline, tmux.screen()
        time.sleep(0.3)
    finished = {p.name: p.read_bytes() for p in (run / "bank_account").iterdir()}
    os.kill(tmux.pid(), signal.SIGKILL)
    assert read_trajectory(killed).footer is None  # cut off: no footer, no status
    assert not (run / "log_parser" / "status.json").exists()
    left = remaining(load_study(study_file), "P01")
    assert [(i.task, i.restarted) for i in left] == [("log_parser", True)]

    rc = tmp_path / "second.rc"
    tmux.close()
    tmux.start(f"{app}; echo $? >{rc}")
    tmux.wait_for("Task 2 of 2 (restarted)")
    tmux.keys("y")
    tmux.wait_for("P01 · task 2/2")
    tmux.keys("F6")  # at once: a give-up during the episode's start is recorded too
    tmux.wait_for("Give up this task?")
    tmux.keys("y")
    tmux.wait_for("Thank you")
    tmux.wait_for("solved 0 of 2")  # the table and its totals fill in after the title
    tmux.keys("q")
    deadline = time.monotonic() + 60
    while not rc.exists() or not rc.read_text().strip():
        assert time.monotonic() < deadline, tmux.screen()
        time.sleep(0.2)
    assert rc.read_text().strip() == "0", tmux.screen()

    # nothing lost: the finished task is as it was; the restarted one is marked and done
    assert {p.name: p.read_bytes() for p in (run / "bank_account").iterdir()} == finished
    again = read_trajectory(run / "log_parser" / "trajectory.jsonl")
    assert again.header["task"]["restarted"] is True and again.footer["reason"] == "gave up"
    summary = json.loads((run / "summary.json").read_text())
    assert [(s["task"], s["reason"]) for s in summary] == [("bank_account", "gave up"),
                                                           ("log_parser", "gave up")]


def test_cli_refuses_bad_study_and_participant(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("benchmark: mini\ntasks: [nosuch_task]\n")
    assert main(["--study", str(bad), "--participant", "P1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "nosuch_task" in err and len(err.splitlines()) == 1
    good = tmp_path / "good.yaml"
    good.write_text("benchmark: mini\ntasks: [bank_account]\n")
    assert main(["--study", str(good), "--participant", "a b"]) == 2
    assert "participant id" in capsys.readouterr().err


def test_snapshot_final_screen(snap_compare, tmp_path):
    """The final screen: per task the outcome, time, steps and pdb calls, then the totals
    (real episodes; their times set to fixed values so the picture is stable)."""
    from dgym_tui.core.types import ToolCall
    from dgym_tui.runs.runner import STATUS_FILE, read_status, task_folder, write_json

    study = load_study(write_study(tmp_path, tasks=["bank_account", "log_parser"]))
    open_results(study)
    for item, seconds in zip(remaining(study, "P01"), (75.4, 900.0), strict=True):
        task = open_task(study, "P01", item)
        task.session.start()
        task.session.act(ToolCall("listdir", {}))
        task.give_up() if item.index == 0 else task.time_out()
        task.close()
        folder = task_folder(study.results / "P01", item.task)
        status = read_status(folder)
        status.wall_time = seconds
        write_json(folder / STATUS_FILE, status.to_dict())
    assert snap_compare(StudyEndApp(study, "P01"), terminal_size=(100, 16))
