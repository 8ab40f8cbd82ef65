"""What ``RepoEnv.fork()`` costs: branching a live episode, with pdb idle and pdb stopped.

    python bench/bench_fork.py [--sizes 100,1000] [--rounds 20] [--terminals local,bwrap]

For each terminal and repository size (bench/repo_size_plan.py's synthetic
repositories: 50 modules of ~40 lines per folder) two episodes are opened and
one file is changed in each (so the fork has a patch to carry):

- ``pdb idle``: pdb was never started; the fork copies the working copy, the
  breakpoints and the step count and starts its terminal;
- ``pdb stopped``: pdb stands at ``target.py:2`` after ``b`` and ``c``; the
  fork also starts pdb and replays those commands (the issue's "plus the pdb
  replay");
- ``working copy``: ``Workspace.fork()`` alone (the copy and its index).

``--terminals docker,docker-off`` compares docker forks with and without spare
containers in one run (``docker-off``, ``docker-eager``: the terminal option
``fork_spare``). On docker it also prints how many forks adopted a spare container (started
after the episode's previous fork; the first fork, and one that comes before
the spare is up, waits for or creates a container).

Each round runs every case once, the cases in turn (A B C, then C B A), so
all share the machine's load; every fork is checked (same patch and frame as
its parent) and closed untimed. Prints median, p90 and mean milliseconds per
case with the machine's load before and after. The goal (issue 28): ``pdb
idle`` under 50 ms at 100 files.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from repo_size_plan import (  # noqa: E402
    ENTRYPOINT,
    ENV,
    PDB_SETUP,
    interleaved,
    make_repo,
    print_table,
    rewrite_call,
)

from dgym_tui import RepoEnv, ToolCall  # noqa: E402

GOAL_MS = 50.0


def _open(repo: Path, terminal: str, stopped: bool) -> RepoEnv:
    options = {}
    if terminal.startswith("docker-"):  # docker-off, docker-eager: the fork_spare option
        terminal, options = "docker", {"fork_spare": terminal.removeprefix("docker-")}
    env = RepoEnv(repo, entrypoint=ENTRYPOINT, terminal=terminal, terminal_options=options)
    env.reset()
    _, tool, arguments = rewrite_call(0)
    result = env.step(ToolCall(name=tool, arguments=arguments))
    if result.error:
        raise SystemExit(f"rewrite failed: {result.observation}")
    if stopped:
        for tool, arguments in PDB_SETUP:
            env.step(ToolCall(name=tool, arguments=arguments))
        if env.frame != ("target.py", 2):
            raise SystemExit(f"pdb did not stop at target.py:2 ({env.frame})")
    return env


#: case name -> forks whose terminal adopted a docker spare container
SPARES: dict[str, int] = {}


def _fork_case(env: RepoEnv, name: str) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        twin = env.fork()
        elapsed = time.perf_counter() - started
        SPARES[name] = SPARES.get(name, 0) + bool(
            getattr(twin.terminal, "started_from_spare", False))
        try:
            if twin.patch() != env.patch() or twin.frame != env.frame:
                raise SystemExit("the fork differs from its parent (patch or frame)")
        finally:
            twin.close()
        return elapsed
    return run


def _copy_case(env: RepoEnv) -> Callable[[], float]:
    def run() -> float:
        started = time.perf_counter()
        copy = env.workspace.fork()
        elapsed = time.perf_counter() - started
        try:
            if copy.patch() != env.workspace.patch():
                raise SystemExit("the forked working copy's patch differs")
        finally:
            copy.cleanup()
        return elapsed
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--terminals", default="local,bwrap")
    args = parser.parse_args()
    os.environ.update(ENV)
    sizes = [int(s) for s in args.sizes.split(",")]
    terminals = args.terminals.split(",")
    envs: list[RepoEnv] = []
    cases: dict[str, Callable[[], float]] = {}
    with tempfile.TemporaryDirectory(prefix="dgym-bench-fork-") as tmp:
        for size in sizes:
            repo = make_repo(Path(tmp) / f"repo{size}", size)
            for terminal in terminals:
                idle, stopped = _open(repo, terminal, False), _open(repo, terminal, True)
                envs += [idle, stopped]
                where = f"{terminal:<12} {size:>6} files"
                cases[f"{where} pdb idle"] = _fork_case(idle, f"{where} pdb idle")
                cases[f"{where} pdb stopped"] = _fork_case(stopped, f"{where} pdb stopped")
                cases[f"{where} working copy"] = _copy_case(idle)
        try:
            samples, load_before, load_after = interleaved(cases, args.rounds)
        finally:
            for env in envs:
                env.close()
    print_table(f"RepoEnv.fork() on {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
                f"load {load_before:.2f} before / {load_after:.2f} after, "
                f"{args.rounds} rounds, interleaved", samples, width=42)
    for name, count in SPARES.items():
        if name.startswith("docker"):
            print(f"{name}: {count} of {args.rounds} forks adopted a spare container")
    for name in cases:
        if name.endswith("pdb idle") and " 100 files" in name:
            median = statistics.median(samples[name]) * 1000
            verdict = "meets" if median < GOAL_MS else "misses"
            print(f"goal: {name.split()[0]} fork at 100 files with pdb idle {median:.1f} ms "
                  f"{verdict} < {GOAL_MS:g} ms")


if __name__ == "__main__":
    main()
