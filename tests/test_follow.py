"""TrajectoryFollower on real files: appended steps, a cut-off last line, corrupt lines, a rewrite;
FileWatch wakes on a write of its file only."""

from __future__ import annotations

import json
import threading
import time

from dgym_tui.episode.follow import FileWatch, TrajectoryFollower
from dgym_tui.episode.trajectory import TrajectoryWriter


def _step(n: int) -> dict:
    return {"step": n, "actor": "agent", "action": {"name": "view", "arguments": {}},
            "observation": f"obs {n}"}


def test_follows_appended_steps_and_waits_for_a_cut_off_line(tmp_path):
    path = tmp_path / "trajectory.jsonl"
    follower = TrajectoryFollower(path)
    assert follower.poll() == [] and follower.header is None  # not written yet
    writer = TrajectoryWriter(path, fsync=False)
    writer.write_header({"task": {"name": "t"}, "config": {}})
    writer.write_step(_step(1))
    writer.close()
    assert [s["step"] for s in follower.poll()] == [1] and follower.header["type"] == "header"
    assert follower.poll() == []  # nothing new
    line = json.dumps({"type": "step", **_step(2)}) + "\n"
    with open(path, "a") as f:  # a step flushed in two writes
        f.write(line[:10])
    assert follower.poll() == [] and not follower.problem
    with open(path, "a") as f:
        f.write(line[10:])
    assert [s["step"] for s in follower.poll()] == [2]
    with open(path, "a") as f:
        f.write(json.dumps({"type": "footer", "resolved": True, "reason": "submitted"}) + "\n")
    assert follower.poll() == [] and follower.footer["resolved"] is True
    assert [s["step"] for s in follower.steps] == [1, 2]


def test_corrupt_line_is_skipped_and_named_and_a_rewrite_starts_over(tmp_path):
    path = tmp_path / "trajectory.jsonl"
    header = json.dumps({"type": "header", "schema_version": 2})
    steps = [json.dumps({"type": "step", **_step(n)}) for n in (1, 2)]
    path.write_text("\n".join([header, steps[0], "{not json", steps[1]]) + "\n")
    follower = TrajectoryFollower(path)
    assert [s["step"] for s in follower.poll()] == [1, 2]
    assert follower.problem == "corrupt line 3 skipped"
    path.write_text(header + "\n")  # the file was written anew (shorter)
    assert follower.poll() == [] and follower.steps == [] and not follower.problem


def test_file_watch_wakes_on_a_write_and_times_out_without(tmp_path):
    path = tmp_path / "trajectory.jsonl"
    path.write_text("")
    watch = FileWatch(path)
    assert not watch.polls  # Linux: inotify-simple is a dependency there
    try:
        start = time.monotonic()
        assert watch.wait(0.3) is False and time.monotonic() - start >= 0.25
        writer = threading.Timer(0.1, lambda: path.write_text("{}\n"))
        writer.start()
        start = time.monotonic()
        assert watch.wait(5) is True and time.monotonic() - start < 4
        writer.join()
        while watch.wait(0.1):  # the same write's later events (its close after its modify)
            pass
        (tmp_path / "other.txt").write_text("x")  # another file of the folder: not a change
        assert watch.wait(0.3) is False
    finally:
        watch.close()
