"""``mcp_servers:``: the tools of a real MCP server (written here with the SDK) join the
toolbox of ``dgym run``.

The server runs over stdio (dgym starts it) or streamable HTTP on loopback (the test
starts it); the LLM stub's agent sees its allowed tools in the tool list, calls one, and
reads the result as the observation of a recorded step; the tool it was not allowed is
neither offered nor callable.
"""

from __future__ import annotations

import json
import subprocess
import sys

import psutil
import pytest
from process_helpers import free_port, wait_listening
from scripted import FIX, TOOLS, stub_agent_files

from dgym_tui.cli.main import main
from dgym_tui.core.tools.mcp_client import parse_servers
from dgym_tui.episode.trajectory import read_trajectory

SERVER = '''
import os
import sys
from mcp.server import MCPServer

server = MCPServer("notes")


@server.tool()
def lookup(key: str) -> str:
    """Look up a project note by its key."""
    return f"note {key}: the sum must add, not subtract {os.environ.get('NOTES_SUFFIX', '(42)')}"


@server.tool()
def secret() -> str:
    """Not on the allow-list."""
    return "should never be called"


if len(sys.argv) > 1:
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
else:
    server.run()
'''


@pytest.fixture(params=["stdio", "http"])
def notes_server(request, tmp_path, monkeypatch):
    """``mcp_servers`` YAML of the notes server over stdio or HTTP (the HTTP one runs
    for the test)."""
    script = tmp_path / "notes_server.py"
    script.write_text(SERVER)
    monkeypatch.setenv("DGYM_NOTES_SUFFIX", "(42)")
    if request.param == "stdio":
        # the suffix comes from dgym's environment through a ${NAME} reference
        yield (f"[{{name: notes, command: [{sys.executable}, {script}], tools: [lookup], "
               "timeout: 60, env: {NOTES_SUFFIX: '${DGYM_NOTES_SUFFIX}'}}]")
        return
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(script), str(port)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_listening(proc, port)
        yield (f"[{{name: notes, url: 'http://127.0.0.1:{port}/mcp', tools: [lookup], "
               "timeout: 60}]")
    finally:
        proc.terminate()
        proc.wait(30)


def test_dgym_run_agent_calls_a_tool_of_an_mcp_server(tmp_path, tiny, llm_server, notes_server,
                                                      capsys):
    llm_server.script([
        {"tool_calls": [{"name": "notes_lookup", "arguments": {"key": "add"}}]},
        {"tool_calls": [{"name": "notes_secret", "arguments": {}}]},
        {"tool_calls": [{"name": "rewrite", "arguments": FIX.arguments}]},
        {"tool_calls": [{"name": "submit", "arguments": {}}]},
    ])
    agent, llm_yaml = stub_agent_files(tmp_path, llm_server)
    config = tmp_path / "run.yaml"
    config.write_text(f"benchmark: {{name: tiny, root: {tiny}}}\ntasks: [add]\npolicy: agent\n"
                      f"agent: {agent}\nllm: stub\nllm_config: {llm_yaml}\nmax_steps: 6\n"
                      f"mcp_servers: {notes_server}\n")
    out = tmp_path / "out"
    assert main(["run", str(config), "--output", str(out), "--no-progress"]) == 0
    status = json.loads((out / "add" / "status.json").read_text())
    assert status["state"] == "done" and status["resolved"] is True, status
    if "command" in notes_server:  # the stdio server dgym started ended with the episode
        assert not [p for p in psutil.process_iter(["cmdline"])
                    if "notes_server.py" in " ".join(p.info["cmdline"] or [])]

    offered = [t["function"]["name"] for t in llm_server.requests[0]["tools"]]
    assert offered == [*TOOLS, "notes_lookup"]  # the allow-list keeps `secret` out
    lookup = next(t["function"] for t in llm_server.requests[0]["tools"]
                  if t["function"]["name"] == "notes_lookup")
    assert "Look up a project note" in lookup["description"]
    assert lookup["parameters"]["properties"]["key"]["type"] == "string"

    traj = read_trajectory(out / "add" / "trajectory.jsonl")
    assert "notes_lookup" in [t["function"]["name"] for t in traj.header["tools"]]
    recorded = traj.header["environment"]["mcp_servers"][0]
    assert recorded["name"] == "notes"
    if "command" in notes_server:  # the header keeps the reference, not the value
        assert recorded["env"] == {"NOTES_SUFFIX": "${DGYM_NOTES_SUFFIX}"}
    first, second = traj.steps[0], traj.steps[1]
    assert first["action"]["name"] == "notes_lookup"
    assert "note add: the sum must add, not subtract (42)" in first["observation"]
    assert first["result"]["data"] == {"mcp_server": "notes"}
    # the result went back to the model as the tool message of its call
    assert "the sum must add" in json.dumps(llm_server.requests[1]["messages"])
    # the agent refuses a call of a tool it was not offered: nothing reaches the server
    assert second["decision"] == "rejected" and second["action"] is None
    assert "notes_secret" in second["error"]
    # replay connects to the server again (the header keeps it): same observations
    assert main(["replay", str(out / "add" / "trajectory.jsonl")]) == 0
    assert "no divergence" in capsys.readouterr().out


@pytest.mark.parametrize("entry, message", [
    ({"command": ["x"]}, "name must be"),
    ({"name": "a b", "command": ["x"]}, "name must be"),
    ({"name": "a"}, "needs command"),
    ({"name": "a", "transport": "http"}, "needs url"),
    ({"name": "a", "command": "x", "tools": "lookup"}, "tools must be a list"),
    ({"name": "a", "command": "x", "timeout": 0}, "timeout must be"),
    ({"name": "a", "command": "x", "prefix": "a.b"}, "prefix may hold"),
    ({"name": "a", "command": "x", "colour": 1}, "unknown key(s) colour"),
])
def test_bad_server_entries_are_one_line(entry, message):
    with pytest.raises(ValueError, match=None) as caught:
        parse_servers([entry])
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_an_unreachable_server_fails_the_start_with_one_line(tmp_path):
    from dgym_tui.core.env import RepoEnv
    from dgym_tui.core.tools.mcp_client import McpServerError

    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    said = "import sys; sys.stderr.write('notes: no config file'); sys.exit(3)"
    env = RepoEnv(tmp_path, mcp_servers=[{"name": "gone", "command": [sys.executable, "-c", said],
                                          "timeout": 20}])
    try:
        with pytest.raises(McpServerError, match="MCP server 'gone'") as caught:
            env.reset()
        # what the server said on stderr explains it (and reached no screen)
        assert "notes: no config file" in str(caught.value) and "\n" not in str(caught.value)
    finally:
        env.close()


def test_an_agent_spec_lists_mcp_servers(tmp_path):
    from dgym_tui.policies.agent import AgentSpecError, load_agent_spec
    from dgym_tui.runs.runner import agent_env_options

    spec = tmp_path / "agent.yaml"
    spec.write_text("name: a\ntools: [view, submit]\nsystem_prompt: hi\n"
                    "mcp_servers: [{name: notes, command: 'python notes.py --fast'}]\n")
    servers = load_agent_spec(spec).mcp_servers
    assert servers == [{"name": "notes", "transport": "stdio", "prefix": "notes_",
                        "timeout": 30.0, "command": ["python", "notes.py", "--fast"]}]
    assert agent_env_options("agent", str(spec))["mcp_servers"] == servers
    spec.write_text("name: a\ntools: [view]\nsystem_prompt: hi\nmcp_servers: [{name: x}]\n")
    with pytest.raises(AgentSpecError, match=r"agent.yaml: mcp_servers\[0\]: a stdio server needs"):
        load_agent_spec(spec)


def test_dgym_tui_with_an_agent_spec_that_lists_mcp_servers(tmp_path, make_repo, monkeypatch):
    """The app's episode gets the spec's servers (connected when the episode starts)."""
    from dgym_tui.cli.tui import build_app, build_parser

    llm_yaml = tmp_path / "llm.yaml"
    llm_yaml.write_text("stub:\n  model: openai/stub\n  api_base: http://127.0.0.1:9/v1\n"
                        "  api_key: x\n")
    monkeypatch.setenv("DGYM_LLM_CONFIG", str(llm_yaml))
    spec = tmp_path / "agent.yaml"
    spec.write_text("name: a\ntools: [view, submit]\nsystem_prompt: hi\n"
                    "mcp_servers: [{name: notes, command: [python, notes.py]}]\n")
    repo = make_repo({"a.py": "x = 1\n"})
    app = build_app(build_parser().parse_args(
        ["--agent", str(spec), "--llm", "stub", "--terminal", "local", "--trajectory",
         str(tmp_path / "t.jsonl"), "--no-apply-prompt", str(repo)]))
    try:
        assert [s["name"] for s in app.session.env.mcp_servers] == ["notes"]
        assert app.session.environment["mcp_servers"][0]["command"] == ["python", "notes.py"]
    finally:
        app.session.env.close()
