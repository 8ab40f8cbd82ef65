"""The built wheel: resource folders (dotfiles included), metadata, and a CLI
that works from the wheel's content alone, outside the checkout.

The wheel is built once per module with ``pip wheel --no-deps`` (offline with
``--no-build-isolation`` when hatchling is installed, as ``.[dev]`` does).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESOURCES = {"agents": "dgym_tui/_agents", "themes": "dgym_tui/_themes", "data": "dgym_tui/_data"}
JUNK = ("__pycache__/", ".pyc", ".pytest_cache/", ".ruff_cache/", ".egg-info/")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)]
    if importlib.util.find_spec("hatchling") is not None:
        cmd.insert(4, "--no-build-isolation")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    wheels = list(out.glob("dgym_tui-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


@pytest.fixture(scope="module")
def names(wheel) -> set[str]:
    with zipfile.ZipFile(wheel) as zf:
        return set(zf.namelist())


def _tracked(folder: str) -> list[str]:
    """Git-tracked files under ``folder`` that exist in the work tree."""
    proc = subprocess.run(["git", "ls-files", "-z", folder], cwd=ROOT, capture_output=True,
                          timeout=60, check=False)
    if proc.returncode != 0:
        pytest.skip("not a git checkout")
    return [p for p in proc.stdout.decode().split("\0") if p and (ROOT / p).is_file()]


@pytest.mark.parametrize("folder", sorted(RESOURCES))
def test_every_tracked_resource_file_is_in_the_wheel(names, folder):
    tracked = _tracked(folder)
    assert tracked, f"no tracked files under {folder}/"
    missing = [p for p in tracked
               if RESOURCES[folder] + p[len(folder):] not in names]
    assert not missing, f"{len(missing)} file(s) missing from the wheel, e.g. {missing[:5]}"


def test_dotfiles_of_the_tasks_are_packaged(names):
    mini = sorted({n.split("/")[3] for n in names
                   if n.startswith("dgym_tui/_data/mini/") and n.endswith("/task.yaml")})
    assert len(mini) >= 10, mini
    for task in mini:
        for dotfile in (".debugignore", ".debugreadonly", ".fix.patch"):
            assert f"dgym_tui/_data/mini/{task}/{dotfile}" in names, (task, dotfile)
    exercism = "dgym_tui/_data/exercism/exercises/practice/"
    exercises = {n[len(exercism):].split("/")[0] for n in names if n.startswith(exercism)}
    assert exercises
    for ex in exercises:
        assert f"{exercism}{ex}/.meta/config.json" in names, ex
        assert any(n.startswith(f"{exercism}{ex}/.docs/") for n in names), ex


def test_no_caches_in_the_wheel(names):
    junk = sorted(n for n in names if any(j in n for j in JUNK))
    assert not junk, junk[:10]


def test_metadata_declares_runtime_needs_and_scripts(wheel, names):
    with zipfile.ZipFile(wheel) as zf:
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(zf.read(info).decode())
        scripts = zf.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt")))
    requires = {r.split(";")[0].split("[")[0].split(">")[0].split("=")[0].strip().lower()
                for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r}
    # pytest: local episodes run the tasks' tests in dgym's own interpreter
    assert {"pytest", "pyyaml", "pexpect", "pathspec", "jsonschema", "rich"} <= requires
    text = scripts.decode()
    assert "dgym = dgym_tui.cli.main:main" in text and "dgym-tui = dgym_tui.cli.main:tui_main" in text


def test_cli_runs_from_the_unpacked_wheel(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()

    def dgym(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "dgym_tui.cli.main", *args], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    code = ("import dgym_tui.support.resources as r; "
            "print(r.__file__); print(r.resource_dir('data')); print(r.resource_dir('agents'))")
    where = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert where[0].startswith(str(site))  # the unpacked copy, not the checkout
    assert where[1] == str(site / "dgym_tui" / "_data")
    assert where[2] == str(site / "dgym_tui" / "_agents")
    proc = dgym("list-tasks", "mini")
    assert proc.returncode == 0, proc.stderr
    assert "pagination" in proc.stdout.split()
    proc = dgym("list-tasks", "exercism")
    assert proc.returncode == 0 and proc.stdout.split(), proc.stderr
    proc = dgym("run", "no_such_config")  # bundled configs are listed by name
    assert proc.returncode == 2 and "mini_solution" in proc.stderr
