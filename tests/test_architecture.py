"""Architecture rules: the import-linter contracts in pyproject.toml hold, and no
dgym_tui module imports itself back through others (module- or function-level)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent


def test_import_contracts_hold():
    """`lint-imports` (import-linter, configured in pyproject.toml) keeps every contract."""
    lint = Path(sys.executable).parent / "lint-imports"
    proc = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Contracts: 7 kept, 0 broken." in proc.stdout


def test_every_top_level_package_is_layered():
    """A new top-level subpackage cannot land outside the layers contract (nor a root module)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers" and "containers" not in c)
    named = {name.strip() for layer in layers["layers"] for name in layer.split("|")}
    package = ROOT / "dgym_tui"
    found = {f"dgym_tui.{p.name}" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert found == named
    modules = sorted(p.name for p in package.glob("*.py"))
    assert modules == ["__init__.py"], f"modules at the package root: {modules}"


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("dgym_tui", exclude_type_checking_imports=True, cache_dir=None)


def test_graph_sees_function_level_imports():
    """The cycle check below is only as good as the graph: lazy imports are in it."""
    graph = _graph()
    # runner imports the agent inside a function (litellm stays unloaded for other policies)
    assert graph.direct_import_exists(importer="dgym_tui.runs.runner", imported="dgym_tui.policies.agent")
    details = graph.get_import_details(importer="dgym_tui.runs.runner", imported="dgym_tui.policies.agent")
    lines = (ROOT / "dgym_tui" / "runs" / "runner.py").read_text().splitlines()
    assert details and all(lines[d["line_number"] - 1].startswith(" ") for d in details)


def test_no_import_cycles():
    graph = _graph()
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_type_checker_passes_on_core_episode_and_tui(tmp_path):
    """mypy (configured in pyproject.toml's [tool.mypy]) finds no error in the environment,
    the episode loop and the app."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "dgym_tui/core",
         "dgym_tui/episode", "dgym_tui/tui"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_the_app_never_reaches_through_the_session():
    """The app asks :class:`~dgym_tui.episode.session.Session` (its façade), never the
    environment behind it: no ``.env`` is read anywhere in ``dgym_tui/tui``."""
    import ast

    found = []
    for path in sorted((ROOT / "dgym_tui" / "tui").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "env":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id == "getattr" and len(node.args) > 1
                  and isinstance(node.args[1], ast.Constant) and node.args[1].value == "env"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not found, "the app reads session.env at: " + ", ".join(found)
