"""The mini task set: every bug is real, every fix resolves it, nothing leaks to the agent.

Each task runs through a real ``RepoEnv`` (local terminal): the reset shows
failing tests; the fix patch is applied with ``git apply`` to a scratch copy
and the fixed files are written back through the real ``rewrite`` tool; the
``eval`` tool then reports the episode resolved.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.mini import MiniBenchmark, default_path
from dgym_tui.core.types import ToolCall

#: Tools used here (pdb is exercised by its own tests).
TOOLS = ("listdir", "view", "eval", "rewrite", "submit")
MINI = MiniBenchmark()
TASKS = MINI.tasks()
NETWORK_MODULES = {"socket", "urllib", "http", "requests", "ftplib", "smtplib", "ssl"}


@pytest.fixture(autouse=True)
def _fast_pytest(monkeypatch):
    # The tasks need no pytest plugins (the sandbox image has none); loading the
    # host's plugins would only slow every eval down.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def apply_fix(task, scratch: Path) -> dict[str, str]:
    """Apply the task's fix patch to a copy of its folder; return {changed file: new text}."""
    copy = scratch / "fixed"
    shutil.copytree(task.path, copy)
    subprocess.run(["git", "apply", "-p1", "-"], input=task.meta["gold_patch"], text=True,
                   cwd=copy, check=True, capture_output=True)
    changed = {}
    for path in sorted(copy.rglob("*.py")):
        rel = path.relative_to(copy).as_posix()
        if path.read_text() != (task.path / rel).read_text():
            changed[rel] = path.read_text()
    return changed


def test_there_are_at_least_ten_tasks():
    assert len(TASKS) >= 10
    assert get_benchmark("mini").tasks() == TASKS


@pytest.mark.parametrize("name", TASKS)
def test_task_folder_is_well_formed(name):
    folder = default_path() / name
    meta = yaml.safe_load((folder / "task.yaml").read_text())
    assert meta["description"].strip() and "\n" not in meta["description"].strip()
    assert meta["bug"].strip() and meta["bug"] != meta["description"]
    assert meta["entrypoint"] == f"python -m pytest -q test_{name}.py"

    ignore = (folder / ".debugignore").read_text().split()
    assert {"task.yaml", ".fix.patch", "__pycache__/"} <= set(ignore)
    assert f"test_{name}.py" in (folder / ".debugreadonly").read_text().split()

    test_file = folder / f"test_{name}.py"
    tests = [n for n in ast.parse(test_file.read_text()).body
             if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    assert len(tests) >= 3

    modules = [p for p in folder.glob("*.py") if not p.name.startswith("test_")]
    assert 1 <= len(modules) <= 3
    local = {p.stem for p in folder.glob("*.py")}
    for path in [*modules, test_file]:
        lines = len(path.read_text().splitlines())
        if path in modules:
            assert 30 <= lines <= 120, f"{path.name} has {lines} lines"
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for top in (n.split(".")[0] for n in names):
                assert top in local or top in sys.stdlib_module_names or top == "pytest", \
                    f"{path.name} imports {top}: only the standard library and pytest"
                assert top not in NETWORK_MODULES, f"{path.name} imports {top}"


@pytest.mark.parametrize("name", TASKS)
def test_bug_is_real_and_fix_resolves(name, tmp_path):
    task = MINI.load(name)
    fixed = apply_fix(task, tmp_path)
    assert fixed, "the fix patch changes no file"
    assert not any(rel.startswith("test_") for rel in fixed), "the fix must not edit the tests"
    test_file = f"test_{name}.py"

    with task.make_env(terminal="local", tools=TOOLS, eval_timeout=60) as env:
        first = env.reset()
        assert first.max_score >= 3
        assert 0 < first.max_score - first.score, first.eval_output
        assert not first.resolved
        # The agent reads the symptom, never the bug, and cannot reach the answer key.
        assert task.description in first.observation
        assert task.meta["bug"] not in first.observation
        listing = env.step(ToolCall("listdir", {"path": "."})).observation
        assert test_file in listing
        assert "task.yaml" not in listing and ".fix.patch" not in listing
        assert not (env.workspace.root / "task.yaml").exists()
        assert env.step(ToolCall("view", {"path": "task.yaml"})).error
        # .debugreadonly: the tests are visible but cannot be rewritten.
        refused = env.step(ToolCall("rewrite", {"path": test_file,
                                                "new_code": "def test_ok():\n    pass\n"}))
        assert refused.error and env.workspace.is_readonly(test_file)
        assert env.workspace.is_ignored("__pycache__/x.cpython-311.pyc")

        for rel, text in fixed.items():
            result = env.step(ToolCall("rewrite", {"path": rel, "new_code": text}))
            assert not result.error, result.observation
        assert sorted(env.workspace.changed_files()) == sorted(fixed)

        final = env.step(ToolCall("eval", {}))
        assert final.resolved, final.eval_output
        assert final.score == final.max_score == first.max_score
        # The patch the episode produces is the fix, nothing else.
        assert all(f"a/{rel}" in env.patch() for rel in fixed)


def test_loader_fields_carry_ignore_readonly_and_meta():
    task = MINI.load("shopping_cart")
    assert {"task.yaml", ".fix.patch"}.isdisjoint(p.name for p in task.path.iterdir())
    assert task.meta["bug"] and task.meta["gold_patch"].startswith("--- a/")
    assert task.meta["category"] == "mutable default argument"
    assert "meta" not in task.to_dict()
    assert task.readonly == ["test_shopping_cart.py"]
    assert {"__pycache__/", ".pytest_cache/", "task.yaml", ".fix.patch"} <= set(task.ignore)


def test_pdb_stops_inside_a_mini_task():
    """The derived debug entrypoint works on our tasks: break, continue, inspect."""
    task = MINI.load("pagination")
    source = (task.path / "paging.py").read_text().splitlines()
    line = next(i for i, text in enumerate(source, 1)
                if "len(self.items) // self.per_page" in text)
    with task.make_env(terminal="local", tools=(*TOOLS, "pdb")) as env:
        env.reset()
        assert not env.step(ToolCall("pdb", {"command": f"b paging.py:{line}"})).error
        stopped = env.step(ToolCall("pdb", {"command": "c"}))
        assert stopped.frame == ("paging.py", line), stopped.observation
        shown = env.step(ToolCall("pdb", {"command": "p len(self.items), self.per_page"}))
        assert "(20, 10)" in shown.observation, shown.observation


def _import_from(folder: Path, module: str):
    spec = importlib.util.spec_from_file_location(f"mini_{module}_{id(folder)}",
                                                  folder / f"{module}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bank_race_fails_every_time():
    """The race is forced by the slow audit call, not left to luck."""
    bank = _import_from(MINI.load("bank_account").path, "bank")
    for _ in range(5):
        account = bank.Account("eve", 100)
        barrier = threading.Barrier(2)

        def withdraw(account=account, barrier=barrier):
            barrier.wait()
            try:
                account.withdraw(70)
            except bank.InsufficientFunds:
                pass

        threads = [threading.Thread(target=withdraw) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert account.balance == -40


@pytest.mark.docker
def test_a_task_resolves_in_the_docker_sandbox(docker_ready, tmp_path):
    task = MINI.load("bank_account")
    fixed = apply_fix(task, tmp_path)
    with task.make_env(terminal="docker", image=docker_ready, tools=TOOLS) as env:
        first = env.reset()
        assert not first.resolved and first.score < first.max_score, first.eval_output
        for rel, text in fixed.items():
            env.step(ToolCall("rewrite", {"path": rel, "new_code": text}))
        assert env.step(ToolCall("eval", {})).resolved
