"""Issue 24, class 9: the person chooses the sandbox. A repository's own ``dgym.yaml`` may
raise it (``local`` -> ``bwrap`` / ``docker``), never lower it; ``dgym play PATH`` defaults
like ``dgym-tui PATH`` (bwrap where it works); ``dgym run`` over a folder benchmark follows
the same rule; the app's status bar and ``dgym play``'s first line name the sandbox in
force, ``local`` in red as unsandboxed. Real command lines (subprocesses), the real app
(Pilot), real bwrap: the entrypoint prints the name of PID 1, ``bwrap`` only inside it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tui_helpers import SIZE, settle

from dgym_tui.benchmarks.folder import FolderBenchmark
from dgym_tui.benchmarks.local import TERMINAL_REQUEST, folder_task
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.launch.sandbox import choose_terminal

DGYM = [sys.executable, "-c", "import sys; from dgym_tui.cli.main import main; sys.exit(main())"]
#: Prints "bwrap" inside the bwrap sandbox (its PID namespace's first process), else the host's.
WHERE = "cat /proc/1/comm"
CALC = {"calc.py": "def add(a, b):\n    return a - b\n",
        "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"}


def sandbox(name: str, why: str | None = None):
    """A stand-in for the person's default: ``name`` (and the notice ``why``)."""
    return lambda: (name, why)


@pytest.fixture
def repo_asking(make_repo):
    """``make(terminal) -> Path``: the calc repository whose dgym.yaml asks for ``terminal``
    (None: no dgym.yaml) and runs WHERE."""

    def make(terminal: str | None, name: str = "repo"):
        files = dict(CALC)
        if terminal:
            files["dgym.yaml"] = f"entrypoint: {WHERE}\nterminal: {terminal}\n"
        return make_repo(files, name)

    return make


class TestTheRule:
    def test_a_repository_cannot_lower_the_default(self, repo_asking):
        task = folder_task(repo_asking("local"))
        assert task.terminal == "local" and task.meta[TERMINAL_REQUEST].endswith("dgym.yaml")
        terminal, notices = choose_terminal(task, None, sandbox("bwrap"))
        assert terminal == "bwrap"
        assert len(notices) == 1 and "ignored 'terminal: local'" in notices[0]
        assert "cannot lower the sandbox" in notices[0] and "dgym.yaml" in notices[0]

    @pytest.mark.parametrize(("asked", "default", "expected"), [
        ("docker", "bwrap", "docker"), ("bwrap", "local", "bwrap"), ("docker", "local", "docker"),
        ("bwrap", "bwrap", "bwrap"), (None, "bwrap", "bwrap")])
    def test_a_repository_may_raise_it(self, repo_asking, asked, default, expected):
        assert choose_terminal(folder_task(repo_asking(asked)), None,
                               sandbox(default)) == (expected, [])

    def test_no_working_sandbox_says_so(self, repo_asking):
        why = "no sandbox: bwrap does not work here"
        assert choose_terminal(folder_task(repo_asking(None)), None,
                               sandbox("local", why)) == ("local", [why])

    def test_the_persons_choice_wins(self, repo_asking):
        task = folder_task(repo_asking("docker"))
        assert choose_terminal(task, "local", sandbox("bwrap")) == ("local", [])
        # the local benchmark's own terminal option is the person's too (a run config's)
        chosen = folder_task(repo_asking("local", "r2"), terminal="bwrap")
        assert TERMINAL_REQUEST not in chosen.meta
        assert choose_terminal(chosen, None, sandbox("local", "x")) == ("bwrap", [])

    def test_a_loaders_task_without_a_terminal_gets_the_persons_default(self):
        """Our own tasks (``mini``) name no terminal: an agent's code on them is as hostile as
        on anyone's, so they run in the person's sandbox, not unsandboxed."""
        from dgym_tui.benchmarks.base import get_benchmark

        task = get_benchmark("mini").load("pagination")
        assert task.terminal is None and TERMINAL_REQUEST not in task.meta
        assert choose_terminal(task, None, sandbox("bwrap")) == ("bwrap", [])
        why = "no sandbox: bwrap does not work here"
        assert choose_terminal(task, None, sandbox("local", why)) == ("local", [why])
        assert choose_terminal(task, "local", sandbox("bwrap")) == ("local", [])

    def test_a_loaders_own_terminal_is_kept(self):
        from dgym_tui.benchmarks.base import Task

        task = Task(name="t", benchmark="swebench", path=Path("/nonexistent"), entrypoint="true",
                    terminal="docker")
        assert choose_terminal(task, None, sandbox("bwrap")) == ("docker", [])

    def test_folder_benchmark_tasks_are_requests_too(self, make_repo):
        root = make_repo({"dgym.yaml": "terminal: local\n", "t1/calc.py": CALC["calc.py"],
                          "t2/calc.py": CALC["calc.py"], "t2/dgym.yaml": "terminal: docker\n"})
        bench = FolderBenchmark(root)
        t1, t2 = bench.load("t1"), bench.load("t2")
        assert choose_terminal(t1, None, sandbox("bwrap"))[0] == "bwrap"
        assert t1.meta[TERMINAL_REQUEST] == str(root / "dgym.yaml")
        assert choose_terminal(t2, None, sandbox("bwrap")) == ("docker", [])


def _play(repo, *options, stdin="eval\n"):
    proc = subprocess.run(DGYM + ["play", str(repo), "-o", str(repo.parent / "p.jsonl"), *options],
                          input=stdin, text=True, capture_output=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.usefixtures("bwrap_ready")
class TestCommandLines:
    def test_play_ignores_a_lowering_dgym_yaml_and_names_the_sandbox(self, repo_asking):
        proc = _play(repo_asking("local"))
        assert proc.stdout.splitlines()[0] == "sandbox: bwrap"
        assert "ignored 'terminal: local'" in proc.stderr and "cannot lower" in proc.stderr
        assert "\nbwrap\n" in proc.stdout  # the entrypoint really ran inside bwrap

    def test_play_defaults_like_dgym_tui(self, repo_asking):
        repo = repo_asking(None)
        proc = _play(repo, "--entrypoint", WHERE)
        assert proc.stdout.splitlines()[0] == "sandbox: bwrap"
        assert "\nbwrap\n" in proc.stdout
        local = _play(repo, "--entrypoint", WHERE, "--terminal", "local")
        assert local.stdout.splitlines()[0].startswith("sandbox: local (unsandboxed")
        assert "\nbwrap\n" not in local.stdout

    def test_run_over_a_folder_benchmark(self, make_repo, tmp_path):
        """The run config chooses; a task folder's dgym.yaml cannot lower its default."""
        root = make_repo({"lower/calc.py": CALC["calc.py"],
                          "lower/dgym.yaml": f"entrypoint: {WHERE}\nterminal: local\n"}, "suite")
        config = tmp_path / "run.yaml"
        for chosen, expected in ((None, "bwrap"), ("local", "local")):
            out = tmp_path / f"out-{chosen}"
            lines = [f"benchmark: {{name: folder, path: {root}}}", "policy: human", "max_steps: 1",
                     *([f"terminal: {chosen}"] if chosen else [])]
            config.write_text("\n".join(lines) + "\n")
            proc = subprocess.run(DGYM + ["run", str(config), "--output", str(out), "--no-progress"],
                                  input="submit\n", text=True, capture_output=True, timeout=240,
                                  check=False)
            assert proc.returncode == 0, proc.stderr
            traj = read_trajectory(out / "lower" / "trajectory.jsonl")
            assert traj.header["task"]["terminal"] == expected
            assert ("\nbwrap" in traj.initial.observation) == (expected == "bwrap")
            assert ("ignored 'terminal: local'" in proc.stderr) == (chosen is None)


@pytest.mark.usefixtures("bwrap_ready")
class TestStatusBar:
    @pytest.mark.parametrize(("argv", "shown"), [([], "bwrap"), (["--terminal", "local"],
                                                                  "local: unsandboxed")])
    async def test_the_status_bar_names_the_sandbox(self, repo_asking, tmp_path, capsys, argv,
                                                    shown):
        """dgym-tui's own argument handling (build_app) on a repository whose dgym.yaml asks
        for local: bwrap unless the person says local, and the status bar says which."""
        from dgym_tui.cli.tui import build_app, build_parser

        repo = repo_asking("local")
        args = build_parser().parse_args([str(repo), "--trajectory", str(tmp_path / "t.jsonl"),
                                          *argv])
        app = build_app(args)
        assert ("ignored 'terminal: local'" in capsys.readouterr().err) == (not argv)
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            status = app.status.status.render()
            assert f"│ {shown} │" in status.plain
            red = [status.plain[span.start:span.end] for span in status.spans
                   if "red" in str(span.style)]
            assert red == (["local: unsandboxed "] if argv else [])
            assert ("\nbwrap\n" in app.session.turns[0].result.observation if app.session.turns
                    else True)
            await pilot.press("q")
            await pilot.pause()
        assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0])["task"]["terminal"] \
            == shown.split(":")[0]


@pytest.mark.usefixtures("bwrap_ready")
def test_replay_runs_a_local_recording_in_the_persons_sandbox(repo_asking, tmp_path):
    """A trajectory may come from anyone: the ``local`` its header records cannot lower the
    sandbox its actions run in again. ``dgym replay`` re-executes them in bwrap (first line
    and the entrypoint's PID 1 say so) unless the person asks ``--terminal local``."""
    repo = repo_asking(None)
    traj = tmp_path / "p.jsonl"
    _play(repo, "--entrypoint", WHERE, "--terminal", "local", "-o", str(traj), stdin="eval\n")
    assert read_trajectory(traj).header["task"]["terminal"] == "local"

    def replay(*options):
        return subprocess.run(DGYM + ["replay", str(traj), *options], text=True,
                              capture_output=True, timeout=240, check=False)

    proc = replay()
    assert proc.stdout.splitlines()[0] == "sandbox: bwrap", proc.stdout + proc.stderr
    assert "diverged" in proc.stdout  # the eval printed bwrap where the recording had the host's
    chosen = replay("--terminal", "local")
    assert chosen.stdout.splitlines()[0].startswith("sandbox: local (unsandboxed"), chosen.stdout
    assert "no divergence" in chosen.stdout
