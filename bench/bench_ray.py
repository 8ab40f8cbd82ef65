"""Episodes per minute on the mini benchmark: -n 1, -n 2, and Ray with 1 and 2 worker nodes;
Ray's overhead per episode.

    sudo python bench/bench_ray.py [--tasks N] [--rounds R]

Every configuration runs the same N mini tasks with the ``solution`` policy
(local terminal) into a fresh folder; rounds interleave the configurations
(A B C D A B C D ...) so they share the machine's load, printed above the
table. Ray clusters (``ray.cluster_utils.Cluster``: a head without CPUs plus
worker nodes with 1 CPU each) are started once, before the rounds; their
start-up and the driver's connection are not counted. The script re-runs
itself inside a network namespace of its own (``unshare -n``, root) so every
Ray node is 127.0.0.1.

Ray overhead per episode, measured on the two configurations that run one
episode at a time (``-n 1`` in-process, Ray with 1 node): for every episode,
its *gap* = the driver's time from the previous episode's end (or the run's
start) to this episode's end, minus the episode's own ``wall_time`` (measured
by run_task around the episode, wherever it runs). The gap is what the
executor adds around an episode (Ray: scheduling, the worker's benchmark
load, shipping the trajectory, returning the status); the episode's own
duration, which varies with the machine's load, cancels out. Overhead =
Ray's gap - the in-process gap, as median and mean over the N x R episodes
(the mean includes each worker's first, benchmark-loading episode). Target < 0.3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

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
    parser.add_argument("--tasks", type=int, default=13, help="mini tasks per run (13: all)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not _in_namespace():
        _reexec_in_namespace()

    import ray
    from ray.cluster_utils import Cluster

    from dgym_tui.benchmarks import get_benchmark
    from dgym_tui.runs.config import load_config
    from dgym_tui.runs.executors.local import LocalExecutor
    from dgym_tui.runs.executors.ray import RayExecutor
    from dgym_tui.runs.runner import RunJob, load_benchmark

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

    benchmark = load_benchmark(config)

    def timed(executor: Any, out: Path) -> tuple[float, list[float], list[str]]:
        """Run the N episodes; return (wall s, per-episode gaps s, unresolved tasks)."""
        ends: list[tuple[float, Any]] = []

        class Clock:
            def started(self, name: str) -> None:
                pass

            def finished(self, status: Any) -> None:
                ends.append((time.monotonic(), status))

        results: dict[str, Any] = {}
        started = time.monotonic()
        executor.run(RunJob(config, out, None, benchmark), names, results, Clock())
        wall = time.monotonic() - started
        gaps, previous = [], started
        for end, status in ends:
            gaps.append(end - previous - status.wall_time)
            previous = end
        return wall, gaps, [n for n in names if not getattr(results.get(n), "resolved", False)]

    def with_ray(nodes: int):
        def go(out: Path):
            ray.init(address=clusters[nodes].address, logging_level="ERROR")
            try:  # the driver's connection is made before the clock starts
                return timed(RayExecutor(), out)
            finally:
                ray.shutdown()
        return go

    def with_threads(workers: int):
        return lambda out: timed(LocalExecutor(workers), out)

    runs = {"-n 1": with_threads(1), "-n 2": with_threads(2), "ray, 1 node": with_ray(1),
            "ray, 2 nodes": with_ray(2)}
    walls: dict[str, list[float]] = {label: [] for label in runs}
    gaps: dict[str, list[float]] = {label: [] for label in runs}
    scratch = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    try:
        for round_ in range(args.rounds):
            for label, go in runs.items():
                out = scratch / f"{label.replace(' ', '_').replace(',', '')}-{round_}"
                wall, episode_gaps, bad = go(out)
                if bad:
                    errors = {n: json.loads((out / n / "status.json").read_text()).get("error")
                              for n in bad if (out / n / "status.json").exists()}
                    sys.exit(f"{label}: not resolved: {bad} {errors}")
                walls[label].append(wall)
                gaps[label].extend(episode_gaps)
    finally:
        for c in clusters.values():
            c.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)

    print(f"mini benchmark, {len(names)} tasks, solution policy, {args.rounds} round(s); "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPU(s)")
    print(f"{'configuration':<14} {'median s':>9} {'episodes/min':>13}")
    for label, values in walls.items():
        median = statistics.median(values)
        print(f"{label:<14} {median:>9.1f} {len(names) / median * 60:>13.1f}")
    ray_gaps, local_gaps = gaps["ray, 1 node"], gaps["-n 1"]
    print(f"gap around an episode over {len(ray_gaps)} episodes (s): "
          f"in-process median {statistics.median(local_gaps):.3f} mean "
          f"{statistics.mean(local_gaps):.3f}; Ray median {statistics.median(ray_gaps):.3f} "
          f"mean {statistics.mean(ray_gaps):.3f}")
    print(f"Ray overhead per episode: median "
          f"{statistics.median(ray_gaps) - statistics.median(local_gaps):.3f} s, mean "
          f"{statistics.mean(ray_gaps) - statistics.mean(local_gaps):.3f} s (target < 0.3 s)")
    wall_overhead = [(r - n) / len(names) for r, n in zip(walls["ray, 1 node"], walls["-n 1"],
                                                                 strict=True)]
    print(f"(whole-run walls, Ray 1 node - -n 1, per episode: median "
          f"{statistics.median(wall_overhead):.3f} s, mean {statistics.mean(wall_overhead):.3f} s;"
          f" includes the load's effect on the episodes themselves)")


if __name__ == "__main__":
    main()
