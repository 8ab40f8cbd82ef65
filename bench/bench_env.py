"""Benchmark the environment against the reference system, honestly.

    python bench/bench_env.py [--task pagination] [--rounds 20]
                              [--terminals local,docker] [--ref-python PATH]

Every system x terminal is a driver process (bench/ours_driver.py, and
bench/ref_driver.py inside the reference system's virtualenv, installed by
bench/setup_reference.sh). The drivers get their rounds in turn, A B A B, so
they share the machine's load; each round is a fresh episode running
plan.round_plan, and every observation is checked (plan.check): an action
that fails is counted as an error, never timed as a fast one.

Per action it prints median, p90 and mean milliseconds, the share of samples
over 50 ms, the ratio of means reference / ours, and for eval the ratio of
means ours / floor (a bare ``python -m pytest`` of the same tests,
bench/floor_driver.py). The reference's pdb
reader sleeps 100 ms whenever pdb has not answered at its first read, so its
median flips with the machine's load: read the mean and the slow share, and
the load average printed above the table.

Locally, eval and reset are dominated by pytest's start-up. Every driver puts
this interpreter first on PATH, so all systems run the tests with the same
pytest and plugins (a virtualenv with many plugins pays seconds per run).
``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python bench/...`` measures with a plain
pytest, as the Docker sandbox has.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from plan import LABELS, summarize  # noqa: E402

from dgym_tui.benchmarks import get_benchmark  # noqa: E402

HERE = Path(__file__).parent
DEFAULT_REF = "/opt/ref-debug-gym/bin/python"


class Driver:
    """One system on one terminal, answering rounds (see plan.serve)."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name  # "SYSTEM TERMINAL": ours, reference or floor
        # Every system runs the code under test with this interpreter (first on PATH, as
        # our local terminal does), so pytest and its plugins are the same for all.
        env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, cwd=HERE.parent, env=env)
        self.samples: dict[str, list[float]] = {label: [] for label in LABELS}
        self.errors: dict[str, list[str]] = {label: [] for label in LABELS}
        self.failed = ""

    def round(self) -> None:
        if self.failed:
            return
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            self.failed = f"driver exited with {self.proc.wait()}"
            return
        answer = json.loads(line)
        for label, seconds in answer["samples"].items():
            if label in answer["errors"]:
                self.errors[label].append(answer["errors"][label])
            else:
                self.samples[label].append(seconds)

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min) {five:.2f} (5 min) on {os.cpu_count()} cores"


def table(drivers: list[Driver]) -> str:
    rows = [f"{'action':<17}{'system':<20}{'median':>9}{'p90':>9}{'mean':>9}{'>50ms':>7}"
            f"{'n':>4}{'errors':>7}  ref/ours, ours/floor (mean)"]
    rows.append("-" * len(rows[0]))
    by_name = {d.name: d for d in drivers}
    for label in LABELS:
        for d in drivers:
            values, errors = d.samples[label], len(d.errors[label])
            if not values and d.name.startswith("floor"):
                continue
            if not values:
                rows.append(f"{label:<17}{d.name:<20}{'-':>9}{'-':>9}{'-':>9}{'-':>7}{0:>4}{errors:>7}")
                continue
            s = summarize(values)
            ratio = ""
            ref = by_name.get("reference " + d.name.split(" ", 1)[-1])
            if d.name.startswith("ours") and ref and ref.samples[label]:
                ratio = f"{summarize(ref.samples[label])['mean'] / s['mean']:.2f}x"
            floor = by_name.get("floor " + d.name.split(" ", 1)[-1])
            if d.name.startswith("ours") and floor and floor.samples[label]:
                ratio += f" floor {s['mean'] / summarize(floor.samples[label])['mean']:.2f}x"
            rows.append(f"{label:<17}{d.name:<20}{s['median']:>9.1f}{s['p90']:>9.1f}{s['mean']:>9.1f}"
                        f"{s['slow']:>7.0%}{s['n']:>4}{errors:>7}  {ratio}")
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="pagination")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--terminals", default="local,docker")
    parser.add_argument("--image", default=os.environ.get("DGYM_TEST_IMAGE", "dgym-tui/sandbox:test"))
    parser.add_argument("--ref-python", default=os.environ.get("REF_PYTHON", DEFAULT_REF))
    args = parser.parse_args()

    terminals = [t for t in args.terminals.split(",") if t]
    drivers = [Driver(f"ours {t}", [sys.executable, str(HERE / "ours_driver.py"), args.task, t,
                                    args.image]) for t in terminals]
    if "local" in terminals:
        drivers.append(Driver("floor local", [sys.executable, str(HERE / "floor_driver.py"), args.task]))
    if os.path.exists(args.ref_python):
        task = get_benchmark("mini").load(args.task)
        # The reference runs pdb on its entrypoint as given: pytest must not
        # capture stdin (its own default entrypoint is `python -m pytest -sq .`).
        entrypoint = task.entrypoint.replace(" pytest ", " pytest -s ", 1)
        drivers += [Driver(f"reference {t}", [args.ref_python, str(HERE / "ref_driver.py"),
                                              str(task.path), entrypoint, t, args.image])
                    for t in terminals if t in ("local", "docker")]
    else:
        print(f"reference system not installed at {args.ref_python} "
              "(bash bench/setup_reference.sh); timing ours only", file=sys.stderr)
    before = load()
    try:
        for n in range(args.rounds):
            print(f"round {n + 1}/{args.rounds}", file=sys.stderr)
            for d in drivers:
                d.round()
    finally:
        for d in drivers:
            d.close()
    print(f"task {args.task}, {args.rounds} rounds interleaved A B A B; milliseconds")
    print(f"before: {before}; after: {load()}")
    print(table(drivers))
    for d in drivers:
        if d.failed:
            print(f"{d.name}: {d.failed}")
        for label, messages in d.errors.items():
            if messages:
                print(f"{d.name} {label}: {len(messages)} errors, first: {messages[0][:240]}")


if __name__ == "__main__":
    main()
