"""Benchmarks of the Textual app (headless): first paint, a 10,000-line file, 1,000 steps.

Run: ``python bench/bench_tui.py [--rounds 5]``. Prints a table of wall times with the
design targets. Everything is measured on the real app in Textual's headless
mode (no terminal), so the terminal's own drawing is not included.

- first paint: ``dgym-tui PATH`` in a fresh interpreter, as the command runs it
  (import, argument parsing, theme check, bwrap probe, session opened, app
  built and mounted), up to its first frame: the first screen update Textual
  hands to its driver (``App._display``), turned into the escape sequences a
  terminal would get (headless Textual skips that step; the bench does it). The
  frame must show the whole screen (the bench checks its text). The episode's
  reset starts in its worker when the screen is mounted (before that frame), as in
  real use, and is not waited for.
  Its floor is a bare Textual app (header, text, footer) imported, built and
  stopped at its first frame the same way. The two run in turn, ``--rounds``
  times, with bytecode as an installed package has it; medians and their ratio
  are printed (targets < 1 s and <= 2x, issues 10, 13);
- 10,000-line file: load into the source view and paint, then the median
  time to scroll one page and repaint;
- 1,000-step trajectory: read + validate the file, build the replay model,
  mount the app at step 0 and jump to the last step;
- a pdb stop, as a key runs it (``app.act``, 30 of each): ``n`` (the next line
  of a loop, same file) and ``u`` / ``d`` in turn (the frame moves to another
  file): the worker's part (pdb's answer, then the structured inspection: stack,
  locals, breakpoints), the UI's part (the message in, every pane updated, up
  to the last frame it causes: variables, stack, breakpoints, source, gutter,
  status, spinner off) and the sum the person waits for (target < 50 ms, issue 10).
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
TESTS = "from calc import average\n\n\ndef test_one():\n    assert average([4] * 40) == 4\n"


def _repo(tmp: Path) -> Path:
    repo = tmp / "calc"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test_calc.py").write_text(TESTS)
    return repo


#: Shared by both first-paint scripts: the clock starts before any import;
#: ``first_frames(app)`` records (wall, main thread CPU) seconds at the app's first
#: frame (``"first"``) and at its first frame with the footer's keys (``"full"``:
#: Textual's footer builds them only after the screen published its bindings).
FIRST_FRAME = """
import asyncio, io, sys, time
c0, t0 = time.thread_time(), time.perf_counter()

def first_frames(app):
    frames = {}
    display = app._display

    def hook(screen, update):
        display(screen, update)
        if update is None or app._batch_count or "full" in frames:
            return
        update.render_segments(app.console)  # what a terminal driver would write
        now = (time.perf_counter() - t0, time.thread_time() - c0)
        frames.setdefault("first", now)
        frames.setdefault("update", update)
        # dgym-tui's footer draws its keys in one KeyStrip; the bare app's are FooterKeys
        keys = screen.query("KeyStrip") or screen.query("FooterKey")
        if keys and keys.first().region:  # laid out: drawn in this frame
            frames["full"] = now

    app._display = hook
    return frames

def frame_text(update):
    from rich.console import Console
    console = Console(file=io.StringIO(), width=160, record=True)
    console.print(update)
    return console.export_text()

async def until(frames):
    while "full" not in frames:
        await asyncio.sleep(0.005)
"""

#: ``dgym-tui PATH`` up to its first frames, in a fresh interpreter: the garbage
#: collector paused as the command does, the command line's own modules, the argument
#: parsing and session opening (``build_app``: theme check, bwrap probe, task,
#: environment, trajectory file), the app built and mounted. The episode's reset starts
#: in its worker when the screen is mounted (before the first frame), as in real use, and
#: is not waited for. Prints
#: seconds: import, + build, first frame, first frame with the footer's keys (wall),
#: and that one's main thread CPU.
OURS_APP = FIRST_FRAME + """
from dgym_tui.tui import pause_gc
pause_gc()  # as the command's entry point does first (dgym_tui.cli.main.tui_main)
from dgym_tui.cli.tui import build_app, build_parser
t1 = time.perf_counter()

async def main():
    app = build_app(build_parser().parse_args([sys.argv[1], "--trajectory", sys.argv[2]]))
    t2 = time.perf_counter()
    frames = first_frames(app)
    async with app.run_test(size=(160, 48)):
        await until(frames)
        await app.workers.wait_for_complete()
    app.close_session()
    text = frame_text(frames["update"])
    for shown in ("Debug", "Transcript", "Diff", "pdb is not stopped", "breakpoints", "step 0/50"):
        assert shown in text, f"the first frame lacks {shown!r}:\\n{text}"
    print(t1 - t0, t2 - t0, frames["first"][0], *frames["full"])

asyncio.run(main())
"""

#: The floor: a bare Textual app (header, text, footer) imported, built and stopped at
#: its first frames the same way. Prints seconds: first frame, first frame with the
#: footer's keys (wall), and that one's main thread CPU.
BARE_APP = FIRST_FRAME + """
from textual.app import App
from textual.widgets import Footer, Header, Static

class Bare(App):
    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()

async def main():
    app = Bare()
    frames = first_frames(app)
    async with app.run_test(size=(160, 48)):
        await until(frames)
    assert "hello" in frame_text(frames["update"])
    print(frames["first"][0], *frames["full"])

asyncio.run(main())
"""


def _fresh(code: str, *args: str, fps: int | None = None) -> list[float]:
    """Run ``code`` in a fresh interpreter; return the numbers it prints (seconds).

    Bytecode is written and read as in an installed package (pip compiles it);
    with ``PYTHONDONTWRITEBYTECODE`` set, every run would compile our modules again.
    ``TEXTUAL_FPS`` is taken out of the environment (the app sets its own frame rate,
    a bare Textual app runs at Textual's default), or set to ``fps``.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONDONTWRITEBYTECODE", "TEXTUAL_FPS")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if fps is not None:
        env["TEXTUAL_FPS"] = str(fps)
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         env=env)
    if out.returncode:
        raise RuntimeError(f"a first-paint run failed:\n{out.stderr[-3000:]}")
    return [float(x) for x in out.stdout.split()]


def bench_first_paint(repo: Path, tmp: Path, rounds: int) -> dict[str, list[float]]:
    """``dgym-tui PATH`` and the bare app, interleaved A B A B (one unmeasured warm-up
    each, which also writes the bytecode). Returns lists of seconds from the start:
    ``import``, ``build`` (the app built), ``first`` (its first frame), ``full`` (its
    first frame with the footer's keys), ``cpu`` (main thread CPU time to ``full``,
    which machine load disturbs less than wall time), and the bare app's ``bare first``,
    ``bare full``, ``bare cpu`` at Textual's default frame rate (the floor), and
    ``bare full at ours`` / ``bare cpu at ours`` at the app's frame rate
    (:data:`dgym_tui.tui.FRAMES_PER_SECOND`)."""
    from dgym_tui.tui import FRAMES_PER_SECOND

    _fresh(OURS_APP, str(repo), str(tmp / "paint-warm.jsonl"))
    _fresh(BARE_APP)
    names = ("import", "build", "first", "full", "cpu", "bare first", "bare full", "bare cpu")
    times: dict[str, list[float]] = {k: [] for k in names}
    times.update({"bare full at ours": [], "bare cpu at ours": []})
    for i in range(rounds):
        for key, value in zip(names[5:], _fresh(BARE_APP), strict=True):
            times[key].append(value)
        ours = _fresh(OURS_APP, str(repo), str(tmp / f"paint-{i}.jsonl"))
        for key, value in zip(names[:5], ours, strict=True):
            times[key].append(value)
        _, full, cpu = _fresh(BARE_APP, fps=FRAMES_PER_SECOND)
        times["bare full at ours"].append(full)
        times["bare cpu at ours"].append(cpu)
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
    from dgym_tui.episode.session import Session

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
    from dgym_tui.episode.trajectory import read_trajectory
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
        assert app.episode_screen.step_index == 1000  # the replay screen's
    app.close_session()
    return loaded, elapsed


class _StopClock:
    """Times one pdb command as a key runs it: ``app.act`` on the UI thread; the worker's
    TurnRecorded message (posted once pdb answered and the inspection was read); the
    first frame the app hands to its driver (``App._display``) after the app handled it
    (every pane updated, spinner off); and the last frame that changed what the screen
    shows (scroll bars and sizes settle a frame or two later; frames that redraw the
    same cells do not count). A model of the screen's cells tells changed frames apart.
    """

    def __init__(self, app) -> None:
        self.app = app
        self.posted: float | None = None
        self.painted: float | None = None
        self.changed: float | None = None
        self.cells: dict[tuple[int, int], tuple] = {}  # (row, cut) -> the strip's segments
        bridge = app.screen._bridge  # the live screen's (the app holds none)
        display, post = app._display, bridge.post

        def on_display(screen, update) -> None:
            display(screen, update)
            if update is None or app._batch_count:
                return
            update.render_segments(app.console)  # what a terminal driver would write
            now, changed = time.perf_counter(), self._apply(update)
            if self.posted is not None:
                if self.painted is None and not app.busy:
                    self.painted = now
                if changed:
                    self.changed = now

        def on_post(message) -> None:
            if type(message).__name__ == "TurnRecorded":
                self.posted = time.perf_counter()
            post(message)

        app._display, bridge.post = on_display, on_post

    def _apply(self, update) -> bool:
        """Put ``update``'s strips into the screen model; True if a cell changed."""
        if hasattr(update, "chops"):  # a partial update: strips per row and cut
            strips = [((y, cut), strip) for y, x1, x2 in update.spans
                      for cut, strip in update.chops[y].items()
                      if strip is not None and x1 <= cut <= x2]
        else:  # the whole screen, a strip per row
            self.cells.clear()
            strips = [((y, 0), strip) for y, strip in enumerate(update.strips)]
        changed = False
        for key, strip in strips:
            segments = tuple(strip)
            if self.cells.get(key) != segments:
                self.cells[key], changed = segments, True
        return changed

    async def stop(self, command: str) -> tuple[float, float, float]:
        """Run pdb ``command``; return seconds from the key to the worker's message, and
        from there to the first frame after the app handled it, and to the last frame
        that changed the screen."""
        from dgym_tui.tui.actions import pdb_call

        self.posted = self.painted = self.changed = None
        start = time.perf_counter()
        assert self.app.screen.act(pdb_call(command))  # the live screen acts
        while self.app.busy:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.15)  # every frame the stop causes has been drawn by now
        assert self.posted and self.painted and self.changed, command
        return (self.posted - start, self.painted - self.posted,
                max(self.changed, self.painted) - self.posted)


async def bench_stop(repo: Path, tmp: Path) -> dict[str, tuple[float, ...]]:
    """``n`` (a loop's next line) 30 times, then ``u`` / ``d`` in turn (another file) 30
    times, after two unmeasured ``n``; see :class:`_StopClock`. Returns per kind: medians
    in seconds (worker, panes painted, screen settled, key to panes painted), the 90th
    percentile of panes painted (seconds) and the share of stops whose panes took 50 ms
    or more."""
    from dgym_tui.core.env import RepoEnv
    from dgym_tui.episode.session import Session
    from dgym_tui.tui.app import DgymApp

    session = Session(RepoEnv(repo, terminal="local"), trajectory_path=tmp / "stop.jsonl",
                      max_steps=200)
    app = DgymApp(session=session)
    out = {}
    async with app.run_test(size=(160, 48)) as pilot:
        while not app.started or app.busy:
            await pilot.pause(0.05)
        clock = _StopClock(app)
        for command in ("b calc.py:4", "c", "n", "n"):
            await clock.stop(command)
        for name, commands in (("n", ["n"] * 30), ("u / d", ["u", "d"] * 15)):
            times = [await clock.stop(command) for command in commands]
            assert app.screen.debug_panel.query_one("#variables").shown, "no variables shown"
            out[name] = tuple(statistics.median(t[i] for t in times) for i in range(3)) + (
                statistics.median(t[0] + t[1] for t in times),
                statistics.quantiles([t[1] for t in times], n=10)[-1],
                sum(t[1] >= 0.05 for t in times) / len(times))
    app.close_session()
    return out


async def run(rounds: int) -> list[tuple[str, float, str]]:
    # first: the app's package sets TEXTUAL_FPS, which Textual reads on its first import
    from dgym_tui.tui import FRAMES_PER_SECOND  # noqa: I001
    from textual.constants import MAX_FPS

    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        repo = _repo(tmp)
        rows = [("load average (1 min) at start", os.getloadavg()[0], f"{os.cpu_count()} cores")]
        rows.append(("frames per second at most (TEXTUAL_FPS): first paint / stops",
                     FRAMES_PER_SECOND, f"{MAX_FPS} (Textual's default: 60)"))
        paint = {k: statistics.median(v) for k, v in bench_first_paint(repo, tmp, rounds).items()}
        rows.append((f"dgym-tui PATH: imports done (median of {rounds})", paint["import"], "-"))
        rows.append(("dgym-tui PATH: + parse, open session, build app", paint["build"], "-"))
        rows.append(("dgym-tui PATH: + mount, first frame", paint["first"], "-"))
        rows.append(("dgym-tui PATH: first frame with the footer's keys", paint["full"], "< 1 s"))
        rows.append(("bare Textual app: first frame", paint["bare first"], "-"))
        rows.append(("bare Textual app: first frame with the footer's keys", paint["bare full"],
                     "floor"))
        rows.append(("ratio first frames / bare app (medians)", paint["first"] / paint["bare first"],
                     "-"))
        rows.append(("ratio frames with keys / bare app (medians)",
                     paint["full"] / paint["bare full"], "<= 2x"))
        rows.append(("main thread CPU to the keys' frame: dgym-tui PATH", paint["cpu"], "-"))
        rows.append(("main thread CPU to the keys' frame: bare app", paint["bare cpu"], "floor"))
        rows.append(("ratio of the CPU times (medians)", paint["cpu"] / paint["bare cpu"], "-"))
        rows.append((f"bare Textual app at the app's {FRAMES_PER_SECOND} fps: frame with keys",
                     paint["bare full at ours"], "-"))
        rows.append(("ratio frames with keys / bare app at the app's fps (medians)",
                     paint["full"] / paint["bare full at ours"], "-"))
        rows.append(("ratio CPU times / bare app at the app's fps (medians)",
                     paint["cpu"] / paint["bare cpu at ours"], "-"))
        opened, page = await bench_big_file()
        rows.append(("open a 10,000-line file (load + paint)", opened, "smooth"))
        rows.append(("scroll one page in it (median of 60)", page, "smooth"))
        traj = _make_trajectory(repo, tmp, 1000)
        loaded, total = await bench_trajectory(traj)
        rows.append(("1,000-step trajectory: read + validate + model", loaded, "-"))
        rows.append(("1,000-step trajectory: + app painted at last step", total, "< 1 s"))
        for name, (worker, panes, settled, total, p90, slow) in (
                await bench_stop(repo, tmp)).items():
            rows.append((f"pdb stop `{name}`: key -> pdb answer + inspection (worker, "
                         "median of 30)", worker, "-"))
            rows.append((f"pdb stop `{name}`: answer in -> every pane painted (UI)", panes,
                         "< 0.05 s"))
            rows.append((f"pdb stop `{name}`: the same, 90th percentile", p90, "< 0.05 s"))
            rows.append((f"pdb stop `{name}`: share of stops at 50 ms or more", slow, "-"))
            rows.append((f"pdb stop `{name}`: answer in -> last frame changing the screen",
                         settled, "-"))
            rows.append((f"pdb stop `{name}`: key -> every pane painted", total, "-"))
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
