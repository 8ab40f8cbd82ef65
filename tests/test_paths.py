"""Default trajectory locations (issue 10 items 4 and 5): the user's data folder, unique
names, and the trajectory's folder hidden from the agent when it lies in the repository."""

from __future__ import annotations

import os
import subprocess
import sys

from scripted import ENTRYPOINT, write_repo

from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.support.paths import hidden_patterns, runs_dir, unique_trajectory_path

DGYM = [sys.executable, "-c", "import sys; from dgym_tui.cli.main import main; sys.exit(main())"]


def test_unique_names_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert runs_dir() == tmp_path / "data" / "dgym-tui" / "runs"
    made = [unique_trajectory_path("mini/pagination") for _ in range(3)]
    assert len(set(made)) == 3  # same second, three names
    assert all(p.parent == runs_dir() and p.name.startswith("mini_pagination-") for p in made)


def test_hidden_patterns(tmp_path):
    repo = tmp_path / "repo"
    assert hidden_patterns(repo, [repo / "runs" / "a.jsonl"]) == ["/runs/"]
    assert hidden_patterns(repo, [repo / "t.jsonl"]) == ["/t.jsonl"]
    assert hidden_patterns(repo, [tmp_path / "elsewhere" / "t.jsonl"]) == []


def test_tui_default_trajectory_is_outside_and_inside_is_hidden(tmp_path, monkeypatch):
    """`dgym-tui .` no longer writes runs/ into the repository; a --trajectory inside it
    is hidden from the agent (the workspace does not show it)."""
    from dgym_tui.cli.tui import build_app, build_parser

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    repo = write_repo(tmp_path / "repo")
    monkeypatch.chdir(repo)
    app = build_app(build_parser().parse_args([".", "--entrypoint", ENTRYPOINT]))
    out = app.session.trajectory_path
    assert out.parent == runs_dir() and not (repo / "runs").exists()
    inside = repo / "runs" / "mine.jsonl"
    app = build_app(build_parser().parse_args([".", "--trajectory", str(inside)]))
    env = app.session.env
    (repo / "runs").mkdir(exist_ok=True)
    (repo / "runs" / "old.jsonl").write_text("{}\n")
    try:
        env.reset()
        assert not any(f.startswith("runs/") for f in env.workspace.files())
    finally:
        env.close()


def test_play_never_overwrites(tmp_path):
    """Two `dgym play` runs without -o write two trajectories."""
    repo = write_repo(tmp_path / "repo")
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data")}
    for _ in range(2):
        proc = subprocess.run(DGYM + ["play", str(repo), "--entrypoint", ENTRYPOINT],
                              input="view calc.py\n", text=True, capture_output=True,
                              timeout=240, check=False, cwd=tmp_path, env=env)
        assert proc.returncode == 0, proc.stderr
    made = sorted((tmp_path / "data" / "dgym-tui" / "runs").iterdir())
    assert len(made) == 2 and all(len(read_trajectory(p)) == 1 for p in made)
    assert not list(tmp_path.glob("*.jsonl")) and not (repo / "runs").exists()
