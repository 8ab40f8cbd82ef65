"""``dgym mcp PATH``: an MCP client (the official SDK's) debugs an episode through it.

Over stdio (the client starts the server) and over streamable HTTP on loopback (a free
port), the client lists the episode's tools, sets a breakpoint, continues, prints a
value, rewrites the bug, runs the tests and submits; every call is a recorded step of a
trajectory (the client's name with each) that ``dgym replay`` re-runs with no
divergence, and submit returns the patch while the original repository stays unchanged.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from process_helpers import free_port, wait_listening

from dgym_tui.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
CALC = ("def average(values):\n    total = 0\n    for value in values:\n        total += value\n"
        "    return total / (len(values) + 1)\n")
TESTS = "from calc import average\n\n\ndef test_average():\n    assert average([2, 4, 6]) == 4\n"
FIXED = "    return total / len(values)"
CLIENT = types.Implementation(name="test-agent", version="1.0")
TOKEN = "s3cret-token"


def _server_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


async def _debug(client: Client) -> list[types.CallToolResult]:
    """The calls of a short debugging session; returns their results."""
    listed = await client.list_tools()
    tools = {tool.name: tool for tool in listed.tools}
    assert {"pdb", "view", "listdir", "grep", "eval", "rewrite", "submit"} <= set(tools)
    assert tools["rewrite"].input_schema["properties"]["new_code"]["type"] == "string"
    assert "pdb" in tools["pdb"].description
    assert "Task:" in (client.instructions or "")
    calls = [("pdb", {"command": "b calc.py:5"}), ("pdb", {"command": "c"}),
             ("pdb", {"command": "p total"}),
             ("rewrite", {"path": "calc.py", "start": 5, "new_code": FIXED}),
             ("eval", {}), ("submit", {}), ("eval", {})]
    return [await client.call_tool(name, arguments) for name, arguments in calls]


def _check(results: list[types.CallToolResult], repo: Path, trajectory: Path) -> None:
    texts = [result.content[0].text for result in results]
    assert "Breakpoint 1 at calc.py:5" in texts[0]
    assert "calc.py(5)average()" in texts[1]
    assert texts[2].strip() == "12"
    assert "+" + FIXED in texts[3]
    assert "1 passed" in texts[4] and results[4].structured_content["resolved"] is True
    submitted = results[5].structured_content
    assert submitted["done"] and "+" + FIXED in submitted["patch"] and "+" + FIXED in texts[5]
    assert results[6].is_error and "episode is over (submitted)" in texts[6]
    assert (repo / "calc.py").read_text() == CALC  # only a person applies the patch

    records = [json.loads(line) for line in trajectory.read_text().splitlines()]
    header, steps, footer = records[0], records[1:-1], records[-1]
    assert header["config"]["front_end"] == "mcp" and header["config"]["policy"] == "mcp"
    assert [s["action"]["name"] for s in steps] == ["pdb", "pdb", "pdb", "rewrite", "eval",
                                                     "submit"]
    assert {s["raw"]["external"]["client"] for s in steps} == {"test-agent 1.0"}
    assert footer["type"] == "footer" and footer["reason"] == "submitted" and footer["resolved"]


def _replays(trajectory: Path, capsys) -> None:
    capsys.readouterr()
    assert main(["replay", str(trajectory)]) == 0
    assert "replayed 6 step(s)" in capsys.readouterr().out


@pytest.fixture
def repo(make_repo) -> Path:
    return make_repo({"calc.py": CALC, "test_calc.py": TESTS})


def test_stdio_client_debugs_and_submits(repo, tmp_path, capsys):
    trajectory = tmp_path / "mcp.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dgym_tui.cli.main", "mcp", str(repo), "--trajectory", str(trajectory)],
        env=_server_env())

    async def session() -> list[types.CallToolResult]:
        async with Client(params, client_info=CLIENT) as client:
            return await _debug(client)

    results = anyio.run(session)
    _check(results, repo, trajectory)
    _replays(trajectory, capsys)


def test_http_client_debugs_and_submits(repo, tmp_path, capsys):
    trajectory = tmp_path / "mcp.jsonl"
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "dgym_tui.cli.main", "mcp", str(repo), "--http", str(port),
         "--trajectory", str(trajectory)],
        env={**_server_env(), "DGYM_MCP_TOKEN": TOKEN}, stdin=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        wait_listening(server, port)  # the episode starts (initial eval), then the server listens

        url = f"http://127.0.0.1:{port}/mcp"
        assert _post(url, {}) == 401  # no token
        assert _post(url, {"Authorization": "Bearer wrong"}) == 401
        # the token, but a Host header that is not this machine (DNS rebinding)
        assert _post(url, {"Authorization": f"Bearer {TOKEN}", "Host": "attacker.example"}) == 421

        async def session() -> list[types.CallToolResult]:
            http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"},
                                      timeout=httpx2.Timeout(30, read=300))
            # the initialize handshake of today's clients (stdio above: the newer discovery)
            async with Client(streamable_http_client(url, http_client=http), client_info=CLIENT,
                              mode="legacy") as client:
                return await _debug(client)

        results = anyio.run(session)
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    assert server.returncode == 0, server.stderr.read()
    assert f"serving repo at http://127.0.0.1:{port}/mcp" in server.stderr.read()
    _check(results, repo, trajectory)
    _replays(trajectory, capsys)


def _post(url: str, headers: dict[str, str]) -> int:
    """The HTTP status of an initialize request sent with ``headers``."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "probe", "version": "0"}}}
    return httpx2.post(url, json=body, timeout=30, headers={
        "Accept": "application/json, text/event-stream", **headers}).status_code


def test_approve_needs_http(repo, capsys):
    assert main(["mcp", str(repo), "--approve"]) == 2
    assert "--approve needs --http" in capsys.readouterr().err


def test_a_taken_port_is_one_line(repo, tmp_path, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["mcp", str(repo), "--http", str(port), "--trajectory",
                     str(tmp_path / "t.jsonl")]) == 2
    err = capsys.readouterr().err
    assert f"dgym: error: the MCP server could not listen on 127.0.0.1:{port}" in err
    assert "serving" not in err and not (tmp_path / "t.jsonl").exists()  # no episode started
