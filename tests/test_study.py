"""Study files, participant queues, resume and results as a run folder (dgym_tui.study.plan).

Episodes are real: mini tasks in their sandbox, driven through the session the
app drives (human mode, actions from the person).
"""

from __future__ import annotations

import getpass
import json
import os
import re
import socket
import sys
import tempfile
from pathlib import Path

import pytest

from dgym_tui.core.types import ToolCall
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.launch.open import UsageError, load_task
from dgym_tui.policies.solution import SolutionPolicy
from dgym_tui.runs.index import index_runs
from dgym_tui.study.plan import (
    StudyClock,
    check_participant,
    load_study,
    open_results,
    open_task,
    outcome,
    remaining,
    task_queue,
)

TASKS = ["shopping_cart", "bank_account", "log_parser"]


def write_study(folder: Path, text: str = "", **keys) -> Path:
    body = {"id": "pilot", "benchmark": "mini", "tasks": TASKS, "time_limit": 600,
            "results": "results", **keys}
    path = folder / "study.yaml"
    path.write_text(text or json.dumps(body))  # JSON is YAML
    return path


def test_load_study_defaults_and_conditions(tmp_path):
    study = load_study(write_study(tmp_path))
    assert study.tasks == tuple(TASKS) and study.condition == "all" and "pdb" in study.tools
    assert study.results == tmp_path / "results"
    no_pdb = load_study(write_study(tmp_path, tools={"without": ["pdb"]}))
    assert "pdb" not in no_pdb.tools and no_pdb.condition == "without-pdb"
    assert no_pdb.hash != study.hash  # another condition is another study


@pytest.mark.parametrize(("keys", "named"), [
    ({"benchmark": "nosuch"}, "nosuch"),
    ({"tasks": ["shopping_cart", "shoping_cart2"]}, "shoping_cart2"),
    ({"tools": ["view", "pbd", "submit"]}, "pbd"),
    ({"tools": {"without": ["pbd"]}}, "pbd"),
    ({"colour": "red"}, "colour"),
    ({"order": "random"}, "random"),
    ({"time_limit": -5}, "time_limit"),
])
def test_bad_study_file_is_one_line_naming_it(tmp_path, keys, named):
    with pytest.raises(UsageError) as err:
        load_study(write_study(tmp_path, **keys))
    message = str(err.value)
    assert named in message and "\n" not in message


def test_tasks_from_a_file_and_a_seeded_sample(tmp_path):
    (tmp_path / "ids.txt").write_text("# pilot\nlog_parser\n\nbank_account\n")
    assert load_study(write_study(tmp_path, tasks={"file": "ids.txt"})).tasks == (
        "log_parser", "bank_account")
    first = load_study(write_study(tmp_path, tasks={"sample": 3, "seed": 4})).tasks
    assert len(set(first)) == 3
    assert load_study(write_study(tmp_path, tasks={"sample": 3, "seed": 4})).tasks == first


def test_shuffled_order_depends_on_seed_and_participant(tmp_path):
    study = load_study(write_study(tmp_path, order="shuffled", seed=3,
                                   tasks={"sample": 6, "seed": 1}))
    orders = {tuple(task_queue(study, f"P{i}")) for i in range(8)}
    assert len(orders) > 1 and all(sorted(o) == sorted(study.tasks) for o in orders)
    assert task_queue(study, "P1") == task_queue(study, "P1")
    fixed = load_study(write_study(tmp_path))
    assert task_queue(fixed, "P1") == list(fixed.tasks)


def test_participant_ids_are_pseudonyms():
    assert check_participant("P07") == "P07"
    for bad in ("", "../x", "a b", "/home/x", getpass.getuser(), socket.gethostname().split(".")[0]):
        with pytest.raises(UsageError):
            check_participant(bad)


def test_results_of_another_study_are_refused(tmp_path):
    study = load_study(write_study(tmp_path))
    open_results(study)
    open_results(study)  # the same study again: fine
    changed = load_study(write_study(tmp_path, tasks=TASKS[:2]))
    with pytest.raises(UsageError, match="holds study 'pilot'"):
        open_results(changed)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.txt").write_text("x")
    with pytest.raises(UsageError, match="not empty"):
        open_results(load_study(write_study(tmp_path, results="other")))


def test_clock_pauses():
    now = [0.0]
    clock = StudyClock(10, now=lambda: now[0])
    now[0] = 4
    clock.pause()
    now[0] = 100
    assert clock.elapsed == 4 and not clock.expired
    clock.resume()
    now[0] = 106
    assert clock.expired and clock.left == 0


def _solve(study_task):
    policy = SolutionPolicy.for_task(load_task(study_task.item.task, "mini"))
    policy.reset(None)
    for call in policy.plan():
        study_task.session.act(ToolCall(call["name"], call["arguments"]))


def test_three_tasks_solved_gave_up_timed_out_then_resume(tmp_path):
    study = load_study(write_study(tmp_path, time_limit=0.05))
    open_results(study)
    items = remaining(study, "P01")
    assert [i.task for i in items] == TASKS and not any(i.restarted for i in items)

    first = open_task(study, "P01", items[0])
    first.session.start()
    for command in ["where", *PRINT_MACHINE]:
        first.session.act(ToolCall("pdb", {"command": command}))
    _solve(first)
    assert first.session.done
    first.close()

    second = open_task(study, "P01", items[1])
    second.session.start()
    second.session.act(ToolCall("view", {"path": "."}))
    second.give_up()
    second.close()

    # the app is killed mid-task: no status, a trajectory without footer
    killed = open_task(study, "P01", items[2])
    killed.session.start()
    killed.session.env.close()
    left = remaining(study, "P01")
    assert [(i.task, i.restarted) for i in left] == [("log_parser", True)]

    third = open_task(study, "P01", left[0])
    third.session.start()
    third.clock._spent = 1.0  # past the 0.05 s limit without waiting
    assert third.clock.expired
    third.time_out()
    third.close()
    assert remaining(study, "P01") == []

    run = study.results / "P01"
    statuses = json.loads((run / "summary.json").read_text())
    assert [s["task"] for s in statuses] == TASKS
    from dgym_tui.runs.runner import TaskStatus
    assert [outcome(TaskStatus.from_dict(s)) for s in statuses] == ["solved", "gave up", "timed out"]
    for name, restarted in zip(TASKS, (False, False, True), strict=True):
        traj = read_trajectory(run / name / "trajectory.jsonl")
        config = traj.header["config"]
        assert config["policy"] == "human" and config["participant"] == "P01"
        assert config["condition"] == "all" and config["study"]["hash"] == study.hash
        assert traj.header["task"]["restarted"] is restarted
        assert traj.footer is not None
    # the run browser's index reads the participant as a run folder
    rows = index_runs([study.results])
    assert sorted(r.task for r in rows) == sorted(TASKS)
    # nothing identifying or machine-specific in the results (the first task printed them)
    assert_no_machine_names(study.results, tmp_path)


#: pdb commands that print the working copy, the Python install, the home and host.
PRINT_MACHINE = ['p __import__("os").getcwd()', 'p __import__("sys").path',
                 'p __import__("sys").executable', 'p __import__("os").environ.get("HOME")',
                 'p __import__("tempfile").gettempdir()', 'p __import__("socket").gethostname()',
                 'p __import__("getpass").getuser()']


def assert_no_machine_names(results: Path, *paths: Path) -> None:
    """No file under ``results`` names a temporary folder, the home folder, the
    Python install, the current folder, ``paths``, the host or the user."""
    texts = {p: p.read_text() for p in results.rglob("*") if p.is_file()}
    assert any("<repo>" in t for t in texts.values())  # the working copy was shown, scrubbed
    secrets = [tempfile.gettempdir(), str(Path.home()), sys.prefix, sys.base_prefix, os.getcwd(),
               *map(str, paths)]
    names = [socket.gethostname(), getpass.getuser()]
    for path, text in texts.items():
        for secret in secrets:
            assert not re.search(r"(?<![\w.-])" + re.escape(secret) + r"(?![\w.-])", text), \
                (path.name, secret)
        for name in names:  # short names (a host "vm") are left: too common to replace
            if len(name) >= 3 and name != "root":
                assert not re.search(r"\b" + re.escape(name) + r"\b", text), (path.name, name)


def test_scrub_names_host_and_user(monkeypatch):
    from dgym_tui.study import scrub

    monkeypatch.setattr(scrub.socket, "gethostname", lambda: "lab-pc7.example.org")
    monkeypatch.setattr(scrub.getpass, "getuser", lambda: "alice")
    work = Path(tempfile.gettempdir()) / "dgym-ws-99-abc"
    text = (f"cwd {work} and {work}/x.py, {Path.home()}/.pyenv/bin, on lab-pc7 as alice; "
            f"{sys.prefix}/bin/python; alicexyz stays; {Path.home()}")
    scrubbed = scrub.scrub_text(text, scrub.machine_patterns())
    assert scrubbed == ("cwd <repo> and <repo>/x.py, ~/.pyenv/bin, on <host> as <user>; "
                        "<python>/bin/python; alicexyz stays; ~")
