"""The benchmark plan shared by our driver and the reference system's driver.

Both drivers run the same actions on the same task so their timings compare.
This module is plain standard-library Python: the reference driver runs it in
a separate virtualenv (Python 3.12) where dgym_tui is not installed.
"""

from __future__ import annotations

import ast
import json
import statistics
from pathlib import Path


def find_probe(repo: Path, module: str) -> dict:
    """Pick a breakpoint target in ``module`` (a path relative to ``repo``).

    Returns ``{"path": str, "line": int, "var": str}``: the first statement in
    the body of the first function with a parameter other than self / cls, and
    that parameter's name.

    Raises:
        ValueError: the module has no function with a parameter.
    """
    tree = ast.parse((repo / module).read_text())
    for node in ast.walk(tree):
        params = [a.arg for a in getattr(node, "args", ast.arguments()).args or []
                  if a.arg not in ("self", "cls")] if isinstance(node, ast.FunctionDef) else []
        if params:
            arg = params[0]
            first = node.body[0]
            docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            if docstring:
                if len(node.body) < 2:
                    continue
                first = node.body[1]
            return {"path": module, "line": first.lineno, "var": arg}
    raise ValueError(f"{module}: no function with a parameter")


def actions(probe: dict, rounds: int) -> list[tuple[str, str, dict]]:
    """The measured actions: ``[(label, tool name, arguments)]``.

    ``rounds`` repetitions of view, eval, a rewrite that keeps the file as it
    is, and the pdb round trips ``b N``, ``c``, ``p VAR``, ``n``.
    """
    path, line, var = probe["path"], probe["line"], probe["var"]
    plan = []
    for _ in range(rounds):
        plan += [
            ("view", "view", {"path": path}),
            ("pdb b N", "pdb", {"command": f"b {path}:{line}"}),
            ("pdb c", "pdb", {"command": "c"}),
            ("pdb p x", "pdb", {"command": f"p {var}"}),
            ("pdb n", "pdb", {"command": "n"}),
            ("eval", "eval", {}),
        ]
    return plan


def summarize(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """``{label: [seconds]}`` -> ``{label: {"median": ms, "p90": ms, "n": count}}``."""
    out = {}
    for label, values in samples.items():
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
        out[label] = {"median": statistics.median(ordered) * 1000, "p90": p90 * 1000,
                      "n": len(ordered)}
    return out


def dump(result: dict) -> str:
    return json.dumps(result)
