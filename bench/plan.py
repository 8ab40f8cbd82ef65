"""The benchmark plan shared by our driver and the reference system's driver.

Both drivers run the same rounds of actions on the same task so their timings
compare, and both check every observation: a failing action must never be
timed as a fast one. This module is plain standard-library Python: the
reference driver runs it in a separate virtualenv (Python 3.12) where
dgym_tui is not installed.

A driver is a process that reads one command per line on stdin (``round`` or
``quit``) and answers each ``round`` with one JSON line
``{"samples": {label: seconds}, "errors": {label: message}}``; see
:func:`serve`. bench_env.py starts one driver per system and sends them rounds
in turn (A B A B), so both see the same machine load.
"""

from __future__ import annotations

import ast
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

# What an agent waits for, in the order a round runs them. "reset + b N" is a
# fresh episode up to its first pdb answer (the reference starts pdb inside
# reset, we start it on the first pdb command); "rewrite + eval" and
# "rewrite + b + c" are an edit followed by the actions that need its effect
# (the reference restarts pdb inside rewrite, we restart it on the next pdb
# call). The breakpoint is set again after the edit because debug-gym 1.3.0
# loses its breakpoints when an edit restarts pdb: its `c` would run to the end.
LABELS = ["reset + b N", "pdb c", "pdb p x", "pdb n", "view", "eval",
          "rewrite + eval", "rewrite + b + c"]
SLOW_MS = 50.0


def find_probe(repo: Path, module: str) -> dict:
    """Pick a breakpoint target in ``module`` (a path relative to ``repo``).

    Returns ``{"path": str, "line": int, "var": str, "first_text": str}``:
    the first statement in the body of the first function with a parameter
    other than self / cls, that parameter's name, and the module's first
    line (what the benchmark's rewrites change: far from the breakpoint, so
    that both systems keep it; debug-gym 1.3.0 drops a breakpoint on the
    edited line and on the line after it).

    Raises:
        ValueError: the module has no function with a parameter.
    """
    source = (repo / module).read_text()
    tree = ast.parse(source)
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
            return {"path": module, "line": first.lineno, "var": arg,
                    "first_text": source.splitlines()[0]}
    raise ValueError(f"{module}: no function with a parameter")


def round_plan(probe: dict) -> list[tuple[str, list[tuple[str, dict]]]]:
    """One round: ``[(label, [(tool name, arguments), ...])]``.

    Each label's tool calls are timed together. Tool names are ours
    (``rewrite``); the reference driver maps them to its own (``edit``). The
    first rewrite adds a comment to the module's first line, the second takes
    it away:
    both are real changes (pdb must restart), and every round starts from
    the same code.
    """
    path, line, var = probe["path"], probe["line"], probe["var"]

    def rewrite(code: str) -> tuple[str, dict]:
        return ("rewrite", {"path": path, "start": 1, "end": 1, "new_code": code})

    cont = ("pdb", {"command": "c"})
    brk = ("pdb", {"command": f"b {path}:{line}"})
    return [
        ("reset + b N", [("reset", {}), brk]),
        ("pdb c", [cont]),
        ("pdb p x", [("pdb", {"command": f"p {var}"})]),
        ("pdb n", [("pdb", {"command": "n"})]),
        ("view", [("view", {"path": path})]),
        ("eval", [("eval", {})]),
        ("rewrite + eval", [rewrite(probe["first_text"] + "  # bench"), ("eval", {})]),
        ("rewrite + b + c", [rewrite(probe["first_text"]), brk, cont]),
    ]


def check(name: str, arguments: dict, observation: str, probe: dict) -> str | None:
    """Judge one observation by what the action must show; None when it is right.

    The checks hold for both systems' observation texts: a breakpoint is
    confirmed with "Breakpoint", a stop names the probe line as ``(LINE)``,
    ``p`` prints no pdb error (``***``), ``view`` shows the module's first
    line, an eval shows
    pytest's summary.
    """
    text = observation or ""
    command = arguments.get("command", "")
    if name == "pdb" and command.startswith("b "):
        ok = "Breakpoint" in text
    elif name == "pdb" and command == "c":
        ok = f"({probe['line']})" in text
    elif name == "pdb" and command.startswith("p "):
        ok = "***" not in text
    elif name == "pdb" and command == "n":
        ok = "->" in text
    elif name == "view":
        ok = probe["first_text"].strip() in text
    elif name == "eval":
        ok = " passed" in text or " failed" in text
    else:
        return None
    return None if ok else f"{name} {arguments}: unexpected observation: {text[-300:]!r}"


def serve(run_round: Callable[[], tuple[dict, dict]]) -> None:
    """Answer ``round`` lines on stdin with one JSON line each; stop at ``quit`` / EOF.

    ``run_round()`` returns ``({label: seconds}, {label: error message})``.
    """
    for line in sys.stdin:
        if line.strip() != "round":
            break
        samples, errors = run_round()
        print(json.dumps({"samples": samples, "errors": errors}), flush=True)


def play_round(plan: list[tuple[str, list[tuple[str, dict]]]], step: Callable[[str, dict], str],
               probe: dict, close: Callable[[], None]) -> tuple[dict, dict]:
    """Run one round of ``plan`` (see :func:`round_plan`) through ``step``, then ``close()``.

    Returns ``({label: seconds}, {label: first error message})``.
    """
    samples, errors = {}, {}
    try:
        for label, calls in plan:
            samples[label], error = timed(calls, step, probe)
            if error:
                errors[label] = error
    finally:
        close()
    return samples, errors


def timed(calls: list[tuple[str, dict]], step: Callable[[str, dict], str],
          probe: dict) -> tuple[float, str | None]:
    """Run ``calls`` through ``step(name, arguments) -> observation``; seconds and first error."""
    error = None
    started = time.perf_counter()
    observations = [(name, args, step(name, args)) for name, args in calls]
    elapsed = time.perf_counter() - started
    for name, args, observation in observations:
        error = error or check(name, args, observation, probe)
    return elapsed, error


def summarize(samples: list[float]) -> dict[str, float]:
    """Seconds -> ``{"median", "p90", "mean": ms, "slow": share of samples over 50 ms, "n"}``."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]
    return {"median": statistics.median(ordered) * 1000, "p90": p90 * 1000,
            "mean": statistics.fmean(ordered) * 1000,
            "slow": sum(s * 1000 > SLOW_MS for s in ordered) / len(ordered), "n": len(ordered)}
