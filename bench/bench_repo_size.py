"""Step cost against repository size, ours and debug-gym 1.3.0's (view, listdir, grep, pdb, ...).

Builds synthetic repositories of 100 / 1,000 / 10,000 Python files (folders
of 50 modules of ~40 lines, plus one buggy module and its test; see
repo_size_plan.py), opens one episode on each system's local terminal and
runs each action ``--rounds`` times, the two systems in turn (A B, then B A),
so both see the same machine load. The reference system is debug-gym 1.3.0
in its own interpreter (bash bench/setup_reference.sh), driven by
bench/ref_repo_size_driver.py; it is left out when ``--ref-python`` does not
exist. "eval overhead" is one eval step minus a bare run of the same command
in the system's working copy (bare first, then eval first, in turn); on a
loaded machine the bare run's own spread (seconds) hides it. Prints median
and mean milliseconds per action, system and size, with the date and the
machine load.

    python bench/bench_repo_size.py [--sizes 100,1000,10000] [--rounds 20] [--ref-python PY]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
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
    READ_ACTIONS,
    bare_run,
    check,
    make_repo,
    rewrite_call,
)

from dgym_tui import RepoEnv, ToolCall  # noqa: E402

DEFAULT_REF = "/opt/ref-debug-gym/bin/python"
LABELS = [label for label, _, _ in READ_ACTIONS] + ["rewrite", "eval overhead"]

#: A system as the benchmark drives it: ``step(label, tool, arguments) -> seconds`` and
#: ``bare() -> seconds`` of a bare test run in its working copy.
System = tuple[Callable[[str, str, dict], float], Callable[[], float]]


def ours(env: RepoEnv) -> System:
    def step(label: str, tool: str, arguments: dict) -> float:
        started = time.perf_counter()
        result = env.step(ToolCall(name=tool, arguments=arguments))
        elapsed = time.perf_counter() - started
        error = check(label, result.observation) if label else None
        if result.error or error:
            raise SystemExit(f"ours: {tool} {arguments} failed: {error or result.observation[:300]}")
        return elapsed

    return step, lambda: bare_run(str(env.workspace.root))


class Reference:
    """The reference driver process on one repository (see ref_repo_size_driver.py)."""

    def __init__(self, python: str, repo: Path) -> None:
        driver = Path(__file__).with_name("ref_repo_size_driver.py")
        self.proc = subprocess.Popen([python, str(driver), str(repo)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def ask(self, request: dict) -> dict:
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"reference driver ended (exit {self.proc.wait()})")
        return json.loads(line)

    def system(self) -> System:
        def step(label: str, tool: str, arguments: dict) -> float:
            answer = self.ask({"label": label, "tool": tool, "arguments": arguments})
            if answer["error"]:
                raise SystemExit(f"reference: {answer['error']}")
            return answer["seconds"]

        return step, lambda: self.ask({"bare": True})["seconds"]

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def bench_size(files: int, rounds: int, ref_python: str | None) -> dict[str, dict[str, list[float]]]:
    """``{system: {label: [seconds]}}`` for one repository size (systems "ours", "reference")."""
    with tempfile.TemporaryDirectory(prefix="dgym-bench-") as tmp:
        repo = make_repo(Path(tmp) / "repo", files)
        reference = Reference(ref_python, repo) if ref_python else None
        try:
            with RepoEnv(repo, entrypoint=ENTRYPOINT) as env:
                env.reset()
                systems = {"ours": ours(env)}
                if reference:
                    systems["reference"] = reference.system()
                return run_rounds(systems, rounds)
        finally:
            if reference:
                reference.close()


def run_rounds(systems: dict[str, System], rounds: int) -> dict[str, dict[str, list[float]]]:
    """Each action once per system per round, the systems in turn (A B, then B A)."""
    samples = {name: {label: [] for label in LABELS} for name in systems}

    def in_turn(r: int) -> list[tuple[str, System]]:
        names = list(systems) if r % 2 == 0 else list(systems)[::-1]
        return [(name, systems[name]) for name in names]

    for tool, arguments in PDB_SETUP:
        for _, (step, _) in in_turn(0):
            step("", tool, arguments)
    calls = [(r, call) for r in range(rounds) for call in READ_ACTIONS]
    calls += [(r, rewrite_call(r)) for r in range(rounds)]
    for r, (label, tool, arguments) in calls:
        for name, (step, _) in in_turn(r):
            samples[name][label].append(step(label, tool, arguments))
    for r in range(max(5, rounds // 2)):
        for name, (step, bare) in in_turn(r):
            if r % 2 == 0:  # bare first, then eval first: neither order is favoured
                plain, seconds = bare(), step("eval", "eval", {})
            else:
                seconds, plain = step("eval", "eval", {}), bare()
            samples[name]["eval overhead"].append(seconds - plain)
    return samples


def fmt(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):.1f} / {statistics.fmean(ms):.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--ref-python", default=os.environ.get("REF_PYTHON", DEFAULT_REF),
                        help="the reference system's interpreter ('' leaves it out)")
    args = parser.parse_args()
    # both systems and the bare runs find the same python (first on PATH) and environment
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    os.environ.update(ENV)
    ref = args.ref_python if args.ref_python and os.path.exists(args.ref_python) else None
    if not ref:
        print(f"reference system not found ({args.ref_python!r}): ours only", file=sys.stderr)
    sizes = [int(s) for s in args.sizes.split(",")]
    load_before = os.getloadavg()[0]
    results = {size: bench_size(size, args.rounds, ref) for size in sizes}
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
          f"{load_before:.2f} -> {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"{args.rounds} rounds; ms median / mean; python {sys.version.split()[0]}")
    systems = list(results[sizes[0]])
    columns = [(size, name) for size in sizes for name in systems]
    print(f"{'action':14}" + "".join(f"{f'{name[:3]} {size}':>18}" for size, name in columns))
    for label in LABELS:
        print(f"{label:14}" + "".join(f"{fmt(results[size][name][label]):>18}"
                                      for size, name in columns))


if __name__ == "__main__":
    main()
