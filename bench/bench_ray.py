"""Episodes per minute on the mini benchmark: -n 1, -n 2, and Ray with 1 and 2 worker nodes.

    sudo python bench/bench_ray.py [--tasks N] [--rounds R]

Every configuration runs the same N mini tasks with the ``solution`` policy
(local terminal) into a fresh folder; rounds interleave the configurations
(A B C D A B C D ...) so they share the machine's load, printed above the
table. Ray clusters (``ray.cluster_utils.Cluster``: a head without CPUs plus
worker nodes with 1 CPU each) are started once, before the rounds; their
start-up is not counted. The script re-runs itself inside a network namespace
of its own (``unshare -n``, root) so every Ray node is 127.0.0.1.

Ray overhead per episode = (wall time with 1 Ray node - wall time with -n 1) / N:
both run the episodes one at a time, so the difference is what Ray adds
(scheduling, shipping the trajectory, returning the status). Target < 0.3 s.
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _in_namespace() -> bool:
    return [name for _, name in socket.if_nameindex()] == ["lo"]


def _reexec_in_namespace() -> None:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        sys.exit("bench_ray.py needs root and unshare: Ray must only see 127.0.0.1")
    script = 'ip link set lo up && exec "$0" "$@"'
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                          if p))
    sys.exit(subprocess.call(["unshare", "-n", "sh", "-c", script, sys.executable, *sys.argv],
                             env=env))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=6, help="mini tasks per run")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not _in_namespace():
        _reexec_in_namespace()

    import ray
    from ray.cluster_utils import Cluster
    from rich.console import Console

    from dgym_tui.benchmarks import get_benchmark
    from dgym_tui.config import load_config
    from dgym_tui.ray_executor import RayExecutor
    from dgym_tui.runner import run_tasks

    names = get_benchmark("mini").tasks()[:args.tasks]
    config = load_config("mini_solution", [f"tasks=[{', '.join(names)}]", "terminal=local"])
    local = {"node_ip_address": "127.0.0.1"}

    def cluster(nodes: int) -> Cluster:
        c = Cluster(initialize_head=True,
                    head_node_args={"num_cpus": 0, "include_dashboard": False, **local})
        for _ in range(nodes):
            c.add_node(num_cpus=1, **local)
        c.wait_for_nodes()
        return c

    clusters = {1: cluster(1), 2: cluster(2)}

    def with_ray(nodes: int):
        def go(out: Path):
            ray.init(address=clusters[nodes].address, logging_level="ERROR")
            try:  # the driver's connection is made before the clock starts
                started = time.monotonic()
                return run_tasks(config, output_dir=out, executor=RayExecutor(), progress=False,
                                 console=Console(file=io.StringIO())), time.monotonic() - started
            finally:
                ray.shutdown()
        return go

    def with_threads(workers: int):
        def go(out: Path):
            started = time.monotonic()
            return run_tasks(config, workers=workers, output_dir=out, progress=False,
                             console=Console(file=io.StringIO())), time.monotonic() - started
        return go

    runs = {"-n 1": with_threads(1), "-n 2": with_threads(2), "ray, 1 node": with_ray(1),
            "ray, 2 nodes": with_ray(2)}
    walls: dict[str, list[float]] = {label: [] for label in runs}
    scratch = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    for round_ in range(args.rounds):
        for label, go in runs.items():
            out = scratch / f"{label.replace(' ', '_').replace(',', '')}-{round_}"
            summary, seconds = go(out)
            walls[label].append(seconds)
            bad = [s.task for s in summary.statuses if not s.resolved]
            if bad:
                sys.exit(f"{label}: not resolved: {bad}")
    for c in clusters.values():
        c.shutdown()
    shutil.rmtree(scratch, ignore_errors=True)

    print(f"mini benchmark, {len(names)} tasks, solution policy, {args.rounds} round(s); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPU(s)")
    print(f"{'configuration':<14} {'median s':>9} {'episodes/min':>13}")
    for label, values in walls.items():
        median = statistics.median(values)
        print(f"{label:<14} {median:>9.1f} {len(names) / median * 60:>13.1f}")
    overhead = (statistics.median(walls["ray, 1 node"]) - statistics.median(walls["-n 1"])) \
        / len(names)
    print(f"Ray overhead per episode (1 node vs -n 1): {overhead:.3f} s (target < 0.3 s)")


if __name__ == "__main__":
    main()
