"""The repository-size benchmark's plan, shared by bench_repo_size.py and the reference driver.

Plain standard-library Python: bench/ref_repo_size_driver.py runs it in the
reference system's own virtualenv (Python 3.12), where dgym_tui is not
installed. Both systems get the same repository, the same tool calls in the
same order, and every observation is checked, so a failing action is never
timed as a fast one.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

#: The test command. Both systems run it with ``ENV`` in their process environment
#: (debug-gym 1.3.0 cannot take a leading ``VAR=value`` in its entrypoint); ``-s``
#: because debug-gym 1.3.0 runs pdb with the entrypoint's pytest options.
ENTRYPOINT = "python -m pytest -q -s -p no:cacheprovider test_target.py"
ENV = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
TARGET = "def middle(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2 - 1]\n"
TEST = "from target import middle\n\n\ndef test_middle():\n    assert middle([3, 1, 2]) == 2\n"

#: Tool calls that bring pdb to ``target.py:2`` before the ``pdb p`` samples.
PDB_SETUP = [("pdb", {"command": "b target.py:2"}), ("pdb", {"command": "c"})]

#: One round of read-only actions: ``(label, tool, arguments)``; tool names are ours.
READ_ACTIONS = [
    ("view", "view", {"path": "pkg000/mod07.py", "start": 1, "end": 40}),
    ("listdir", "listdir", {"path": "."}),
    ("grep", "grep", {"pattern": "def helper_12"}),  # a line in every file
    ("grep rare", "grep", {"pattern": "def middle"}),  # a line in one file
    ("pdb p", "pdb", {"command": "p values"}),
]

#: What each label's observation must contain (both systems' texts).
EXPECT = {"view": "helper_0", "listdir": "pkg000", "grep": "def helper_12",
          "grep rare": "def middle", "pdb p": "[3, 1, 2]", "rewrite": "", "eval": ""}


def rewrite_call(i: int) -> tuple[str, str, dict]:
    """The ``i``-th rewrite: line 2 of target.py with comment ``# a`` / ``# b`` in turn
    (a real change every time; the code stays the same)."""
    code = f"    ordered = sorted(values)  # {'ab'[i % 2]}\n"
    return ("rewrite", "rewrite", {"path": "target.py", "start": 2, "end": 2, "new_code": code})


def make_repo(root: Path, files: int, under: str = "") -> Path:
    """Write ``files`` modules (50 per folder, ~40 lines each) plus target.py / test_target.py.

    The module folders ``pkgNNN`` are made in ``root`` itself, or in its subfolder
    ``under`` when given (then the root holds three entries at every size)."""
    body = "".join(f"def helper_{i}(x):\n    return x * {i}  # filler line\n\n" for i in range(13))
    for n in range(files):
        folder = root / under / f"pkg{n // 50:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n % 50:02d}.py").write_text(f"# module {n}\n{body}")
    (root / "target.py").write_text(TARGET)
    (root / "test_target.py").write_text(TEST)
    return root


def check(label: str, observation: str) -> str | None:
    """None when ``observation`` is what ``label``'s action must show, else an error message."""
    text = observation or ""
    bad = "***" in text or "Traceback" in text or text.startswith("Error")
    if label == "eval":
        bad = " passed" not in text and " failed" not in text
    if bad or EXPECT[label] not in text:
        return f"{label}: unexpected observation: {text[:300]!r}"
    return None


def bare_run(cwd: str, env: dict[str, str] | None = None) -> float:
    """Seconds to run ENTRYPOINT directly in ``cwd`` (the test run an eval step wraps)."""
    started = time.perf_counter()
    subprocess.run(ENTRYPOINT, shell=True, cwd=cwd, env=env, capture_output=True, check=False)
    return time.perf_counter() - started


def serve(step: Callable[[str, dict], str], bare: Callable[[], float]) -> None:
    """The reference driver's loop: one JSON request per stdin line, one JSON answer per line.

    Requests: ``{"label", "tool", "arguments"}`` (answer ``{"seconds", "error"}``:
    the step's wall time, and :func:`check`'s verdict when the label is known)
    or ``{"bare": true}`` (answer ``{"seconds"}`` of :func:`bare_run`).
    """
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("bare"):
            print(json.dumps({"seconds": bare()}), flush=True)
            continue
        started = time.perf_counter()
        observation = step(request["tool"], request["arguments"])
        seconds = time.perf_counter() - started
        label = request.get("label")
        error = check(label, observation) if label in EXPECT else None
        print(json.dumps({"seconds": seconds, "error": error}), flush=True)


def interleaved(cases: dict[str, Callable[[], float]], rounds: int
                ) -> tuple[dict[str, list[float]], float, float]:
    """Run every case once per round, in turn (A B C, then C B A), so all share the load.

    Returns:
        ``({case: seconds per round}, 1-minute load before, load after)``.
    """
    samples: dict[str, list[float]] = {name: [] for name in cases}
    before = os.getloadavg()[0]
    names = list(cases)
    for i in range(rounds):
        for name in names if i % 2 == 0 else reversed(names):
            samples[name].append(cases[name]())
    return samples, before, os.getloadavg()[0]


def print_table(title: str, samples: dict[str, list[float]], width: int = 34) -> None:
    """Print ``title`` and one row per case: median, p90 and mean milliseconds, and n."""
    print(title)
    print(f"{'case':<{width}} {'median ms':>9} {'p90 ms':>9} {'mean ms':>9} {'n':>4}")
    for name, seconds in samples.items():
        ms = sorted(x * 1000 for x in seconds)
        p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
        print(f"{name:<{width}} {statistics.median(ms):>9.1f} {p90:>9.1f} "
              f"{statistics.fmean(ms):>9.1f} {len(ms):>4}")
