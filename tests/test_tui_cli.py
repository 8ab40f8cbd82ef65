"""The ``dgym-tui`` command line (dgym_tui/cli/tui.py): arguments to an app, one-line usage errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dgym_tui.cli.tui import build_app, build_parser, main
from dgym_tui.tui.live.screen import LiveScreen


def test_main_usage_errors_exit_2(tmp_path, capsys):
    assert main([str(tmp_path / "missing")]) == 2
    assert "no such folder" in capsys.readouterr().err
    bad = tmp_path / "repo"
    bad.mkdir()
    (bad / "dgym.yaml").write_text("entrypoint: [unclosed\n")
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad config" in err and len(err.strip().splitlines()) == 1
    assert main([]) == 2
    assert main(["--replay", str(tmp_path / "none.jsonl")]) == 2
    assert "no such trajectory" in capsys.readouterr().err
    good = tmp_path / "good"
    good.mkdir()
    assert main([str(good), "--terminal", "docker", "--image", "dgym-tui/no-such-image:x"]) == 2
    err = capsys.readouterr().err
    assert "dgym-tui/no-such-image:x not found" in err or "Docker is not reachable" in err
    assert main(["--task", "no_such_task_xyz"]) == 2
    assert main([str(tmp_path), "--agent", "debug_agent"]) == 2
    assert "--llm" in capsys.readouterr().err


def test_no_docker_is_a_one_line_error(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    env = {"DOCKER_HOST": "unix:///nonexistent/docker.sock", "PATH": "/usr/bin:/bin"}
    import os
    proc = subprocess.run(check=False, args=[sys.executable, "-m", "dgym_tui.cli.tui", str(repo), "--terminal",
                           "docker", "--image", "x"], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("dgym-tui: error: Docker is not reachable")
    assert "Traceback" not in proc.stderr


def test_human_mode_never_imports_litellm(tmp_path):
    code = ("import sys; from dgym_tui.cli.tui import build_parser, build_app; "
            f"app = build_app(build_parser().parse_args([{str(tmp_path)!r}, '--trajectory', "
            f"{str(tmp_path / 't.jsonl')!r}])); "
            "print('litellm' in sys.modules, 'dgym_tui.policies.agent' in sys.modules)")
    proc = subprocess.run(check=False, args=[sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, cwd=Path(__file__).parent.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_benchmark_task_has_nothing_to_apply(tmp_path):
    app = build_app(build_parser().parse_args(["--task", "pagination", "--trajectory",
                                               str(tmp_path / "t.jsonl")]))
    try:
        assert app.can_apply is False
        assert LiveScreen(app.worker, can_apply=app.can_apply).action_available("apply_patch") is False
    finally:
        app.close_session()
    repo = tmp_path / "r"
    repo.mkdir()
    app = build_app(build_parser().parse_args([str(repo), "--trajectory",
                                               str(tmp_path / "u.jsonl")]))
    try:
        assert app.can_apply is True
    finally:
        app.close_session()


def test_main_usage_errors_found_in_the_terminal(tmp_path, capsys):
    afile = tmp_path / "afile.py"
    afile.write_text("x = 1\n")
    assert main([str(afile)]) == 2
    err = capsys.readouterr().err
    assert "is a file, not a folder" in err and len(err.strip().splitlines()) == 1
    repo = tmp_path / "r"
    repo.mkdir()
    assert main([str(repo), "--theme", "no-such-theme"]) == 2
    err = capsys.readouterr().err
    assert "unknown theme 'no-such-theme'" in err and "dgym-dark" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.docker
def test_missing_docker_image_is_one_line_before_the_app(tmp_path, capsys):
    repo = tmp_path / "r"
    repo.mkdir()
    assert main([str(repo), "--terminal", "docker", "--image", "dgym-tui/no-such:image",
                 "--trajectory", str(tmp_path / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "Docker image dgym-tui/no-such:image not found" in err
    assert len(err.strip().splitlines()) == 1


def test_replay_app_from_the_command_line(tmp_path, open_repo):
    from dgym_tui.cli.tui import build_app, build_parser

    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    assert 1 == 2\n")
    traj = tmp_path / "t.jsonl"
    session = open_repo(repo, trajectory=traj, tools=("view", "eval"))
    session.start()
    session.finish("quit")
    session.env.close()
    app = build_app(build_parser().parse_args(["--replay", str(traj), "--trajectory",
                                               str(tmp_path / "fork.jsonl")]))
    assert app.replay_screen is not None and app.session is None and app.replay_screen.fork_factory is not None
    assert len(app.replay_screen.model) == 0 and app.replay_screen.model.files() == ["test_a.py"]
    app.close_session()


def test_entrypoint_from_the_folder_config(tmp_path):
    from dgym_tui.cli.tui import build_app, build_parser
    from dgym_tui.core.env import DEFAULT_ENTRYPOINT

    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "task.yaml").write_text("entrypoint: python -m pytest -q tests\nreadonly: [tests/]\n")

    def env_of(*extra):
        app = build_app(build_parser().parse_args([str(repo), "--trajectory",
                                                   str(tmp_path / "t.jsonl"), *extra]))
        try:
            return app.session.env.entrypoint, app.session.env.readonly
        finally:
            app.close_session()

    assert env_of() == ("python -m pytest -q tests", ["tests/"])
    assert env_of("--entrypoint", "python -m pytest -x")[0] == "python -m pytest -x"
    (repo / "task.yaml").unlink()
    assert env_of()[0] == DEFAULT_ENTRYPOINT


def test_entry_point_pauses_the_collector_until_the_app_or_its_error(tmp_path, capsys,
                                                                     monkeypatch):
    """``dgym-tui`` pauses the garbage collector before it imports the app (resumed after
    the app's first frame): a usage error on the way resumes it too, and a collector the
    program had disabled stays disabled."""
    import gc

    import dgym_tui.cli.tui as tui_cli
    from dgym_tui.cli.main import tui_main

    seen = []
    real_main = tui_cli.main

    def spy(argv):
        seen.append(gc.isenabled())
        return real_main(argv)

    monkeypatch.setattr(tui_cli, "main", spy)
    assert gc.isenabled()
    assert tui_main([str(tmp_path / "missing")]) == 2
    assert seen == [False] and gc.isenabled()
    assert "no such folder" in capsys.readouterr().err
    gc.disable()
    try:
        assert tui_main([str(tmp_path / "missing")]) == 2
        assert not gc.isenabled()
    finally:
        gc.enable()
