"""The ``folder`` benchmark: a folder of task folders (debug-gym's mini layout)."""

from __future__ import annotations

import pytest

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.folder import EmptyBenchmarkError, FolderBenchmark
from dgym_tui.core.env import DEFAULT_ENTRYPOINT
from dgym_tui.core.types import ToolCall

BUGGY = "def add(a, b):\n    return a - b\n"
TESTS = "from adding import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


@pytest.fixture
def suite(make_repo):
    """Two tasks in debug-gym's layout; the second sets its own entrypoint."""
    return make_repo({
        "adder/adding.py": BUGGY,
        "adder/test.py": TESTS,
        "adder/notes_secret.py": "ANSWER = 'return a + b'\n",
        "adder/.debugignore": "notes_secret.py\n",
        "adder/.debugreadonly": "test.py\n",
        "adder/instructions.md": "add() gives wrong sums; fix it.\n",
        "other/adding.py": BUGGY,
        "other/test.py": TESTS,
        "other/dgym.yaml": "entrypoint: python -m pytest -q -p no:cacheprovider test.py\n",
        "README.md": "my suite\n",
        ".hidden/code.py": "x = 1\n",
    }, name="suite")


def test_each_sub_folder_is_a_task(suite):
    bench = get_benchmark("folder", path=str(suite))
    assert bench.tasks() == ["adder", "other"]
    adder = bench.load("adder")
    assert adder.entrypoint == f"{DEFAULT_ENTRYPOINT} test.py"  # pytest skips test.py otherwise
    assert adder.description == "add() gives wrong sums; fix it."
    assert "instructions.md" in adder.readonly
    assert bench.load("other").entrypoint == "python -m pytest -q -p no:cacheprovider test.py"


def test_entrypoint_from_the_benchmark_option_or_the_folder_file(suite):
    assert FolderBenchmark(suite, entrypoint="pytest test.py").load("adder").entrypoint == \
        "pytest test.py"
    (suite / "dgym.yaml").write_text("entrypoint: python -m pytest -x test.py\n")
    bench = FolderBenchmark(suite)
    assert bench.load("adder").entrypoint == "python -m pytest -x test.py"
    # the task's own file wins over the folder's
    assert bench.load("other").entrypoint == "python -m pytest -q -p no:cacheprovider test.py"


def test_empty_benchmark_is_an_error_naming_the_path_and_layout(tmp_path, capsys):
    from dgym_tui.cli.main import main

    empty = tmp_path / "empty"
    (empty / "docs").mkdir(parents=True)
    with pytest.raises(EmptyBenchmarkError, match="holds no task folder.*sub-folders each hold"):
        FolderBenchmark(empty)
    assert main(["list-tasks", "folder", "-p", f"path={empty}"]) == 2
    assert str(empty) in capsys.readouterr().err


def test_mini_on_a_folder_without_task_files_is_an_error(suite, capsys):
    from dgym_tui.cli.main import main

    assert main(["list-tasks", "mini", "-p", f"path={suite}"]) == 2
    err = capsys.readouterr().err
    assert str(suite) in err and "task.yaml" in err and "folder" in err


def test_a_task_runs_with_its_ignore_files_honoured(suite, make_env):
    task = FolderBenchmark(suite).load("adder")
    env = make_env(task.path, **{k: v for k, v in task.env_kwargs().items() if k != "path"})
    first = env.reset()
    assert not first.resolved and "add() gives wrong sums" in first.observation
    listing = env.step(ToolCall("listdir", {"path": "."})).observation
    assert "notes_secret.py" not in listing and "adding.py" in listing
    assert env.step(ToolCall("rewrite", {"path": "test.py", "new_code": "x = 1\n"})).error
    fix = env.step(ToolCall("rewrite", {"path": "adding.py", "start": 2, "end": 2,
                                        "new_code": "    return a + b\n"}))
    assert not fix.error, fix.observation
    final = env.step(ToolCall("submit", {}))
    assert final.resolved and final.done, final.observation
