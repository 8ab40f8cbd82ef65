"""What of the reset's eval grows with repository size: pytest itself, or the overlay under it.

    python bench/bench_reset_eval.py [--sizes 100,10000] [--rounds 15] [--terminals local,bwrap]

On bench/repo_size_plan.py's repositories, each round runs the entrypoint's
pytest (its arguments and environment) through ``LocalTerminal.run``, the
cases in turn (A B C ..., then backwards), on each terminal asked for
(``--terminals local,bwrap``: ``LocalTerminal.run`` / ``BwrapTerminal.run``):

- ``plain``: in a plain folder holding the same repository (no overlay, no
  dgym working copy; a twin of the original, because a bwrap terminal without
  an overlay hands its folder to the sandbox's uid with ``chown`` at its start);
- ``overlay``: in a fresh overlay of the original (``core/fs/overlay.Overlay``,
  mounted untimed for each run, as each reset mounts its own), the command
  joining its namespaces as the terminal's commands do;
- ``lookahead``: the same with the working copy's look-ahead thread
  (``core/fs/lookahead.LookAhead``) started on the merged view just before the
  run, as an eval does (``Workspace.look_ahead``): it runs while the command
  starts.

pytest runs in-process under a ``python -c`` wrapper (same ``sys.path[0]``
as ``-m``) that times its root folder's collection (``_pytest.main.Dir.collect``:
pytest lists the folder named on the command line's parent, and runs its
ignore hook and makes a ``Dir`` node for every subfolder, even those it then
does not collect). Prints median / p90 / mean ms per case and size, with the
machine's load, of the run's wall time and of its parts: ``start`` (from the
call to the wrapper's first line: the shell, the sandbox's setup, Python's
start), ``root collection``, the ``rest of Python`` (imports, the test,
exit handlers) and ``exit`` (from pytest's end to the call's return), and the
root collection's CPU time (its thread's: steadier than wall time on a shared
machine; the kernel's lookups count); then each one's growth from the
smallest size to the largest.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from repo_size_plan import ENTRYPOINT, ENV, interleaved, make_repo, print_table  # noqa: E402

from dgym_tui.core.fs.lookahead import START_DELAY, LookAhead, test_folders  # noqa: E402
from dgym_tui.core.fs.overlay import Overlay, remove_base  # noqa: E402
from dgym_tui.core.terminals.bwrap import BwrapTerminal  # noqa: E402
from dgym_tui.core.terminals.identity import sandbox_ids  # noqa: E402
from dgym_tui.core.terminals.local import LocalTerminal  # noqa: E402

#: pytest with the entrypoint's arguments, printing the clock when Python reaches it, how
#: long its root folder's collection took, and the clock when pytest is done.
WRAPPER = r'''import time
print("PY-START %.6f" % time.time())
import os, sys
import _pytest.main as m
real, spent, cpu = m.Dir.collect, [0.0], [0.0]
def collect(self):
    started, cpu_started = time.perf_counter(), time.thread_time()
    out = list(real(self))
    spent[0] += time.perf_counter() - started
    cpu[0] += time.thread_time() - cpu_started
    return out
m.Dir.collect = collect
import pytest
code = pytest.main(sys.argv[1:])
print("ROOT-COLLECT %.6f PY-END %.6f CPU %.6f" % (spent[0], time.time(), cpu[0]))
'''
ARGS = ENTRYPOINT.split("python -m pytest ", 1)[1]


def _terminal(kind: str, repo: Path, ov: Overlay | None, ids: tuple[int, int] | None):
    if kind == "bwrap":
        return BwrapTerminal(source=str(repo), overlay=ov, run_as=ids)
    return LocalTerminal(overlay=ov)


def _run(repo: Path, terminal_kind: str, kind: str, tmp: Path,
         parts: dict[str, list[float]]) -> Callable[[], float]:
    ids = sandbox_ids() if terminal_kind == "bwrap" and os.geteuid() == 0 else None

    def run() -> float:
        ov = ahead = None
        if kind != "plain":
            base = Path(tempfile.mkdtemp(dir=tmp))
            ov = Overlay(str(repo), str(base), run_as=ids)
        terminal = _terminal(terminal_kind, repo, ov, ids)
        try:
            terminal.start(ov.merged if ov else str(repo))
            command = f"python -c '{WRAPPER}' {ARGS}"
            started, launched = time.perf_counter(), time.time()
            if kind == "lookahead":  # as an eval does, just before its run
                ahead = LookAhead(ov.root_fd, delay=START_DELAY,  # type: ignore[union-attr]
                                  within=test_folders(ENTRYPOINT))
            res = terminal.run(command, timeout=120, env=ENV)
            elapsed, returned = time.perf_counter() - started, time.time()
        finally:
            terminal.close()
            if ahead is not None:
                ahead.stop()
            if ov is not None:
                ov.close()
                remove_base(str(base))  # work/work is mode 000: rmtree left it as a user
        first = re.search(r"PY-START ([0-9.]+)", res.output)
        found = re.search(r"ROOT-COLLECT ([0-9.]+) PY-END ([0-9.]+) CPU ([0-9.]+)", res.output)
        if first is None or found is None or (" passed" not in res.output
                                              and " failed" not in res.output):
            raise SystemExit(f"pytest did not run: {res.output[-300:]}")
        begin, collect, end = float(first.group(1)), float(found.group(1)), float(found.group(2))
        for part, value in (("start", begin - launched), ("root collection", collect),
                            ("rest of Python", end - begin - collect), ("exit", returned - end),
                            ("root collection CPU", float(found.group(3)))):
            parts.setdefault(part, []).append(value)
        return elapsed
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--terminals", default="local", help="local, bwrap or both")
    args = parser.parse_args()
    os.environ.update(ENV)
    sizes = [int(s) for s in args.sizes.split(",")]
    cases: dict[str, Callable[[], float]] = {}
    parts: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="dgym-bench-reset-eval-") as tmp:
        for size in sizes:
            repo = make_repo(Path(tmp) / f"repo{size}", size)
            twin = make_repo(Path(tmp) / f"plain{size}", size)
            for terminal in args.terminals.split(","):
                for kind in ("plain", "overlay", "lookahead"):
                    name = f"{size:>6} files {terminal} {kind}"
                    parts[name] = {}
                    cases[name] = _run(twin if kind == "plain" else repo, terminal, kind,
                                       Path(tmp), parts[name])
        samples, load_before, load_after = interleaved(cases, args.rounds)
    title = (f"on {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load "
             f"{load_before:.2f} before / {load_after:.2f} after, {args.rounds} rounds, "
             f"interleaved, uid {os.geteuid()}")
    print_table(f"the entrypoint's pytest, wall time, {title}", samples, width=30)
    names = ("start", "root collection", "rest of Python", "exit", "root collection CPU")
    for part in names:
        print_table(f"{part}, same runs", {name: parts[name][part] for name in samples}, width=30)
    small, big = min(sizes), max(sizes)
    for case in dict.fromkeys(name.split(" files ")[1] for name in samples):
        growth = []
        for part, data in (("wall", samples),
                           *((part, {n: p[part] for n, p in parts.items()}) for part in names)):
            a, b = (statistics.median(data[f"{n:>6} files {case}"]) * 1000
                    for n in (small, big))
            growth.append(f"{part} {a:.1f} -> {b:.1f} ({b - a:+.1f})")
        print(f"{case}, ms from {small} to {big} files: " + "; ".join(growth))


if __name__ == "__main__":
    main()
