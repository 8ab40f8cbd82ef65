"""``n``'s CPU on the app's thread, headless: from the key to the frame that shows its step,
per phase and per widget drawn.

Run: ``python bench/bench_n_cpu.py [--apps 3] [--keys 40] [--terminal local]`` (from a
checkout: the one on ``PYTHONPATH`` is timed, else this file's). Each app is built as
``dgym-tui repo --terminal T --entrypoint 'python loop.py'`` builds it (bench_n_key's loop
of three lines), at 120x36 in Textual's headless driver; ``b loop.py:4`` and ``c`` are
typed, then ``n`` is posted as the driver posts a key, ``--keys`` times, each after the
last one's answer was drawn and the app was idle.

For each key, ``time.thread_time()`` of the app's thread (the only thread the headless
app and this script run on) at: the key posted, the screen's action (``act``), the
answer's ``TurnRecorded`` handling, the call's end (``_call_finished``) and the first
frame after it (``Screen._compositor_refresh``: the update made and handed to the
driver); inside the frame, each widget's ``render_lines`` (outermost call per widget);
inside the answer's handling, the calls listed in :data:`INSIDE`. Prints the medians over
every key of every app (ms of CPU), and the load.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_n_key import LOOP  # noqa: E402

#: (module, class, method) timed inside the answer's handling, by "Class.method"
INSIDE = (
    ("dgym_tui.tui.widgets.console", "PdbConsole", "write"),
    ("dgym_tui.tui.widgets.console", "PdbConsole", "write_with_next"),
    ("dgym_tui.tui.widgets.console_log", "ConsoleLog", "add_all"),
    ("dgym_tui.tui.episode_screen", "EpisodeScreen", "show_debug"),
    ("dgym_tui.tui.episode_screen", "EpisodeScreen", "refresh_marks"),
    ("dgym_tui.tui.episode_screen", "EpisodeScreen", "write_turn"),
    ("dgym_tui.tui.live.screen", "LiveScreen", "_update_status"),
    ("dgym_tui.tui.widgets.stack", "StackPane", "show_inspection"),
    ("dgym_tui.tui.widgets.variables", "VariablesPane", "show_inspection"),
    ("dgym_tui.tui.widgets.debug_panel", "DebugPanel", "show"),
    ("dgym_tui.tui.widgets.transcript", "TranscriptPane", "add_turn"),
)


class Clock:
    """The marks of the key being timed (``None``: no key in flight)."""

    def __init__(self) -> None:
        self.key: dict[str, float] | None = None
        self.spent: dict[str, float] = defaultdict(float)  # per "Class.method" / widget
        self.depth: dict[str, int] = defaultdict(int)
        self.done = asyncio.Event()
        self.app: Any = None
        self.profile: Any = None  # a cProfile.Profile enabled from each key to its frame

    def mark(self, name: str) -> None:
        if self.key is not None:
            self.key.setdefault(name, time.thread_time())

    def wrap(self, cls: type, attr: str, label: str, marks: tuple[str, str] | None = None,
             ) -> None:
        original = getattr(cls, attr)
        if getattr(original, "_bench_n_cpu", False):
            return
        clock = self

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if clock.key is None:
                return original(*args, **kwargs)
            if marks:
                clock.mark(marks[0])
            clock.depth[label] += 1
            start = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                clock.depth[label] -= 1
                if not clock.depth[label]:
                    clock.spent[label] += time.thread_time() - start
                if marks:
                    clock.key[marks[1]] = time.thread_time()

        wrapper._bench_n_cpu = True  # type: ignore[attr-defined]
        setattr(cls, attr, wrapper)


def install(clock: Clock) -> None:
    """Wrap the phases, :data:`INSIDE` and the frame (see the module docstring)."""
    import importlib

    from textual.screen import Screen
    from textual.widget import Widget

    from dgym_tui.tui.live.screen import LiveScreen

    clock.wrap(LiveScreen, "act", "act", ("act>", "act<"))
    on_message = LiveScreen._on_message

    @functools.wraps(on_message)
    async def timed_on_message(self: Any, message: Any) -> None:
        if clock.key is None or type(message).__name__ != "TurnRecorded":
            return await on_message(self, message)
        clock.mark("turn>")
        try:
            return await on_message(self, message)
        finally:
            clock.key["turn<"] = time.thread_time()

    LiveScreen._on_message = timed_on_message  # type: ignore[method-assign]
    clock.wrap(LiveScreen, "_call_finished", "done", ("done>", "done<"))
    for module, name, attr in INSIDE:
        cls = getattr(importlib.import_module(module), name, None)
        if cls is not None and hasattr(cls, attr):
            clock.wrap(cls, attr, f"{name}.{attr}")
    refresh = Screen._compositor_refresh

    @functools.wraps(refresh)
    def timed_refresh(self: Screen) -> None:
        key = clock.key
        if key is None or "done<" not in key or "frame<" in key or clock.app.busy:
            refresh(self)
            return
        key["frame>"] = time.thread_time()
        drawn.clear()
        refresh(self)
        key["frame<"] = time.thread_time()
        if clock.profile is not None:
            clock.profile.disable()
        for widget, spent in drawn.items():
            clock.spent[f"draw {widget}"] += spent
        clock.done.set()

    Screen._compositor_refresh = timed_refresh  # type: ignore[method-assign]
    drawn: dict[str, float] = defaultdict(float)
    depth: dict[int, int] = defaultdict(int)

    def time_draw(widget: Widget, draw: Any, crop: Any) -> Any:
        depth[id(widget)] += 1
        start = time.thread_time()
        try:
            return draw(widget, crop)
        finally:
            depth[id(widget)] -= 1
            if not depth[id(widget)]:
                drawn[f"{type(widget).__name__}#{widget.id or ''}"] += time.thread_time() - start

    clock.time_draw = time_draw  # type: ignore[attr-defined]
    wrap_draw(clock, Widget)


def wrap_draw(clock: Clock, cls: type) -> None:
    """Time ``cls``'s own ``render_lines`` (the outermost call per widget)."""
    own = cls.__dict__["render_lines"]
    if getattr(own, "_bench_n_cpu", False):
        return
    time_draw = clock.time_draw  # type: ignore[attr-defined]

    def wrapper(self: Any, crop: Any) -> Any:
        return time_draw(self, own, crop)

    wrapper._bench_n_cpu = True  # type: ignore[attr-defined]
    cls.render_lines = wrapper  # type: ignore[attr-defined]


def wrap_overrides(clock: Clock, root: Any) -> None:
    """Time the ``render_lines`` of each widget class under ``root`` that overrides it."""
    from textual.widget import Widget

    for widget in root.walk_children(with_self=True):
        for cls in type(widget).__mro__:
            if cls is Widget:
                break
            if "render_lines" in cls.__dict__:
                wrap_draw(clock, cls)


async def one_app(work: Path, terminal: str, keys: int, clock: Clock) -> list[dict[str, float]]:
    """Build and drive one app; each key's marks (phases' CPU seconds) and spent times."""
    from textual import events

    from dgym_tui.cli.tui import build_app, build_parser

    repo = work / "repo"
    repo.mkdir(parents=True)
    (repo / "loop.py").write_text(LOOP)
    args = build_parser().parse_args([str(repo), "--terminal", terminal, "--entrypoint",
                                      "python loop.py", "--trajectory",
                                      str(work / "traj.jsonl"), "--no-apply-prompt"])
    app = build_app(args)
    clock.app, clock.done = app, asyncio.Event()  # an event of this app's loop
    out = []
    async with app.run_test(size=(120, 36)) as pilot:
        async def settle(step: int) -> None:
            for _ in range(600):
                if app.started and not app.busy and app.screen.status.status.step >= step:
                    break
                await pilot.pause(0.02)
            await pilot.pause(0.1)

        await settle(0)
        await pilot.press(":")
        await pilot.press(*"b loop.py:4", "enter")
        await settle(1)
        await pilot.press("escape")
        await pilot.press("c")
        await settle(2)
        wrap_overrides(clock, app.screen)
        for number in range(keys + 2):
            clock.key, clock.spent = {}, defaultdict(float)
            clock.done.clear()
            clock.key["key"] = time.thread_time()
            if clock.profile is not None and number >= 2:
                clock.profile.enable()
            app.post_message(events.Key("n", "n"))
            await asyncio.wait_for(clock.done.wait(), 30)
            if app.screen.status.status.step != 3 + number:
                raise SystemExit(f"step {app.screen.status.status.step}, not {3 + number}")
            key, spent = clock.key, clock.spent
            clock.key = None
            await pilot.pause(0.15)
            if number >= 2:  # the first two warm the caches
                out.append({**{f"@{k}": v for k, v in key.items()}, **spent})
    app.close_session()
    return out


PHASES = (("key to action", "@key", "@act>"), ("action", "@act>", "@act<"),
          ("action to answer", "@act<", "@turn>"), ("answer (TurnRecorded)", "@turn>", "@turn<"),
          ("answer to call's end", "@turn<", "@done>"), ("call's end", "@done>", "@done<"),
          ("to the frame", "@done<", "@frame>"), ("frame", "@frame>", "@frame<"),
          ("total, key to frame", "@key", "@frame<"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=3)
    parser.add_argument("--keys", type=int, default=40)
    parser.add_argument("--terminal", default="local")
    parser.add_argument("--profile", metavar="FILE", help="write cProfile's stats of the "
                        "app's thread from each key to its frame (the times above then "
                        "include the profiler's)")
    args = parser.parse_args()
    import dgym_tui

    print(f"bench_n_cpu: {Path(dgym_tui.__file__).parent.parent}, load "
          f"{os.getloadavg()[0]:.2f} at the start", flush=True)
    clock = Clock()
    if args.profile:
        import cProfile

        clock.profile = cProfile.Profile()
    install(clock)
    keys: list[dict[str, float]] = []
    per_app = []
    with tempfile.TemporaryDirectory(prefix="bench-n-cpu-") as tmp:
        for number in range(args.apps):
            got = asyncio.run(one_app(Path(tmp) / str(number), args.terminal, args.keys, clock))
            keys.extend(got)
            per_app.append(statistics.median(k["@frame<"] - k["@key"] for k in got) * 1000)
    print(f"load {os.getloadavg()[0]:.2f} at the end; {args.apps} apps x {args.keys} keys; "
          "per app, key to frame: " + " / ".join(f"{v:.2f}" for v in per_app) + " ms")
    for label, start, end in PHASES:
        print(f"  {label:28s} {statistics.median(k[end] - k[start] for k in keys) * 1000:6.2f} ms")
    names = sorted({n for k in keys for n in k if not n.startswith("@")},
                   key=lambda n: (n.startswith("draw"), n))
    for name in names:
        values = [k.get(name, 0.0) * 1000 for k in keys]
        print(f"  {name:40s} {statistics.median(values):6.3f} ms "
              f"(in {sum(1 for k in keys if name in k)} of {len(keys)})")
    if clock.profile is not None:
        clock.profile.dump_stats(args.profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
