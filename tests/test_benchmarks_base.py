"""Task, Benchmark, the registry, and the local / mini loaders' own behaviour."""

from __future__ import annotations

import importlib.metadata
import textwrap

import pytest

from dgym_tui.benchmarks import base
from dgym_tui.benchmarks.base import (
    Benchmark,
    Task,
    benchmark_names,
    get_benchmark,
    read_patterns,
    stage_copy,
)
from dgym_tui.benchmarks.local import LocalBenchmark
from dgym_tui.benchmarks.mini import MiniBenchmark
from dgym_tui.core.env import RepoEnv


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "calc"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n")
    return root


def make_task(path, **fields):
    return Task(name="calc", benchmark="local", path=path,
                entrypoint="python -m pytest -q test_calc.py", **fields)


# --------------------------------------------------------------------- Task
def test_env_kwargs_map_the_fields(repo):
    task = make_task(repo, description="add is wrong", ignore=["notes/"],
                     readonly=["test_calc.py"], setup_commands=["true"],
                     debug_entrypoint="python -m pdb test_calc.py")
    kwargs = task.env_kwargs()
    assert kwargs == {
        "path": repo, "entrypoint": "python -m pytest -q test_calc.py",
        "debug_entrypoint": "python -m pdb test_calc.py", "task": "add is wrong",
        "ignore": ["notes/"], "readonly": ["test_calc.py"], "setup_commands": ["true"],
    }
    # None terminal / image are left to the environment's defaults.
    assert "terminal" not in kwargs and "image" not in kwargs
    kwargs["ignore"].append("x")
    assert task.ignore == ["notes/"], "env_kwargs must hand out copies"


def test_overrides_win(repo):
    task = make_task(repo, terminal="local", image="python:3.12-slim")
    kwargs = task.env_kwargs(terminal="docker", eval_timeout=5)
    assert kwargs["terminal"] == "docker" and kwargs["image"] == "python:3.12-slim"
    assert kwargs["eval_timeout"] == 5


def test_make_env_builds_a_real_repo_env(repo):
    task = make_task(repo, description="add is wrong", readonly=["test_calc.py"])
    env = task.make_env(tools=("view", "eval"))
    try:
        assert isinstance(env, RepoEnv)
        assert env.path == str(repo) and env.task == "add is wrong"
        assert env.entrypoint == "python -m pytest -q test_calc.py"
        assert env.readonly == ["test_calc.py"] and list(env.tools) == ["view", "eval"]
    finally:
        env.close()


def test_make_env_refuses_unknown_override(repo):
    with pytest.raises(TypeError):
        make_task(repo).make_env(colour="red")


def test_to_dict_hides_meta_unless_asked(repo):
    task = make_task(repo, meta={"gold_patch": "--- a/calc.py"})
    assert "meta" not in task.to_dict()
    data = task.to_dict(include_meta=True)
    assert data["meta"] == {"gold_patch": "--- a/calc.py"} and data["path"] == str(repo)


# ---------------------------------------------------------------- Benchmark
class Tiny(Benchmark):
    name = "tiny"

    def tasks(self):
        return ["alpha", "beta", "gamma"]

    def _load(self, task_name):
        return Task(task_name, self.name, ".", "true")


def test_load_unknown_task_suggests_close_names():
    with pytest.raises(KeyError, match="did you mean: alpha"):
        Tiny().load("alpah")
    with pytest.raises(KeyError, match="known: alpha, beta, gamma"):
        Tiny().load("zzz")


def test_iterating_a_benchmark_yields_tasks():
    assert [t.name for t in Tiny()] == ["alpha", "beta", "gamma"] and len(Tiny()) == 3


# ----------------------------------------------------------------- registry
def test_all_benchmarks_are_registered():
    assert {"mini", "local", "exercism", "swebench", "swebench-debug"} <= set(benchmark_names())


def test_unknown_benchmark_names_the_known_ones():
    with pytest.raises(ValueError, match="did you mean: mini"):
        get_benchmark("minni")
    with pytest.raises(ValueError, match="known: aider, exercism, folder, local, mini"):
        get_benchmark("nothing-like-it")


def test_get_benchmark_builds_with_options(repo):
    assert isinstance(get_benchmark("mini"), MiniBenchmark)
    bench = get_benchmark("local", path=repo, entrypoint="python -m pytest -q test_calc.py")
    assert isinstance(bench, LocalBenchmark) and bench.tasks() == ["calc"]
    with pytest.raises(TypeError):
        get_benchmark("mini", colour="red")


def test_exercism_loader_is_found_by_its_name_attribute():
    bench = get_benchmark("exercism")
    assert bench.name == "exercism" and isinstance(bench, Benchmark)


def test_missing_loader_module_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(base.REGISTRY, "ghost", "dgym_tui.benchmarks.no_such_module")
    with pytest.raises(ValueError, match="module 'dgym_tui.benchmarks.no_such_module' is not"):
        get_benchmark("ghost")


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "bench_plugin.py").write_text(textwrap.dedent("""
        from dgym_tui.benchmarks.base import Benchmark, Task

        class First(Benchmark):
            name = "first"
            def __init__(self, size=1):
                self.size = size
            def tasks(self):
                return [f"t{i}" for i in range(self.size)]
            def _load(self, task_name):
                return Task(task_name, self.name, ".", "true")

        class Second(First):
            name = "second"
    """))
    (tmp_path / "broken_plugin.py").write_text("import package_that_is_not_installed\n")
    return tmp_path


def test_module_registration_picks_the_class_by_name(plugin_dir, monkeypatch):
    monkeypatch.setitem(base.REGISTRY, "first", "bench_plugin")
    monkeypatch.setitem(base.REGISTRY, "second", "bench_plugin")
    monkeypatch.setitem(base.REGISTRY, "third", "bench_plugin")
    monkeypatch.setitem(base.REGISTRY, "explicit", "bench_plugin:Second")
    assert type(get_benchmark("first", size=2)).__name__ == "First"
    assert get_benchmark("first", size=2).tasks() == ["t0", "t1"]
    assert type(get_benchmark("second")).__name__ == "Second"
    assert type(get_benchmark("explicit")).__name__ == "Second"
    with pytest.raises(ValueError, match="no Benchmark subclass with name = 'third'"):
        get_benchmark("third")
    monkeypatch.setitem(base.REGISTRY, "typo", "bench_plugin:Thrid")
    with pytest.raises(ValueError, match="has no 'Thrid'"):
        get_benchmark("typo")


def test_a_loader_missing_its_dependency_keeps_the_real_error(plugin_dir, monkeypatch):
    monkeypatch.setitem(base.REGISTRY, "broken", "broken_plugin")
    with pytest.raises(ModuleNotFoundError, match="package_that_is_not_installed"):
        get_benchmark("broken")


def test_entry_point_benchmarks(plugin_dir, monkeypatch):
    point = importlib.metadata.EntryPoint("from-plugin", "bench_plugin:First",
                                          base.ENTRY_POINT_GROUP)

    def fake_entry_points(group):
        return [point] if group == base.ENTRY_POINT_GROUP else []

    monkeypatch.setattr(importlib.metadata, "entry_points", fake_entry_points)
    assert "from-plugin" in benchmark_names()
    assert get_benchmark("from-plugin", size=3).tasks() == ["t0", "t1", "t2"]


# ------------------------------------------------------------------ helpers
def test_stage_copy_leaves_out_private_files(repo):
    (repo / "task.yaml").write_text("bug: secret\n")
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "calc.cpython-311.pyc").write_bytes(b"\0")
    copy = stage_copy(repo, exclude=["task.yaml"])
    assert copy.name == "calc" and copy != repo
    assert sorted(p.name for p in copy.iterdir()) == ["calc.py", "test_calc.py"]
    assert (repo / "task.yaml").exists(), "the original is untouched"
    assert stage_copy(repo) != copy, "every load gets its own copy"
    with pytest.raises(FileNotFoundError):
        stage_copy(repo / "missing")


def test_read_patterns(tmp_path):
    (tmp_path / ".debugignore").write_text("# comment\n\nnotes/\n  *.log  \n")
    assert read_patterns(tmp_path / ".debugignore") == ["notes/", "*.log"]
    assert read_patterns(tmp_path / "absent") == []


# -------------------------------------------------------------------- local
def test_local_benchmark_one_task_named_after_the_folder(repo):
    bench = LocalBenchmark(repo, entrypoint="python -m pytest -q test_calc.py",
                           readonly=["test_calc.py"], terminal="local")
    task = bench.load("calc")
    assert (task.name, task.benchmark, task.path) == ("calc", "local", repo)
    assert task.readonly == ["test_calc.py"] and task.terminal == "local"
    task.readonly.append("calc.py")
    assert bench.load("calc").readonly == ["test_calc.py"], "each load is a fresh Task"
    assert LocalBenchmark(repo, name="my-calc").tasks() == ["my-calc"]
    with pytest.raises(KeyError, match="did you mean: calc"):
        bench.load("calk")


def test_local_benchmark_refuses_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="no such folder"):
        LocalBenchmark(tmp_path / "nope")


def test_local_task_runs_in_a_real_env(repo, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    task = get_benchmark("local", path=repo,
                         entrypoint="python -m pytest -q test_calc.py").load("calc")
    with task.make_env(terminal="local", tools=("eval", "view")) as env:
        first = env.reset()
        assert (first.score, first.max_score, first.resolved) == (0, 1, False)
    assert (repo / "calc.py").read_text().endswith("a - b\n"), "the original is untouched"


def test_a_folder_on_a_machine_without_python_gets_python3(repo, tmp_path, monkeypatch):
    """Tried as a new user (not root) on Debian, where there is a python3 but no python
    command: the default `python -m pytest -q` could not run (exit code 127, 'python: not
    found'). A folder that names no entrypoint gets `python3 -m pytest -q` there, and its
    tests run."""
    import shutil
    import sys

    from dgym_tui.benchmarks.local import detect_entrypoint

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    python3 = bin_dir / "python3"  # this interpreter, by the name Debian gives it
    python3.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python3.chmod(0o755)
    for tool in ("sh", "env", "sleep"):  # what the terminal and the working copy start
        (bin_dir / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    assert detect_entrypoint(repo) == "python3 -m pytest -q"
    task = LocalBenchmark(repo).load("calc")
    with task.make_env(terminal="local", tools=("eval",)) as env:
        first = env.reset()
        assert (first.score, first.max_score) == (0, 1), first.observation
    monkeypatch.setenv("PATH", f"{bin_dir}:{tmp_path / 'other'}")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "python").symlink_to(python3)
    assert detect_entrypoint(repo) == "python -m pytest -q"  # a python command: as before


# --------------------------------------------------------------------- mini
def write_mini_task(root, name, task_yaml):
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(task_yaml)
    (folder / "mod.py").write_text("X = 1\n")
    return folder


def test_mini_benchmark_on_another_folder(tmp_path):
    folder = write_mini_task(tmp_path, "one", "description: x is wrong\nbug: X should be 2\n")
    (folder / ".debugignore").write_text("notes/\n")
    (folder / ".fix.patch").write_text("--- a/mod.py\n")
    (tmp_path / "not_a_task").mkdir()
    bench = MiniBenchmark(tmp_path)
    assert bench.tasks() == ["one"]
    task = bench.load("one")
    assert task.entrypoint == "python -m pytest -q test_one.py"   # the default
    assert task.ignore == ["notes/", "task.yaml", ".fix.patch"] and task.readonly == []
    assert task.meta["bug"] == "X should be 2" and task.meta["gold_patch"] == "--- a/mod.py\n"
    assert sorted(p.name for p in task.path.iterdir()) == [".debugignore", "mod.py"]


@pytest.mark.parametrize("text, message", [
    ("- a list\n", "must be a mapping"),
    ("bug: no description\n", "one non-empty line"),
    ("description: |\n  two\n  lines\n", "one non-empty line"),
    ("description: [unclosed\n", "not valid YAML"),
])
def test_mini_refuses_a_bad_task_file(tmp_path, text, message):
    write_mini_task(tmp_path, "bad", text)
    with pytest.raises(ValueError, match=message):
        MiniBenchmark(tmp_path).load("bad")


def test_mini_refuses_a_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        MiniBenchmark(tmp_path / "nope")
