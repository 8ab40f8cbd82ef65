"""Exercism-style benchmark: loader fields, staging without .meta, stub fails / example passes."""

from __future__ import annotations

import pytest

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.exercism import ExercismBenchmark, exercise_files
from dgym_tui.core.types import ToolCall

OUR_EXERCISES = ["ledger-account", "roman-converter", "run-length-codec"]
#: The tools these tests use (pdb is not needed here).
TOOLS = ("listdir", "view", "eval", "rewrite", "grep", "submit")


def test_default_benchmark_lists_our_exercises():
    bench = get_benchmark("exercism")
    assert bench.name == "exercism"
    assert bench.tasks() == OUR_EXERCISES


def test_loader_maps_fields():
    bench = get_benchmark("exercism")
    task = bench.load("run-length-codec")
    assert task.benchmark == "exercism"
    assert task.entrypoint == "python -m pytest -q run_length_codec_test.py"
    # instructions.md then instructions.append.md
    assert "weather station" in task.description
    assert task.description.index("weather station") < task.description.index("Notes for Python")
    assert "run_length_codec_test.py" in task.readonly
    assert ".meta/" in task.ignore
    # the staged copy has the stub, the tests and the docs, but no .meta at all
    files = sorted(p.relative_to(task.path).as_posix() for p in task.path.rglob("*") if p.is_file())
    assert files == [".docs/instructions.append.md", ".docs/instructions.md",
                     "run_length_codec.py", "run_length_codec_test.py"]
    assert task.meta["stub"] == "run_length_codec.py"
    assert task.meta["example"].endswith(".meta/example.py")
    # the original exercise is untouched
    assert (bench.source("run-length-codec") / ".meta" / "example.py").is_file()
    # meta (the answer's location) is not in what a trajectory header stores by default
    assert "meta" not in task.to_dict()


def test_unknown_exercise_names_close_match():
    with pytest.raises(KeyError, match="roman-converter"):
        get_benchmark("exercism").load("roman-convertor")


def _write_track(root, slug, with_config):
    ex = root / "exercises" / "practice" / slug
    (ex / ".docs").mkdir(parents=True)
    (ex / ".meta").mkdir()
    module = slug.replace("-", "_")
    (ex / ".docs" / "instructions.md").write_text("# Instructions\n\nDouble a number.\n")
    if with_config:
        (ex / ".meta" / "config.json").write_text(
            '{"files": {"solution": ["impl.py"], "test": ["check_test.py"]}}')
        module = "impl"
        (ex / "impl.py").write_text("def double(x):\n    pass\n")
        (ex / "check_test.py").write_text(
            "from impl import double\n\ndef test_double():\n    assert double(2) == 4\n")
    else:
        (ex / f"{module}.py").write_text("def double(x):\n    pass\n")
        (ex / f"{module}_test.py").write_text(
            f"from {module} import double\n\ndef test_double():\n    assert double(2) == 4\n")
    (ex / ".meta" / "example.py").write_text("def double(x):\n    return 2 * x\n")
    return ex


def test_track_root_or_practice_folder(tmp_path):
    _write_track(tmp_path, "double-it", with_config=False)
    _write_track(tmp_path, "with-config", with_config=True)
    for path in (tmp_path, tmp_path / "exercises" / "practice"):
        bench = ExercismBenchmark(path=path)
        assert bench.tasks() == ["double-it", "with-config"]
    assert exercise_files(bench.source("double-it")) == ("double_it.py", "double_it_test.py")
    task = bench.load("with-config")
    assert task.entrypoint == "python -m pytest -q check_test.py"
    assert task.readonly[0] == "check_test.py"
    assert ExercismBenchmark(path=tmp_path, exercises=["with-config"]).tasks() == ["with-config"]


def test_folder_without_exercises_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Exercism exercises"):
        ExercismBenchmark(path=tmp_path)


def _solve(env, task):
    """Rewrite the stub with the example solution through env.step, then eval."""
    with open(task.meta["example"], encoding="utf-8") as handle:
        example = handle.read()
    r = env.step(ToolCall("rewrite", {"path": task.meta["stub"], "new_code": example}))
    assert not r.error, r.observation
    return env.step(ToolCall("eval", {}))


@pytest.mark.parametrize("slug", OUR_EXERCISES)
def test_stub_fails_and_example_passes_locally(slug, make_env, fast_pytest):
    task = get_benchmark("exercism").load(slug)
    # same tests, without the host's third-party pytest plugins (slow to load)
    kwargs = task.env_kwargs(tools=TOOLS, entrypoint=f"{fast_pytest} {task.meta['test']}")
    env = make_env(kwargs.pop("path"), **kwargs)
    first = env.reset()
    assert not first.resolved
    assert first.max_score > 0 and first.score == 0
    # the agent cannot see the reference solution, nor change the tests
    listing = env.step(ToolCall("listdir", {"path": ".", "depth": 3})).observation
    assert ".meta" not in listing and "example" not in listing
    blocked = env.step(ToolCall("rewrite", {"path": task.meta["test"], "new_code": "x = 1\n"}))
    assert blocked.error
    final = _solve(env, task)
    assert final.resolved, final.eval_output
    assert final.score == final.max_score == first.max_score


@pytest.mark.docker
def test_example_passes_in_docker(docker_ready):
    task = get_benchmark("exercism").load("roman-converter")
    env = task.make_env(terminal="docker", image=docker_ready, tools=TOOLS)
    try:
        first = env.reset()
        assert not first.resolved and first.max_score == 38
        # even code running inside the sandbox finds no reference solution
        probe = env.terminal.run("ls -a; ls .meta 2>&1 || true")
        assert ".meta" not in probe.output.split() and "example.py" not in probe.output
        final = _solve(env, task)
        assert final.resolved and final.score == 38, final.eval_output
    finally:
        env.close()
