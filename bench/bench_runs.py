"""Time the run index: how long ``dgym-tui RUN_DIR`` needs to read a run folder.

    python bench/bench_runs.py [--episodes 1000] [--rounds 5]

Writes a run folder of finished episodes (the real trajectory writer; 20-file
headers, 2-6 steps each) into a temporary folder, then prints the median and
worst of ``rounds`` cold indexes (wall and CPU time) (a new :class:`RunIndex` each time) and of
warm refreshes (nothing changed: what the browser's 1 s timer costs).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from run_folders import write_run  # noqa: E402

from dgym_tui.runs import RunIndex  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = write_run(Path(tmp) / "run", args.episodes)
        cold, cold_cpu, warm = [], [], []
        for _ in range(args.rounds):
            index = RunIndex([run])
            start, cpu = time.perf_counter(), time.process_time()
            index.refresh()
            cold.append(time.perf_counter() - start)
            cold_cpu.append(time.process_time() - cpu)
            assert len(index.rows) == args.episodes
            start = time.perf_counter()
            index.refresh()
            warm.append(time.perf_counter() - start)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, times in (("cold index", cold), ("cold CPU", cold_cpu), ("warm refresh", warm)):
        print(f"{name:13s} {args.episodes} episodes: median {statistics.median(times) * 1000:.0f} ms,"
              f" worst {max(times) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
