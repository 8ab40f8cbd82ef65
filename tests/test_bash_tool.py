"""The bash tool: one persistent shell per episode, in the episode's sandbox (issue 29, part 3).

Real shells on every terminal (local, bwrap, Docker where available); the hostile
probes are those the pdb ``!`` command passes (tests/test_adversarial_proc.py).
"""

from __future__ import annotations

import pytest

from dgym_tui import ToolCall
from dgym_tui.core.terminals.shell import quote

TEST = "from app import value\n\n\ndef test_value():\n    assert value() == 2\n"
SECRET = "the gold patch: return 2\n"


def bash(env, command: str):
    return env.step(ToolCall("bash", {"command": command}))


@pytest.fixture
def env(every_terminal, make_repo, make_env):
    repo = make_repo({"app.py": "def value():\n    return 1\n", "sub/data.txt": "hello\n"})
    e = make_env(repo, entrypoint="true", tools=["bash", "view", "submit"],
                 tool_options={"bash": {"timeout": 5}})
    e.reset()
    return e


@pytest.mark.timeout(120)
def test_cd_variables_and_functions_persist(env):
    r = bash(env, "cd sub && X=41; inc() { echo $(( $1 + 1 )); }")
    assert not r.error and r.data["status"] == "done" and r.data["restarted"]
    assert r.observation == "[bash session started]"
    r = bash(env, "cat data.txt; inc $X")
    assert r.observation == "hello\n42"
    assert not r.data["restarted"] and r.data["exit_code"] == 0
    r = bash(env, "false")
    assert r.observation == "[exit code 1]" and r.data["exit_code"] == 1
    r = bash(env, "echo made > new.txt")  # in sub/: the cd holds; the step sees the change
    assert r.changed_files == ["sub/new.txt"]


@pytest.mark.timeout(120)
def test_timeout_stops_the_command_and_keeps_the_shell(env):
    bash(env, "Y=kept; cd sub")
    r = bash(env, "echo before; sleep 60; echo never")
    assert r.data["status"] == "timeout"
    assert "before" in r.observation and "never" not in r.observation
    assert "[timeout: the command ran longer than 5 s" in r.observation
    r = bash(env, "echo $Y; cat data.txt")
    assert r.observation == "kept\nhello" and not r.data["restarted"]


@pytest.mark.timeout(120)
def test_a_command_deaf_to_ctrl_c_gets_the_shell_killed_and_replaced(make_repo, make_env):
    env = make_env(make_repo({"a.py": ""}), entrypoint="true", tools=["bash"],
                   tool_options={"bash": {"timeout": 2}})
    env.reset()
    bash(env, "W=old")
    r = bash(env, "python -c \"import signal, time; signal.signal(signal.SIGINT, "
                  "signal.SIG_IGN); print('deaf', flush=True); time.sleep(60)\"")
    assert r.data["status"] == "killed" and "deaf" in r.observation
    assert "did not stop on Ctrl-C; the shell was killed" in r.observation
    r = bash(env, "echo [$W]")
    assert r.observation == ("[bash session restarted: the previous command did not stop]\n[]")


@pytest.mark.timeout(120)
def test_exit_and_kill_restart_a_fresh_shell(env):
    bash(env, "Z=lost; cd sub")
    r = bash(env, "exit 7")
    assert r.data["status"] == "exited"
    assert "the shell exited" in r.observation and "next bash command starts a new one" \
        in r.observation
    r = bash(env, "echo [$Z]; ls")
    assert r.data["restarted"] and r.observation.startswith("[bash session restarted")
    assert "[]" in r.observation and "app.py" in r.observation  # fresh: no Z, back at the root
    r = bash(env, "kill -9 $$")
    assert r.data["status"] == "exited"
    assert bash(env, "echo alive").observation.endswith("alive")


@pytest.mark.timeout(120)
def test_output_is_bounded(every_terminal, make_repo, make_env):
    env = make_env(make_repo({"a.py": ""}), entrypoint="true", tools=["bash"], max_output=2000)
    env.reset()
    r = bash(env, "seq 1 200000; echo END")
    assert len(r.observation) < 2600
    assert "output truncated" in r.observation
    assert r.observation.startswith("[bash session started]\n1\n2\n")
    assert r.observation.rstrip().endswith("END")
    assert bash(env, "echo next").observation == "next"


@pytest.mark.timeout(120)
def test_a_printed_fake_sentinel_does_not_shift_outputs(env):
    """Output that looks like the end-of-command line (any token, any status) is just output."""
    fake = "printf '\\n__dgym_%s:0\\n' 0123456789abcdef0123456789abcdef; echo tail"
    r = bash(env, fake + "; exit_with() { return $1; }; exit_with 3")
    assert "__dgym_0123456789abcdef0123456789abcdef:0" in r.observation
    assert "tail" in r.observation and r.data["exit_code"] == 3
    assert bash(env, "echo second").observation == "second"
    assert bash(env, "echo third").observation == "third"


@pytest.mark.timeout(120)
def test_commands_read_no_input_and_quoting_survives(env):
    r = bash(env, "cat; read -r line; echo \"[$line]\"")
    assert r.observation.endswith("[]") and r.data["status"] == "done"
    text = "a'b\"c\\d $HOME `x` ünï\ttab"
    r = bash(env, "cat <<'EOF'\n" + text + "\nEOF")
    assert r.observation == text
    long = "x" * 10000  # longer than a terminal line
    assert bash(env, f"echo {long} | wc -c").observation.strip() == "10001"


def test_quote_keeps_every_character():
    pieces = quote("a'\\\n\x00é" + "z" * 2000)
    assert all(p.startswith("$'") and p.endswith("'") for p in pieces)
    assert all(len(p) < 600 for p in pieces) and len(pieces) >= 4
    assert all(c.isascii() and c.isprintable() for p in pieces for c in p)


# -- the same guarantees as pdb `!` ----------------------------------------------------------

@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def sandboxed(request) -> str:
    """``"bwrap"`` or ``"docker"`` (each skips only where it is unavailable, not under CI)."""
    request.getfixturevalue("bwrap_ready" if request.param == "bwrap" else "docker_ready")
    return request.param


@pytest.fixture
def sandbox_env(sandboxed, make_repo, make_env, fast_pytest):
    repo = make_repo({"app.py": "def value():\n    return 1\n", "test_app.py": TEST,
                      "answer/fix.txt": SECRET, ".debugignore": "answer/\nnotes.txt\n",
                      "notes.txt": SECRET, ".debugreadonly": "test_app.py\n"})
    env = make_env(repo, terminal=sandboxed, entrypoint=f"{fast_pytest} test_app.py",
                   tools=["bash", "submit"], tool_options={"bash": {"timeout": 20}})
    env.reset()
    return env


@pytest.mark.timeout(180)
def test_bash_cannot_read_ignored_files(sandbox_env):
    for path in ("answer/fix.txt", "notes.txt", ".debugignore"):
        r = bash(sandbox_env, f"cat {path}")  # ignored files are not in the working copy
        assert "gold patch" not in r.observation and "No such file" in r.observation, path
    assert "answer/" not in bash(sandbox_env, "cat .debugignore").observation
    assert "fix.txt" not in bash(sandbox_env, "ls -a answer").observation
    assert "gold patch" not in bash(sandbox_env, "grep -r gold . 2>&1").observation
    r = bash(sandbox_env, f"cat {sandbox_env.workspace.source / 'notes.txt'}")
    assert "gold patch" not in r.observation


@pytest.mark.timeout(180)
def test_bash_cannot_write_read_only_files(sandbox_env):
    for command in ("echo '' > test_app.py", "rm -f test_app.py", "mv test_app.py moved.py",
                    "chmod 777 test_app.py", "sed -i s/2/1/ test_app.py"):
        r = bash(sandbox_env, command)
        assert r.data["exit_code"] != 0, command
    assert (sandbox_env.workspace.root / "test_app.py").read_text() == TEST
    r = bash(sandbox_env, "sed -i s/1/2/ app.py && python -m pytest -q test_app.py")
    assert r.data["exit_code"] == 0  # the writable files stay writable
    assert sandbox_env.step(ToolCall("submit", {})).resolved


@pytest.mark.timeout(180)
def test_bash_has_no_network_no_capabilities_no_devices(sandbox_env):
    r = bash(sandbox_env, "grep CapEff /proc/self/status")
    assert "0000000000000000" in r.observation
    r = bash(sandbox_env, "python -c \"import socket; socket.create_connection(('1.1.1.1', 53), "
                          "timeout=3)\"")
    assert r.data["exit_code"] != 0
    assert bash(sandbox_env, "test -e /var/run/docker.sock").data["exit_code"] != 0
    r = bash(sandbox_env, "mknod disk.txt b 7 0")
    assert r.data["exit_code"] != 0 and "Operation not permitted" in r.observation
    assert not (sandbox_env.workspace.root / "disk.txt").exists()


# -- the app: `$ cmd` in the console, recorded like any action ----------------------------

async def test_app_console_runs_and_shows_bash_calls(calc_session, tmp_path):
    from tui_helpers import SIZE, console_text, records, settle, type_console

    from dgym_tui.tui.app import DgymApp

    out = tmp_path / "bash.jsonl"
    session = calc_session(tools=("view", "bash", "pdb", "submit"), out=out)
    app = DgymApp(session=session, ask_apply=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await type_console(app, pilot, "$ cd /tmp && echo made-$((6 * 7))")
        await type_console(app, pilot, "$ pwd")
        text = console_text(app)
        assert "› $ cd /tmp && echo made-$((6 * 7))" in text and "made-42" in text
        assert "› $ pwd" in text and "/tmp" in text
        await app.action_quit()
    steps = [r for r in records(out) if r.get("type") == "step"]
    assert [s["action"] for s in steps] == [
        {"name": "bash", "arguments": {"command": "cd /tmp && echo made-$((6 * 7))"},
         "id": steps[0]["action"]["id"]},
        {"name": "bash", "arguments": {"command": "pwd"}, "id": steps[1]["action"]["id"]}]
    assert steps[1]["decision"] == "manual" and "/tmp" in steps[1]["observation"]


# -- bash_agent: the bash-only baseline through `dgym run` and the LLM stub ----------------

def test_dgym_run_with_bash_agent_over_the_stub(tmp_path, tiny, llm_server, capsys):
    import json

    from dgym_tui.cli.main import main
    from dgym_tui.episode.trajectory import read_trajectory

    fix = "sed -i 's/return a - b/return a + b/' calc.py && python -m pytest -q -p no:cacheprovider"
    llm_server.script([
        {"tool_calls": [{"name": "bash", "arguments": {"command": "cd / && grep -n 'a - b' "
                                                                    "\"$OLDPWD/calc.py\""}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "cd - >/dev/null && " + fix}}]},
        {"tool_calls": [{"name": "submit", "arguments": {}}]},
    ])
    llm_yaml = tmp_path / "llm.yaml"
    llm_yaml.write_text(f"stub:\n  model: openai/stub\n  api_base: {llm_server.url}\n"
                        "  api_key: x\n  tool_calling: native\n  retries: 0\n")
    config = tmp_path / "agent.yaml"
    config.write_text(f"benchmark: {{name: tiny, root: {tiny}}}\ntasks: [add]\npolicy: agent\n"
                      f"agent: bash_agent\nllm: stub\nllm_config: {llm_yaml}\nmax_steps: 6\n"
                      "terminal: local\n")
    out = tmp_path / "out"
    assert main(["run", str(config), "--output", str(out), "--no-progress"]) == 0
    status = json.loads((out / "add" / "status.json").read_text())
    assert status["state"] == "done" and status["resolved"] is True, status
    offered = [t["function"]["name"] for t in llm_server.requests[0]["tools"]]
    assert offered == ["bash", "submit"]
    traj = read_trajectory(out / "add" / "trajectory.jsonl")
    assert traj.header["environment"]["tools"] == ["bash", "submit"]
    observations = [s["observation"] for s in traj.steps]
    assert "2:    return a - b" in observations[0]
    assert "2 passed" in observations[1]  # cd - worked: the step-1 cd persisted
    # a bash episode replays like any other: the same observations, step for step
    assert main(["replay", str(out / "add" / "trajectory.jsonl")]) == 0
    assert "no divergence" in capsys.readouterr().out


def test_dgym_tui_with_bash_agent_offers_bash_beside_the_default_tools(tmp_path, make_repo,
                                                                       monkeypatch):
    """The app's person keeps every default tool; the agent's own (bash) joins them."""
    from dgym_tui.cli.tui import build_app, build_parser
    from dgym_tui.core.env import DEFAULT_TOOLS

    llm_yaml = tmp_path / "llm.yaml"
    llm_yaml.write_text("stub:\n  model: openai/stub\n  api_base: http://127.0.0.1:9/v1\n"
                        "  api_key: x\n")
    monkeypatch.setenv("DGYM_LLM_CONFIG", str(llm_yaml))
    repo = make_repo({"a.py": "x = 1\n", "test_a.py": "def test_a():\n    pass\n"})
    args = ["--agent", "froggy_agent", "--llm", "stub", "--terminal", "local",
            "--trajectory", str(tmp_path / "t.jsonl"), "--no-apply-prompt", str(repo)]
    app = build_app(build_parser().parse_args(args))
    try:
        assert list(app.session.env.tools) == [*DEFAULT_TOOLS, "bash"]
        assert app.session.env.tools["pdb"].options == {"auto_list": 5}
    finally:
        app.session.env.close()


def test_breakpoints_follow_an_edit_made_with_bash(make_repo, make_env):
    """debug-gym loses breakpoints on shell edits; here they move with the code."""
    env = make_env(make_repo({"prog.py": "def f(x):\n    y = x * 2\n    return y\n\n\nf(1)\n"}),
                   entrypoint="python prog.py", tools=["bash", "pdb"], pdb_timeout=10)
    env.reset()
    assert env.step(ToolCall("pdb", {"command": "b prog.py:3"})).breakpoints == [("prog.py", 3)]
    r = bash(env, "sed -i '1i import os\\nimport sys' prog.py && head -5 prog.py")
    assert r.breakpoints == [("prog.py", 5)] and "    return y" in r.observation
    r = env.step(ToolCall("pdb", {"command": "c"}))
    assert r.frame == ("prog.py", 5)


def test_dgym_tui_bash_flag_offers_bash_to_a_person(tmp_path, make_repo):
    from dgym_tui.cli.tui import build_app, build_parser
    from dgym_tui.core.env import DEFAULT_TOOLS

    repo = make_repo({"a.py": "x = 1\n"})
    base = ["--terminal", "local", "--trajectory", str(tmp_path / "t.jsonl"), "--no-apply-prompt"]
    for flags, tools in (([], list(DEFAULT_TOOLS)), (["--bash"], [*DEFAULT_TOOLS, "bash"])):
        app = build_app(build_parser().parse_args([*base, *flags, str(repo)]))
        try:
            assert list(app.session.env.tools) == tools
        finally:
            app.session.env.close()
