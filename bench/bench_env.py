"""Benchmark the environment: reset, view, eval, rewrite and pdb round trips.

Prints a table of median and p90 milliseconds for the local and the Docker
terminal on one data/mini task and, when the reference system is installed
(bench/setup_reference.sh, or REF_PYTHON=/path/to/python), the same plan run by
it, with ratios reference / ours. Targets: shared/DESIGN.md "Performance".

    python bench/bench_env.py [--task pagination] [--rounds 20] [--resets 5]
                              [--terminals local,docker] [--ref-python PATH]

Locally, eval and reset are dominated by the host's pytest start-up: a host
with many pytest plugins (hypothesis's alone costs ~2 s here) pays it on every
run, for both systems. ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python bench/...``
measures with a plain pytest, as the Docker sandbox has.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from plan import actions, find_probe, summarize  # noqa: E402

from dgym_tui import ToolCall  # noqa: E402
from dgym_tui.benchmarks import get_benchmark  # noqa: E402

LABELS = ["reset", "view", "eval", "rewrite", "pdb b N", "pdb c", "pdb p x", "pdb n"]
DEFAULT_REF = "/opt/ref-debug-gym/bin/python"


def main_module(task) -> str:
    """The task's code module: the first .py file that is not a test file."""
    for path in sorted(Path(task.path).glob("*.py")):
        if not path.name.startswith("test_"):
            return path.name
    raise SystemExit(f"task {task.name}: no code module found")


def bench_ours(task, module: str, terminal: str, rounds: int, resets: int, image: str):
    probe = find_probe(Path(task.path), module)
    samples: dict[str, list[float]] = {"reset": []}
    env = None
    for i in range(resets):
        env = task.make_env(terminal=terminal, image=image if terminal == "docker" else None)
        started = time.perf_counter()
        env.reset()
        samples["reset"].append(time.perf_counter() - started)
        if i + 1 < resets:
            env.close()
    line = probe["line"]
    text = env.workspace.read_text(module).splitlines()
    plan = actions(probe, rounds)
    plan.append(("rewrite", "rewrite", {"path": module, "start": line, "end": line,
                                        "new_code": text[line - 1]}))
    for label, name, args in plan:
        started = time.perf_counter()
        result = env.step(ToolCall(name=name, arguments=args))
        samples.setdefault(label, []).append(time.perf_counter() - started)
        if result.error:
            raise SystemExit(f"{terminal}: {name} {args} failed: {result.observation[:300]}")
    env.close()
    return summarize(samples)


def bench_reference(ref_python: str, task, module: str, rounds: int, resets: int):
    driver = Path(__file__).parent / "ref_driver.py"
    proc = subprocess.run([ref_python, str(driver), str(task.path), task.entrypoint, module,
                           str(rounds), str(resets)], capture_output=True, text=True,
                          timeout=1800)
    if proc.returncode != 0:
        print(f"reference system failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(columns: dict[str, dict]) -> str:
    names = list(columns)
    head = f"{'action':<10}" + "".join(f"{n + ' med':>16}{n + ' p90':>14}" for n in names)
    rows = [head, "-" * len(head)]
    ref = columns.get("reference")
    for label in LABELS:
        row = f"{label:<10}"
        for n in names:
            cell = columns[n].get(label)
            if cell:
                row += f"{cell['median']:>16.1f}{cell['p90']:>14.1f}"
            else:
                row += f"{'-':>16}{'-':>14}"
        rows.append(row)
    if ref:
        rows.append("")
        rows.append("ratio reference / ours (median; > 1 means we are faster)")
        for n in names:
            if n == "reference":
                continue
            parts = []
            for label in LABELS:
                if label in ref and label in columns[n] and columns[n][label]["median"] > 0:
                    ratio = ref[label]["median"] / columns[n][label]["median"]
                    parts.append(f"{label} {ratio:.1f}x")
            rows.append(f"  {n}: " + ", ".join(parts))
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="pagination")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--resets", type=int, default=5)
    parser.add_argument("--terminals", default="local,docker")
    parser.add_argument("--image", default=os.environ.get("DGYM_TEST_IMAGE",
                                                          "dgym-tui/sandbox:test"))
    parser.add_argument("--ref-python", default=os.environ.get("REF_PYTHON", DEFAULT_REF))
    args = parser.parse_args()

    task = get_benchmark("mini").load(args.task)
    module = main_module(task)
    columns = {}
    for terminal in [t for t in args.terminals.split(",") if t]:
        print(f"running {terminal} ...", file=sys.stderr)
        columns[terminal] = bench_ours(task, module, terminal, args.rounds, args.resets,
                                       args.image)
    if os.path.exists(args.ref_python):
        print("running the reference system ...", file=sys.stderr)
        ref = bench_reference(args.ref_python, task, module, args.rounds, args.resets)
        if ref:
            columns["reference"] = ref
    else:
        print(f"reference system not installed at {args.ref_python} "
              "(bash bench/setup_reference.sh); skipping it", file=sys.stderr)
    print(f"task {args.task} ({module}), {args.rounds} rounds, {args.resets} resets; "
          "milliseconds")
    print(table(columns))


if __name__ == "__main__":
    main()
