"""Trajectory files: round trip, validation with line numbers, a cut-off last
line, and a process killed with SIGKILL in the middle of an episode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dgym_tui.core.types import StepResult, ToolCall
from dgym_tui.episode.trajectory import SCHEMA_VERSION, TrajectoryError, TrajectoryWriter, read_trajectory

TESTS_DIR = Path(__file__).parent


def _write_sample(path: Path, steps: int = 3, footer: bool = True) -> None:
    writer = TrajectoryWriter(path)
    writer.write_header({"task": {"name": "t"}, "config": {}, "tools": [], "environment": {},
                         "started_at": "2025-01-01T00:00:00+00:00",
                         "initial": StepResult("start").to_dict()})
    for n in range(1, steps + 1):
        action = ToolCall("view", {"path": f"f{n}.py"})
        writer.write_step({"step": n, "actor": "agent", "decision": "auto",
                           "proposed": action.to_dict(), "action": action.to_dict(),
                           "note": "", "reasoning": "", "observation": f"obs {n}",
                           "result": StepResult(f"obs {n}", action=action).to_dict(),
                           "wall_time": 0.1, "usage": {}})
    if footer:
        writer.write_footer({"resolved": False, "score": 0, "max_score": 1, "steps": steps,
                             "patch": "", "reason": "submitted"})
    writer.close()


def test_round_trip_and_indexing(tmp_path):
    path = tmp_path / "t.jsonl"
    _write_sample(path)
    traj = read_trajectory(path)
    assert traj.header["schema_version"] == SCHEMA_VERSION
    assert len(traj) == 3 and traj.finished and not traj.truncated
    assert traj[0]["observation"] == "obs 1" and traj[-1]["step"] == 3
    assert traj.step(2)["action"]["arguments"] == {"path": "f2.py"}
    assert traj.result(3).action.name == "view"
    assert traj.initial.observation == "start"
    assert [t.index for t in traj.turns()] == [1, 2, 3]
    with pytest.raises(IndexError):
        traj.step(4)


def test_cut_off_last_line_is_tolerated(tmp_path):
    path = tmp_path / "t.jsonl"
    _write_sample(path, steps=2, footer=False)
    with path.open("a") as f:
        f.write('{"type": "step", "step": 3, "actor": "ag')  # killed mid-write
    traj = read_trajectory(path)
    assert traj.truncated and len(traj) == 2 and traj.footer is None


@pytest.mark.parametrize("line_no, replacement, message", [
    (3, "{not json", ":3: corrupt entry"),
    (2, json.dumps({"type": "step", "step": 1, "actor": "agent"}), ":2: bad step entry"),
    (2, json.dumps({"type": "note"}), ":2: unknown entry type"),
    (1, None, ":1: schema version 99 is not supported"),
    (3, json.dumps({"type": "step", "step": 5, "actor": "agent", "decision": "auto",
                    "proposed": None, "action": None, "observation": ""}),
     ":3: step number 5, expected 2"),
])
def test_corrupt_entries_name_their_line(tmp_path, line_no, replacement, message):
    path = tmp_path / "t.jsonl"
    _write_sample(path)
    lines = path.read_text().splitlines()
    if replacement is None:
        header = json.loads(lines[0])
        header["schema_version"] = 99
        replacement = json.dumps(header)
    lines[line_no - 1] = replacement
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TrajectoryError, match=message):
        read_trajectory(path)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(TrajectoryError, match="no such trajectory"):
        read_trajectory(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(TrajectoryError, match="no header"):
        read_trajectory(tmp_path / "empty.jsonl")


KILL_SCRIPT = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {tests!r})
    from pathlib import Path
    from scripted import ENTRYPOINT, FIX, TOOLS, ScriptedPolicy, write_repo
    from dgym_tui.core.env import RepoEnv
    from dgym_tui.core.types import ToolCall
    from dgym_tui.episode.session import Session

    class Stalling(ScriptedPolicy):
        def propose(self, turns):
            if len(turns) == 2:
                Path({marker!r}).write_text("ready")
                time.sleep(120)  # killed here, in the middle of the episode
            return super().propose(turns)

    env = RepoEnv(write_repo(Path({repo!r})), entrypoint=ENTRYPOINT, tools=TOOLS)
    policy = Stalling([ToolCall("view", {{"path": "calc.py"}}), FIX, FIX])
    session = Session(env, policy, mode="auto", trajectory_path={traj!r})
    session.start()
    session.run()
""")


def test_sigkill_mid_episode_leaves_a_readable_trajectory(tmp_path):
    traj_path = tmp_path / "killed.jsonl"
    marker = tmp_path / "ready"
    script = KILL_SCRIPT.format(tests=str(TESTS_DIR), marker=str(marker),
                                repo=str(tmp_path / "repo"), traj=str(traj_path))
    (tmp_path / "tmp").mkdir()  # where the killed process's temporary folders stay
    proc = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE,
                            start_new_session=True, env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            if proc.poll() is not None:
                pytest.fail(f"writer exited early: {proc.stderr.read().decode()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail("the writer never reached step 3")
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    traj = read_trajectory(traj_path)
    assert traj.footer is None and not traj.finished
    assert [s["action"]["name"] for s in traj.steps] == ["view", "rewrite"]
    assert "return a + b" in traj.steps[1]["observation"]


def test_each_line_is_written_at_once_and_synced_off_the_writers_thread(tmp_path, monkeypatch):
    # write_step returns once the line is written and flushed (a killed process keeps it);
    # the fsync (a power loss) runs in the writer's own thread, off the step's path; the
    # footer's fsync is waited for, and no thread of the writer stays behind.
    import threading

    from dgym_tui.episode import trajectory

    synced: list[tuple[str, int]] = []
    # another test's writer may still have its thread (idle for up to _Syncer.IDLE s)
    others = {t for t in threading.enumerate() if t.name == "trajectory-fsync"}
    real = os.fsync

    def spy(fd):
        synced.append((threading.current_thread().name, os.fstat(fd).st_ino))
        real(fd)

    monkeypatch.setattr(trajectory.os, "fsync", spy)
    path = tmp_path / "t.jsonl"
    writer = TrajectoryWriter(path)
    writer.write_header({"task": "t"})
    writer.write_step({"index": 1})
    assert len(path.read_text().splitlines()) == 2  # written before the call returned
    assert writer.sync(30)
    inode = path.stat().st_ino
    assert synced and all(name == "trajectory-fsync" and ino == inode for name, ino in synced)
    assert threading.current_thread().name not in {name for name, _ in synced}
    before = len(synced)
    writer.write_footer({"reason": "done"})
    assert len(synced) > before  # the footer is on disk when write_footer returns
    assert not {t for t in threading.enumerate() if t.name == "trajectory-fsync"} - others
    assert [json.loads(line)["type"] for line in path.read_text().splitlines()] == [
        "header", "step", "footer"]
