"""Benchmarks of the Textual app (headless): first paint, a 10,000-line file, 1,000 steps.

Run: ``python bench/bench_tui.py [--rounds 5]``. Prints a table of wall times with the
design targets. Everything is measured on the real app in Textual's headless
mode (no terminal), so terminal output speed is not included.

- first paint: ``dgym-tui PATH`` in a fresh interpreter, as the command runs it
  (import, argument parsing, theme check, bwrap probe, session opened, app
  built, mounted and painted once; the episode's reset runs in its worker as in
  real use and is not waited for). Its floor is a bare Textual app (header,
  text, footer) imported, built and painted in a fresh interpreter. The two run
  in turn, ``--rounds`` times, with bytecode as an installed package has it;
  medians and their ratio are printed (targets < 1 s and <= 2x, issues 10, 13);
- 10,000-line file: load into the source view and paint, then the median
  time to scroll one page and repaint;
- 1,000-step trajectory: read + validate the file, build the replay model,
  mount the app at step 0 and jump to the last step;
- a pdb stop: the structured inspection (stack, locals, breakpoints; one
  hidden pdb command, in the worker) and the UI refreshing every pane from it
  (variables, stack, breakpoints, gutter marks, status), medians of 30.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CALC = ("def average(xs):\n    total = 0\n    for x in xs:\n        total += x\n"
        "    return total / len(xs[1:])\n")
TESTS = "from calc import average\n\n\ndef test_one():\n    assert average([4]) == 4\n"


def _repo(tmp: Path) -> Path:
    repo = tmp / "calc"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TESTS)
    return repo


#: ``dgym-tui PATH`` up to its first paint, in a fresh interpreter: the command line's
#: own modules, the argument parsing and session opening (``build_app``: theme check,
#: bwrap probe, task, environment, trajectory file) and the app built, mounted and
#: painted once. The episode's reset starts in its worker as in real use and is not
#: waited for. Prints seconds: import, build, paint, and the main thread's CPU time.
OURS_APP = """
import asyncio, sys, time
c0, t0 = time.thread_time(), time.perf_counter()
from dgym_tui.tui.cli import build_app, build_parser
t1 = time.perf_counter()

async def main():
    app = build_app(build_parser().parse_args([sys.argv[1], "--trajectory", sys.argv[2]]))
    t2 = time.perf_counter()
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        t3, c3 = time.perf_counter(), time.thread_time()
        await app.workers.wait_for_complete()
    app.close_session()
    print(t1 - t0, t2 - t1, t3 - t2, c3 - c0)

asyncio.run(main())
"""

#: The floor: a bare Textual app (header, text, footer) imported, built and painted
#: once in a fresh interpreter, timed the same way (wall, then CPU seconds).
BARE_APP = """
import asyncio, time
c0, t0 = time.thread_time(), time.perf_counter()
from textual.app import App
from textual.widgets import Footer, Header, Static

class Bare(App):
    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()

async def main():
    async with Bare().run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        print(time.perf_counter() - t0, time.thread_time() - c0)

asyncio.run(main())
"""


def _fresh(code: str, *args: str) -> list[float]:
    """Run ``code`` in a fresh interpreter; return the numbers it prints (seconds).

    Bytecode is written and read as in an installed package (pip compiles it);
    with ``PYTHONDONTWRITEBYTECODE`` set, every run would compile our modules again.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True, env=env)
    return [float(x) for x in out.stdout.split()]


def bench_first_paint(repo: Path, tmp: Path, rounds: int) -> dict[str, list[float]]:
    """``dgym-tui PATH`` and the bare app, interleaved A B A B (one unmeasured warm-up
    each, which also writes the bytecode). Returns lists of seconds: ``import``,
    ``build``, ``paint``, ``total``, ``cpu`` (ours: the main thread's CPU time to the
    first paint, which machine load disturbs less than wall time), ``bare`` and
    ``bare cpu``."""
    _fresh(OURS_APP, str(repo), str(tmp / "paint-warm.jsonl"))
    _fresh(BARE_APP)
    times: dict[str, list[float]] = {k: [] for k in ("import", "build", "paint", "total", "cpu",
                                                     "bare", "bare cpu")}
    for i in range(rounds):
        bare, bare_cpu = _fresh(BARE_APP)
        times["bare"].append(bare)
        times["bare cpu"].append(bare_cpu)
        imported, built, painted, cpu = _fresh(OURS_APP, str(repo), str(tmp / f"paint-{i}.jsonl"))
        for key, value in (("import", imported), ("build", built), ("paint", painted),
                           ("total", imported + built + painted), ("cpu", cpu)):
            times[key].append(value)
    return times


async def bench_big_file() -> tuple[float, float]:
    from textual.app import App

    from dgym_tui.tui.widgets.source_view import SourceView

    text = "".join(f"def f_{i}(x):\n    return x * {i}  # line {2 * i + 2}\n"
                   for i in range(5_000))

    class ViewApp(App):
        def compose(self):
            yield SourceView()

    app = ViewApp()
    async with app.run_test(size=(160, 48)) as pilot:
        view = app.query_one(SourceView)
        start = time.perf_counter()
        view.load("big.py", text, 1)
        await pilot.pause()
        opened = time.perf_counter() - start
        view.focus()
        pages = []
        for _ in range(60):
            t = time.perf_counter()
            await pilot.press("pagedown")
            await pilot.pause()
            pages.append(time.perf_counter() - t)
    return opened, statistics.median(pages)


def _make_trajectory(repo: Path, tmp: Path, steps: int) -> Path:
    """Record a short real episode, then repeat its step records up to ``steps``."""
    from dgym_tui.core.env import RepoEnv
    from dgym_tui.core.types import ToolCall
    from dgym_tui.session import Session

    short = tmp / "short.jsonl"
    env = RepoEnv(repo)
    session = Session(env, trajectory_path=short, task_name="calc", max_steps=steps + 10)
    session.start()
    session.act(ToolCall("view", {"path": "calc.py"}))
    session.act(ToolCall("pdb", {"command": "b calc.py:5"}))
    session.act(ToolCall("pdb", {"command": "c"}))
    session.act(ToolCall("pdb", {"command": "p total"}))
    session.act(ToolCall("grep", {"pattern": "total"}))
    session.finish("quit")
    env.close()
    lines = [json.loads(line) for line in short.read_text().splitlines()]
    header, body, footer = lines[0], [r for r in lines if r["type"] == "step"], lines[-1]
    out = tmp / "long.jsonl"
    with out.open("w") as fh:
        fh.write(json.dumps(header) + "\n")
        for i in range(steps):
            record = dict(body[i % len(body)], step=i + 1)
            fh.write(json.dumps(record) + "\n")
        fh.write(json.dumps(dict(footer, steps=steps)) + "\n")
    return out


async def bench_trajectory(path: Path) -> tuple[float, float]:
    from dgym_tui.trajectory import read_trajectory
    from dgym_tui.tui.app import DgymApp
    from dgym_tui.tui.replay_model import ReplayModel

    start = time.perf_counter()
    model = ReplayModel(read_trajectory(path))
    model.files()  # the file list recorded in the header
    loaded = time.perf_counter() - start
    app = DgymApp(replay=model)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.press("dollar_sign")
        await pilot.pause()
        elapsed = time.perf_counter() - start
        assert app.step_index == 1000
    app.close_session()
    return loaded, elapsed


async def bench_stop(repo: Path, tmp: Path) -> tuple[float, float]:
    from dgym_tui.core.env import RepoEnv
    from dgym_tui.session import Session
    from dgym_tui.tui.actions import pdb_call
    from dgym_tui.tui.app import DgymApp

    session = Session(RepoEnv(repo), trajectory_path=tmp / "stop.jsonl")
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        while not app.started or app.busy:
            await pilot.pause(0.05)
        for command in ("b calc.py:4", "c"):
            app.act(pdb_call(command))
            await pilot.pause(0.05)
            while app.busy:
                await pilot.pause(0.05)
        inspects, refreshes, painted = [], [], []
        for _ in range(30):
            t = time.perf_counter()
            inspection = await asyncio.to_thread(session.inspect)
            inspects.append(time.perf_counter() - t)
            assert inspection is not None and inspection.variables
            t = time.perf_counter()
            app._show_debug(inspection, app._last_result)
            app._refresh_marks(app._last_result)
            app._update_status(app._last_result)
            refreshes.append(time.perf_counter() - t)
            await pilot.pause()
            painted.append(time.perf_counter() - t)
    app.close_session()
    return (statistics.median(inspects), statistics.median(refreshes),
            statistics.median(painted))


async def run(rounds: int) -> list[tuple[str, float, str]]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        repo = _repo(tmp)
        rows = [("load average (1 min) at start", os.getloadavg()[0], f"{os.cpu_count()} cores")]
        paint = {k: statistics.median(v) for k, v in bench_first_paint(repo, tmp, rounds).items()}
        rows.append((f"dgym-tui PATH: import (median of {rounds})", paint["import"], "-"))
        rows.append(("dgym-tui PATH: parse + open session + build app", paint["build"], "-"))
        rows.append(("dgym-tui PATH: mount + first paint", paint["paint"], "-"))
        rows.append(("dgym-tui PATH: first paint, total", paint["total"], "< 1 s"))
        rows.append(("bare Textual app: import + build + paint", paint["bare"], "floor"))
        rows.append(("ratio first paint / bare app (medians)", paint["total"] / paint["bare"],
                     "<= 2x"))
        rows.append(("main thread CPU to first paint: dgym-tui PATH", paint["cpu"], "-"))
        rows.append(("main thread CPU to first paint: bare app", paint["bare cpu"], "floor"))
        rows.append(("ratio of the CPU times (medians)", paint["cpu"] / paint["bare cpu"], "-"))
        opened, page = await bench_big_file()
        rows.append(("open a 10,000-line file (load + paint)", opened, "smooth"))
        rows.append(("scroll one page in it (median of 60)", page, "smooth"))
        traj = _make_trajectory(repo, tmp, 1000)
        loaded, total = await bench_trajectory(traj)
        rows.append(("1,000-step trajectory: read + validate + model", loaded, "-"))
        rows.append(("1,000-step trajectory: + app painted at last step", total, "< 1 s"))
        inspect, refresh, painted = await bench_stop(repo, tmp)
        rows.append(("pdb stop: inspection in the worker (median of 30)", inspect, "< 0.02 s"))
        rows.append(("pdb stop: every pane updated on the UI thread (median)", refresh,
                     "< 0.05 s"))
        rows.append(("pdb stop: ... + the next screen refresh (median)", painted, "-"))
        rows.append(("load average (1 min) at end", os.getloadavg()[0], "-"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5,
                        help="first-paint rounds, ours and the bare app in turn (default 5)")
    rows = asyncio.run(run(parser.parse_args().rounds))
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'seconds':>8}  target")
    print("-" * (width + 20))
    for label, seconds, target in rows:
        print(f"{label:<{width}}  {seconds:8.3f}  {target}")


if __name__ == "__main__":
    main()
