"""Benchmarks of the Textual app (headless): first paint, a 10,000-line file, 1,000 steps.

Run: ``python bench/bench_tui.py``. Prints a table of wall times with the
design targets. Everything is measured on the real app in Textual's headless
mode (no terminal), so terminal output speed is not included.

- first paint: ``dgym-tui``'s modules imported in a fresh interpreter, and the
  app built, mounted and painted once (the episode's reset runs in a worker
  and is not waited for); its floor is a bare Textual app (header, text,
  footer) imported, built and painted in a fresh interpreter, and the ratio
  of the two is printed (target <= 2x, shared/DESIGN.md);
- 10,000-line file: load into the source view and paint, then the median
  time to scroll one page and repaint;
- 1,000-step trajectory: read + validate the file, build the replay model,
  mount the app at step 0 and jump to the last step;
- a pdb stop: the structured inspection (stack, locals, breakpoints; one
  hidden pdb command, in the worker) and the UI refreshing every pane from it
  (variables, stack, breakpoints, gutter marks, status), medians of 30.
"""

from __future__ import annotations

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


def bench_import() -> float:
    code = "import time; t = time.perf_counter(); import dgym_tui.tui.cli, dgym_tui.tui.app; " \
           "print(time.perf_counter() - t)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


BARE_APP = """
import asyncio, time
t = time.perf_counter()
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
        print(time.perf_counter() - t)

asyncio.run(main())
"""


def bench_bare_app() -> float:
    """The floor: a bare Textual app (header, text, footer) imported, built and painted
    headless in a fresh interpreter, as ``import`` + ``first paint`` measure ours."""
    out = subprocess.run([sys.executable, "-c", BARE_APP], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


async def bench_first_paint(repo: Path, tmp: Path) -> float:
    from dgym_tui.core.env import RepoEnv
    from dgym_tui.session import Session
    from dgym_tui.tui.app import DgymApp

    start = time.perf_counter()
    session = Session(RepoEnv(repo), trajectory_path=tmp / "paint.jsonl")
    app = DgymApp(session=session)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        elapsed = time.perf_counter() - start
        await app.workers.wait_for_complete()
    app.close_session()
    return elapsed


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


async def run() -> list[tuple[str, float, str]]:
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        repo = _repo(tmp)
        rows = [("load average (1 min) at start", os.getloadavg()[0], f"{os.cpu_count()} cores")]
        imported = bench_import()
        rows.append(("import dgym_tui.tui (fresh interpreter)", imported, "-"))
        painted = await bench_first_paint(repo, tmp)
        rows.append(("first paint (build + mount + paint)", painted, "< 1 s"))
        bare = bench_bare_app()
        rows.append(("bare Textual app: import + build + paint", bare, "floor"))
        rows.append(("ratio (import + first paint) / bare app", (imported + painted) / bare, "<= 2x"))
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
    return rows


def main() -> None:
    rows = asyncio.run(run())
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'seconds':>8}  target")
    print("-" * (width + 20))
    for label, seconds, target in rows:
        print(f"{label:<{width}}  {seconds:8.3f}  {target}")


if __name__ == "__main__":
    main()
