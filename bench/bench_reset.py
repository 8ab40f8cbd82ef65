"""What ``RepoEnv.reset()`` costs against repository size: a copy against an overlay.

    python bench/bench_reset.py [--sizes 100,10000] [--rounds 5] [--terminals local,bwrap,docker]

On bench/repo_size_plan.py's synthetic repositories (50 modules of ~40 lines
per folder, plus target.py and its test), each round measures, the cases in
turn (A B C ..., then backwards), so all share the machine's load:

- ``reset T overlay``: ``RepoEnv.reset()`` on terminal T (the working copy is
  an overlay of the original, the default: nothing copied; issue 28 part 2),
  one eval of ``test_target.py``;
- ``reset T copy``: the same with ``terminal_options={"overlay": False}``
  (the copy every terminal made before);
- ``workspace overlay`` / ``workspace copy``: ``Workspace()`` alone, the
  part of reset that depends on the repository's size.

Each environment is closed untimed. Prints median, p90 and mean milliseconds
per case and size with the machine's load before and after, the CPU time of
each reset (this process and the children it waited for: on ``local`` the
eval's pytest too; steadier than wall time on a shared machine), then issue
28's two goals for each terminal's overlay: reset at the largest size / at
the smallest (<= 1.1; also as the ratio of the fastest runs and of the CPU
times), and the overlay's reset / the copy's at the smallest size (<= 1.0,
"no slower than today").
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from repo_size_plan import ENTRYPOINT, ENV, interleaved, make_repo, print_table  # noqa: E402

from dgym_tui import RepoEnv  # noqa: E402
from dgym_tui.core.fs.workspace import Workspace  # noqa: E402
from dgym_tui.core.terminals.identity import sandbox_ids  # noqa: E402


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _reset(repo: Path, terminal: str, overlay: bool, cpu: list[float]) -> Callable[[], float]:
    def run() -> float:
        env = RepoEnv(repo, entrypoint=ENTRYPOINT, terminal=terminal,
                      terminal_options={"overlay": overlay})
        try:
            started, cpu_started = time.perf_counter(), _cpu()
            result = env.reset()
            elapsed = time.perf_counter() - started
            cpu.append(_cpu() - cpu_started)
            if " passed" not in result.observation and " failed" not in result.observation:
                raise SystemExit(f"reset's eval did not run: {result.observation[-300:]}")
        finally:
            env.close()
            _reap()
        return elapsed
    return run


def _reap() -> None:
    """Wait for the children a closed environment killed (its spares), untimed, so their
    CPU time is not counted in the next case's reset."""
    for _ in range(2):
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                break
        time.sleep(0.02)


def _workspace(repo: Path, overlay: bool) -> Callable[[], float]:
    def run() -> float:
        ids = sandbox_ids() if overlay else None
        started = time.perf_counter()
        ws = Workspace(repo, overlay=overlay, run_as=ids)
        elapsed = time.perf_counter() - started
        ws.cleanup()
        return elapsed
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--terminals", default="local,bwrap,docker")
    parser.add_argument("--kinds", default="overlay,copy",
                        help="working copies to time: overlay, copy or both (a copy of 10,000 "
                             "files leaves writeback that slows the case after it)")
    args = parser.parse_args()
    os.environ.update(ENV)
    sizes = [int(s) for s in args.sizes.split(",")]
    terminals = args.terminals.split(",")
    kinds = args.kinds.split(",")
    cases: dict[str, Callable[[], float]] = {}
    cpu: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="dgym-bench-reset-") as tmp:
        for size in sizes:
            repo = make_repo(Path(tmp) / f"repo{size}", size)
            for terminal in terminals:
                for kind in kinds:
                    name = f"{size:>6} files reset {terminal} {kind}"
                    cpu[name] = []
                    cases[name] = _reset(repo, terminal, kind == "overlay", cpu[name])
            for kind in kinds:
                cases[f"{size:>6} files workspace {kind}"] = _workspace(repo, kind == "overlay")
        samples, load_before, load_after = interleaved(cases, args.rounds)
    print_table(f"reset() and working-copy costs on {time.strftime('%Y-%m-%d %H:%M')}, "
                f"{os.cpu_count()} cores, load {load_before:.2f} before / {load_after:.2f} "
                f"after, {args.rounds} rounds, interleaved, uid {os.geteuid()}", samples,
                width=36)
    print_table("CPU time of the same resets (dgym's process and the children it waited for: "
                "the local terminal's eval; not a sandbox's processes)", cpu, width=36)

    def median(size: int, case: str, data: dict[str, list[float]] = samples) -> float:
        return statistics.median(data[f"{size:>6} files {case}"])

    def fastest(size: int, case: str) -> float:
        return min(samples[f"{size:>6} files {case}"])

    small, big = min(sizes), max(sizes)
    for terminal in terminals:
        overlay, copy = f"reset {terminal} overlay", f"reset {terminal} copy"
        if small != big:
            for kind in kinds:
                case = f"reset {terminal} {kind}"
                print(f"{case}: at {big} files / at {small} files = "
                      f"{median(big, case) / median(small, case):.2f}"
                      + ("  (goal <= 1.1)" if kind == "overlay" else "")
                      + f"; fastest runs {fastest(big, case) / fastest(small, case):.2f}"
                      + f"; CPU time {median(big, case, cpu) / median(small, case, cpu):.2f}")
        if len(kinds) == 2:
            print(f"{overlay} / {copy} at {small} files = "
                  f"{median(small, overlay) / median(small, copy):.2f}  (goal <= 1.0)")


if __name__ == "__main__":
    main()
