"""``dgym mcp PATH --approve --http PORT``: a person decides an MCP client's calls in the app.

The client's call shows in the proposal panel like an LLM agent's; the person approves
one (the client reads its observation) and rejects the next with a note (the client
reads the note as the call's result, and nothing ran); both are steps of the trajectory.
Taking over answers the waiting call, and the calls after it, without running them; taken
over while the app waits for a call, the app is the person's again at once.
"""

from __future__ import annotations

import asyncio
import json

import mcp_types as types
from mcp import Client
from tui_helpers import ENTRYPOINT, SIZE

from dgym_tui.cli.main import build_parser
from dgym_tui.cli.mcp import approve_app, open_server
from dgym_tui.episode.session import TAKEN_OVER

CLIENT = types.Implementation(name="test-agent", version="1.0")


async def _until(pilot, condition, what: str, seconds: float = 120.0) -> None:
    """Let the app run until ``condition()`` holds (real pdb and pytest: no fixed delay)."""
    for _ in range(int(seconds / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_person_approves_one_call_and_rejects_one_with_a_note(calc_repo, tmp_path):
    out = tmp_path / "mcp.jsonl"
    args = build_parser().parse_args(
        ["mcp", str(calc_repo), "--approve", "--http", "127.0.0.1:0", "--terminal", "local",
         "--entrypoint", ENTRYPOINT, "--trajectory", str(out)])
    episode = open_server(args)
    app = approve_app(episode)
    episode.http.start()
    results: list[types.CallToolResult] = []
    handed_back = asyncio.Event()

    async def agent() -> None:
        async with Client(episode.http.url, client_info=CLIENT) as client:
            results.append(await client.call_tool("pdb", {"command": "b calc.py:4"}))
            results.append(await client.call_tool("eval", {}))
            results.append(await client.call_tool("view", {"path": "calc.py"}))
            results.append(await client.call_tool("eval", {}))  # after the take-over
            await handed_back.wait()
            results.append(await client.call_tool("listdir", {}))

    try:
        async with app.run_test(size=SIZE) as pilot:
            calls = asyncio.create_task(agent())
            panel = app.query_one("#approve")
            await _until(pilot, lambda: panel.has_class("-shown") and panel.proposal is not None,
                         "the client's first call in the proposal panel")
            assert panel.proposal.action.name == "pdb"
            assert panel.proposal.action.arguments == {"command": "b calc.py:4"}
            assert str(panel.border_title) == "test-agent 1.0 proposes step 1"
            assert not results  # the call waits for the person
            await pilot.press("a")
            await _until(pilot, lambda: len(results) == 1, "the approved call's result")
            assert "Breakpoint 1 at calc.py:4" in results[0].content[0].text
            assert not results[0].is_error

            await _until(pilot, lambda: panel.proposal is not None
                         and panel.proposal.action.name == "eval", "the second call")
            await pilot.press("R")
            await pilot.pause()
            app.screen.query_one("Input").value = "read the loop with pdb first"
            await pilot.press("enter")
            await _until(pilot, lambda: len(results) == 2, "the rejected call's result")
            assert results[1].is_error
            assert "read the loop with pdb first" in results[1].content[0].text
            assert "nothing was run" in results[1].content[0].text

            await _until(pilot, lambda: panel.proposal is not None
                         and panel.proposal.action.name == "view", "the third call")
            await pilot.press("t")  # take over: the waiting call and the next one run nothing
            await _until(pilot, lambda: len(results) == 4, "the calls after the take-over")
            assert all(r.is_error and "took over" in r.content[0].text for r in results[2:])

            # handed back (m), the app waits for the next call; taken over again meanwhile,
            # the app is the person's at once (not busy until a call comes), and m again
            # shows the call that came
            app.source_view.focus()  # (t leaves it there; kept for clarity)
            await pilot.press("m")
            await _until(pilot, lambda: app.busy, "the app waiting for a call")
            await pilot.press("t")
            await _until(pilot, lambda: not app.busy, "the app back to the person")
            app.source_view.focus()
            await pilot.press("m")
            await _until(pilot, lambda: app.busy, "the app waiting again")
            handed_back.set()
            await _until(pilot, lambda: panel.proposal is not None
                         and panel.proposal.action.name == "listdir", "the fifth call")
            await pilot.press("a")
            await calls
            assert not results[4].is_error and "calc.py" in results[4].content[0].text
            await pilot.press("q")
            await pilot.pause()
    finally:
        episode.policy.close()
        app.close_session("quit")
        episode.http.stop()
    steps = [json.loads(line) for line in out.read_text().splitlines()]
    steps = [s for s in steps if s["type"] == "step"]
    assert [(s["decision"], s["note"]) for s in steps] == [
        ("approved", ""), ("rejected", "read the loop with pdb first"),
        ("rejected", TAKEN_OVER),  # t: the waiting view call, recorded as taken over
        ("approved", "")]
    assert steps[0]["raw"]["external"]["client"] == "test-agent 1.0"
