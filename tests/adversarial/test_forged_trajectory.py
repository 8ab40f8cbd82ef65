"""A trajectory may come from anyone: replaying or forking a forged one never writes or
reads outside its own folders, and never runs its actions with fewer walls than the
person chose (tests/test_sandbox_choice.py shows the terminal rule on the command line)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from dgym_tui.episode.trajectory import TrajectoryError, read_trajectory
from dgym_tui.launch.replay import fork, recorded_start, replay_task

DGYM = [sys.executable, "-c", "import sys; from dgym_tui.cli.main import main; sys.exit(main())"]
CALC = {"calc.py": "def add(a, b):\n    return a - b\n",
        "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}


def _recording(make_repo, tmp_path) -> Path:
    """A real one-step recording (dgym play, local terminal) of the calc repository."""
    repo = make_repo(CALC)
    out = tmp_path / "rec.jsonl"
    proc = subprocess.run(DGYM + ["play", str(repo), "--terminal", "local", "-o", str(out)],
                          input="view calc.py\n", text=True, capture_output=True, timeout=240,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    return out


def _forge(path: Path, originals: dict, files: dict) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    lines[0]["files"] = {**lines[0].get("files", {}), **files}
    step = next(line for line in lines if line.get("step") == 1)
    step["originals"] = originals
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.mark.parametrize("where", ["dotdot", "absolute", "link"])
def test_a_forged_fork_writes_nothing_outside_its_copy(make_repo, tmp_path, where):
    """The recorded start of each file (``originals``) is written into the fork's copy of
    the source: a path leading out of it (``..``, absolute, through a link the source
    holds) makes the fork refuse in one line, and nothing is written outside."""
    out = _recording(make_repo, tmp_path)
    target = Path("/tmp") / f"dgym-forged-{uuid.uuid4().hex}"
    outside = tmp_path / "outside"
    outside.mkdir()
    source = read_trajectory(out).header["task"]["path"]
    (Path(source) / "link").symlink_to(outside)
    rel = {"dotdot": f"../../../../../../..{target}", "absolute": str(target),
           "link": "link/planted.txt"}[where]
    _forge(out, {rel: "pwned", "calc.py": 42}, {rel: "0" * 40})  # 42: not text, ignored
    traj = read_trajectory(out)
    restore, _ = recorded_start(traj, source)
    assert "calc.py" not in restore and rel in restore
    with pytest.raises(TrajectoryError, match="cannot rebuild the recorded source"):
        fork(traj, 1, None, output=tmp_path / "fork.jsonl", mode="human", start=False,
             terminal="local")
    assert not target.exists()
    assert list(outside.iterdir()) == []


def test_a_recorded_local_terminal_is_only_a_request(make_repo, tmp_path):
    """The terminal a trajectory records may raise the person's sandbox, never lower it."""
    out = _recording(make_repo, tmp_path)
    traj = read_trajectory(out)
    assert traj.header["task"]["terminal"] == "local"
    task, _ = replay_task(traj, None)
    from dgym_tui.core.terminals.bwrap import default_terminal

    assert task.terminal == default_terminal()[0]
    assert replay_task(traj, "local")[0].terminal == "local"  # the person's own choice
