"""``dgym-tui --study`` through Pilot: instructions, clock in the status bar, pause, give up;
a quit mid-task leaves it to restart; the CLI refuses bad input in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from dgym_tui.study import load_study, open_results, open_task, outcome, remaining
from dgym_tui.tui.cli import main
from dgym_tui.tui.study_app import StudyApp

SIZE = (160, 48)
# The Pilot tests below run in an interpreter of their own (test_pilot_tests_in_a_fresh_process):
# in the whole suite's process, after the other app tests, the first of them hung in CI.
INNER = os.environ.get("DGYM_STUDY_PILOT") == "1"
inner = pytest.mark.skipif(not INNER, reason="runs in its own interpreter (see the outer test)")


def test_pilot_tests_in_a_fresh_process():
    """Runs this file's Pilot tests in a fresh interpreter, bounded in time."""
    if INNER:
        pytest.skip("this is the inner run")
    env = dict(os.environ, DGYM_STUDY_PILOT="1")
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-k", "give_up or quit_mid_task", __file__],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout  # both inner tests ran


async def wait_until(pilot, done, rounds: int = 900) -> None:
    for _ in range(rounds):
        if done():
            return
        await pilot.pause(0.1)
    raise AssertionError("the condition never held")


async def start(app, task, pilot) -> None:
    """Wait for the instructions and the episode's start, then close the instructions."""
    await wait_until(pilot, lambda: len(app.screen_stack) > 1 and task.session.initial is not None)
    assert task.clock.paused  # the clock waits for the instructions
    await pilot.press("y")
    await pilot.pause(0.8)


@pytest.fixture
def study(tmp_path):
    path = tmp_path / "study.yaml"
    path.write_text(json.dumps({"id": "pilot", "benchmark": "mini", "time_limit": 900,
                                "tasks": ["bank_account", "log_parser"],
                                "tools": {"without": ["pdb"]}, "results": "results"}))
    study = load_study(path)
    open_results(study)
    return study


@inner
async def test_give_up(study):
    task = open_task(study, "P01", remaining(study, "P01")[0])
    app = StudyApp(task)
    async with app.run_test(size=SIZE) as pilot:
        await start(app, task, pilot)
        assert not task.clock.paused
        assert "P01 · task 1/2" in app.status.text and "left" in app.status.text
        await pilot.press("f7")
        assert task.clock.paused and "paused" in app.status.text
        await pilot.press("f7")
        assert not task.clock.paused
        await pilot.press("f6")
        await pilot.press("y")
        await wait_until(pilot, lambda: task.session.footer is not None)
    status = task.close()
    assert outcome(status) == "gave up" and status.state == "done"



@inner
async def test_quit_mid_task_restarts_it(study):
    task = open_task(study, "P02", remaining(study, "P02")[0])
    app = StudyApp(task)
    async with app.run_test(size=SIZE) as pilot:
        await start(app, task, pilot)
        await pilot.press("q")
        await wait_until(pilot, lambda: task.session.footer is not None)
    assert task.close().state == "interrupted"
    first = remaining(study, "P02")[0]
    assert first.task == task.item.task and first.restarted


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
