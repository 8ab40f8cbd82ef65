"""What of the reset's eval grows with repository size: pytest itself, or the overlay under it.

    python bench/bench_reset_eval.py [--sizes 100,10000] [--rounds 15]

On bench/repo_size_plan.py's repositories, each round runs the entrypoint's
pytest (its arguments and environment) through ``LocalTerminal.run``, the
cases in turn (A B C ..., then backwards):

- ``plain``: in the original folder (no overlay, no dgym working copy);
- ``overlay``: in a fresh overlay of it (``core/fs/overlay.Overlay``, mounted
  untimed for each run, as each reset mounts its own), the command joining
  its namespaces as the local terminal's do.

pytest runs in-process under a ``python -c`` wrapper (same ``sys.path[0]``
as ``-m``) that times its root folder's collection (``_pytest.main.Dir.collect``:
pytest lists the folder named on the command line's parent, and runs its
ignore hook and makes a ``Dir`` node for every subfolder, even those it then
does not collect). Prints median / p90 / mean ms of the run's wall time, of
that collection and of the rest per case and size, with the machine's load,
then the growth from the smallest to the largest size of each.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from repo_size_plan import ENTRYPOINT, ENV, interleaved, make_repo, print_table  # noqa: E402

from dgym_tui.core.fs.overlay import Overlay  # noqa: E402
from dgym_tui.core.terminals.local import LocalTerminal  # noqa: E402

#: pytest with the entrypoint's arguments, printing how long its root folder's collection took.
WRAPPER = r'''import os, sys, time
import _pytest.main as m
real, spent = m.Dir.collect, [0.0]
def collect(self):
    started = time.perf_counter()
    out = list(real(self))
    spent[0] += time.perf_counter() - started
    return out
m.Dir.collect = collect
import pytest
code = pytest.main(sys.argv[1:])
print("ROOT-COLLECT %.6f" % spent[0])
'''
ARGS = ENTRYPOINT.split("python -m pytest ", 1)[1]


def _run(repo: Path, overlay: bool, tmp: Path, collect: list[float]) -> Callable[[], float]:
    def run() -> float:
        ov = None
        if overlay:
            base = Path(tempfile.mkdtemp(dir=tmp))
            ov = Overlay(str(repo), str(base))
        terminal = LocalTerminal(overlay=ov)
        try:
            terminal.start(ov.merged if ov else str(repo))
            command = f"python -c '{WRAPPER}' {ARGS}"
            started = time.perf_counter()
            res = terminal.run(command, timeout=120, env=ENV)
            elapsed = time.perf_counter() - started
        finally:
            terminal.close()
            if ov is not None:
                ov.close()
                shutil.rmtree(base, ignore_errors=True)
        found = re.search(r"ROOT-COLLECT ([0-9.]+)", res.output)
        if found is None or (" passed" not in res.output and " failed" not in res.output):
            raise SystemExit(f"pytest did not run: {res.output[-300:]}")
        collect.append(float(found.group(1)))
        return elapsed
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    os.environ.update(ENV)
    sizes = [int(s) for s in args.sizes.split(",")]
    cases: dict[str, Callable[[], float]] = {}
    collects: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="dgym-bench-reset-eval-") as tmp:
        for size in sizes:
            repo = make_repo(Path(tmp) / f"repo{size}", size)
            for kind in ("plain", "overlay"):
                name = f"{size:>6} files pytest {kind}"
                collects[name] = []
                cases[name] = _run(repo, kind == "overlay", Path(tmp), collects[name])
        samples, load_before, load_after = interleaved(cases, args.rounds)
    title = (f"on {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load "
             f"{load_before:.2f} before / {load_after:.2f} after, {args.rounds} rounds, "
             f"interleaved, uid {os.geteuid()}")
    print_table(f"the entrypoint's pytest, wall time, {title}", samples, width=30)
    print_table("pytest's root folder collection (Dir.collect), same runs", collects, width=30)
    rest = {name: [w - c for w, c in zip(samples[name], collects[name], strict=True)]
            for name in samples}
    print_table("the rest (wall time minus that collection), same runs", rest, width=30)
    small, big = min(sizes), max(sizes)
    for kind in ("plain", "overlay"):
        for label, data in (("wall", samples), ("root collection", collects), ("rest", rest)):
            a, b = (statistics.median(data[f"{n:>6} files pytest {kind}"]) * 1000
                    for n in (small, big))
            print(f"{kind} {label}: {a:.1f} -> {b:.1f} ms ({b - a:+.1f} ms) "
                  f"from {small} to {big} files")


if __name__ == "__main__":
    main()
