"""Time the run browser: reading and painting a big run folder, and following a live episode.

    python bench/bench_runs.py [--episodes 1000] [--rounds 5] [--steps 20]

Writes a run folder of finished episodes (the real trajectory writer; 20-file
headers, 2-6 steps each) into a temporary folder, then prints the median and
worst of ``rounds``:

* cold index (wall and CPU time; a new :class:`RunIndex` each time) and warm
  refresh (nothing changed: what the browser's 1 s timer costs);
* paint: ``dgym-tui RUN_DIR`` headless (Textual's test driver, 160x40), from
  creating the app until the first screen of episodes was drawn (wall and CPU
  time; goal: < 1 s for 1,000 episodes), and until every episode is in the
  table (the rest comes in batches after the first paint, keys answered);
* follow: an episode open in the step list while a writer appends ``--steps``
  steps at random moments; the time from a step's flush to its row on screen
  (goal: < 0.5 s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from run_folders import write_episode, write_run  # noqa: E402

from dgym_tui.episode.trajectory import TrajectoryWriter  # noqa: E402
from dgym_tui.runs.index import RunIndex  # noqa: E402

SIZE = (160, 40)


def time_index(run: Path, episodes: int, rounds: int) -> dict[str, list[float]]:
    """Cold index (wall, CPU) and warm refresh times, in seconds."""
    times: dict[str, list[float]] = {"cold index": [], "cold CPU": [], "warm refresh": []}
    for _ in range(rounds):
        index = RunIndex([run])
        start, cpu = time.perf_counter(), time.process_time()
        index.refresh()
        times["cold index"].append(time.perf_counter() - start)
        times["cold CPU"].append(time.process_time() - cpu)
        assert len(index.rows) == episodes
        start = time.perf_counter()
        index.refresh()
        times["warm refresh"].append(time.perf_counter() - start)
    return times


async def time_paint(run: Path, episodes: int) -> tuple[float, float, float]:
    """Seconds from creating the run browser to its first drawn screen of episodes (wall, CPU),
    and to every episode being in its table (wall).

    The first screen's rows go in before the first paint, the rest in batches each
    scheduled after a screen refresh: the second batch's start marks the first paint.
    """
    from textual.widgets import DataTable

    from dgym_tui.tui.screens.runs import RunsApp, RunsScreen

    marks: list[tuple[int, float, float]] = []
    add_rows = RunsScreen._add_rows

    def traced(screen: RunsScreen, begin: int, end: int, generation: int) -> None:
        marks.append((begin, time.perf_counter(), time.process_time()))
        add_rows(screen, begin, end, generation)

    RunsScreen._add_rows = traced  # type: ignore[method-assign]
    try:
        start, cpu = time.perf_counter(), time.process_time()
        app = RunsApp([run])
        async with app.run_test(size=SIZE) as pilot:
            while not (isinstance(table := app.screen.query(DataTable).first(None), DataTable)
                       and table.row_count == episodes):
                await asyncio.sleep(0.005)
            await pilot.pause()
            done = time.perf_counter() - start
    finally:
        RunsScreen._add_rows = add_rows  # type: ignore[method-assign]
    painted = next((m for m in marks if m[0] > 0), (0, time.perf_counter(), time.process_time()))
    return painted[1] - start, painted[2] - cpu, done


async def time_follow(folder: Path, steps: int) -> list[float]:
    """Seconds from each step's flush to its row in the step list of a live episode."""
    from dgym_tui.tui.screens.episode import EpisodePane, EpisodeScreen
    from dgym_tui.tui.screens.runs import RunsApp

    path = folder / "trajectory.jsonl"
    writer = TrajectoryWriter(path, fsync=False)
    writer.write_header({"task": {"name": "live"}, "config": {}})
    delays = []
    app = RunsApp([folder.parent])
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(EpisodeScreen(path, "live"))
        await pilot.pause()
        table = app.screen.query_one(EpisodePane).table
        for n in range(1, steps + 1):
            await asyncio.sleep(random.uniform(0.05, 0.4))  # steps come at any moment
            writer.write_step({"step": n, "actor": "agent", "observation": f"step {n}",
                               "action": {"name": "view", "arguments": {"path": "calc.py"}}})
            flushed = time.perf_counter()
            while table.row_count < n:
                await asyncio.sleep(0.002)
            await pilot.pause()  # drawn
            delays.append(time.perf_counter() - flushed)
    writer.close()
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="steps of the followed episode")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = write_run(Path(tmp) / "run", args.episodes)
        times = time_index(run, args.episodes, args.rounds)
        paints = [asyncio.run(time_paint(run, args.episodes)) for _ in range(args.rounds)]
        for number, name in enumerate(("paint", "paint CPU", "all rows in")):
            times[name] = [p[number] for p in paints]
        live = write_episode(Path(tmp) / "live-run", "live", finished=False, steps=0)
        times["follow"] = asyncio.run(time_follow(live, args.steps))
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for name, values in times.items():
        what = (f"{args.episodes} episodes" if name != "follow"
                else f"{len(values)} steps, flush to row on screen")
        print(f"{name:13s} {what}: median {statistics.median(values) * 1000:.0f} ms,"
              f" worst {max(values) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
