"""Helpers for the app's Pilot tests: the small calc repository, waiting for the
app to settle, typing in the console, reading a trajectory, a stub-backed agent.

(The ``calc_repo`` fixture in conftest.py writes the repository below.)
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path

ENTRYPOINT = "python -m pytest -q -p no:cacheprovider"
SIZE = (160, 48)

CALC = """\
def average(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs[1:])
"""
# test_single fails first, inside calc.py (ZeroDivisionError): the start location.
TESTS = """\
from calc import average


def test_single():
    assert average([4]) == 4


def test_three():
    assert average([1, 2, 3]) == 2
"""
FIX = "    return total / len(xs)"


async def settle(app, pilot, rounds: int = 400) -> None:
    """Wait until no session call runs and every posted message was handled."""
    for _ in range(rounds):
        await app.workers.wait_for_complete()
        await session_idle(app)
        await pilot.pause()
        if not app.busy and not app.workers:
            await pilot.pause()
            return
    raise AssertionError("the app stayed busy")


async def session_idle(app, limit: float = 600.0) -> None:
    """Wait until the live session's thread has no call queued or running (its calls are
    not Textual workers; ``limit`` seconds at most)."""
    worker = getattr(app, "worker", None)
    for _ in range(int(limit / 0.005)):
        if worker is None or worker.idle:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("a session call did not return")


async def stop_at(app, pilot, where: str) -> None:
    """Let the app settle, then ``b WHERE`` and ``c`` through it (real pdb): pdb stops
    there; the source view has the focus."""
    from dgym_tui.tui.actions import pdb_call

    await settle(app, pilot)
    for command in (f"b {where}", "c"):
        app.episode_screen.act(pdb_call(command))
        await settle(app, pilot)
    app.source_view.focus()
    await pilot.pause()


def console_text(app) -> str:
    """The console's scroll-back as plain text, whitespace (and wrapping) collapsed."""
    return " ".join(" ".join(strip.text for strip in app.pdb_console.log_widget.lines).split())


def screen_text(app) -> str:
    """The characters on the app's screen as its last frame drew them."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r"<[^>]+>", "", svg)).replace("\xa0", " ")


async def type_console(app, pilot, line: str) -> None:
    """Type ``line`` into the console, press enter and wait for the step."""
    console_input = app.query_one("#console-input")
    console_input.focus()
    console_input.value = line
    await pilot.press("enter")
    await settle(app, pilot)


def records(path: Path) -> list[dict]:
    """The JSON lines of a trajectory file."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stub_agent(server):
    """The debug agent talking to the LLM stub ``server`` (native tool calls, no retries)."""
    from dgym_tui.llm.client import LLMConfig
    from dgym_tui.policies.agent import LLMAgent

    config = LLMConfig(name="stub", model="openai/stub", api_base=server.url, api_key="x",
                       retries=0, input_cost_per_token=1e-6, output_cost_per_token=2e-6)
    return LLMAgent("debug_agent", llm=config, tool_calling="native")
