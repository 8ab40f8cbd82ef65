"""RepoEnv: episodes, invalid actions, generation, cleanup; the pytest summary parser."""

from __future__ import annotations

import json

import jsonschema
import pytest

from dgym_tui import RepoEnv, ToolCall
from dgym_tui.core.env import DEFAULT_TOOLS
from dgym_tui.core.evaluation.summary import parse_pytest_summary
from dgym_tui.core.terminals.local import LocalTerminal

CODE = "def add(a, b):\n    return a - b\n"
TESTS = ("from code import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
         "def test_zero():\n    assert add(0, 0) == 0\n")


@pytest.fixture
def repo(make_repo):
    return make_repo({"code.py": CODE, "test_code.py": TESTS})


@pytest.fixture
def quick(repo, make_env):
    """Local env whose entrypoint is `true` (instant eval)."""
    env = make_env(repo, entrypoint="true")
    env.reset()
    return env


# ------------------------------------------------------------------ episodes
def test_episode_from_the_readme(repo, make_env, fast_pytest, terminal_kind):
    """The issue's example: reset, set a breakpoint with pdb, run to it, fix, submit."""
    env = make_env(repo, entrypoint=f"{fast_pytest} test_code.py")
    r = env.reset()
    assert r.observation.startswith("Task:\n")
    assert f"Tools: {', '.join(DEFAULT_TOOLS)}" in r.observation
    assert "1 failed, 1 passed" in r.observation
    assert (r.score, r.max_score, r.resolved, r.done, r.error) == (1, 2, False, False, False)
    assert r.eval.failed == 1 and "FAILED test_code.py::test_add" in r.eval_output

    r = env.step(ToolCall(name="pdb", arguments={"command": "b code.py:2"}))
    assert r.breakpoints == [("code.py", 2)] and not r.error
    r = env.step(ToolCall(name="pdb", arguments={"command": "c"}))
    assert r.frame == ("code.py", 2)
    r = env.step(ToolCall(name="view", arguments={"path": "code.py"}))
    assert r.observation.splitlines()[2] == "2 B->     return a - b"

    r = env.step(ToolCall(name="rewrite", arguments={
        "path": "code.py", "start": 1, "end": 2,
        "new_code": "def add(a, b):\n    # fixed\n    return a + b\n"}))
    assert env.generation == 1
    assert r.breakpoints == [("code.py", 3)]  # followed the return line
    r = env.step(ToolCall(name="submit", arguments={}))
    assert (r.done, r.resolved, r.score, r.max_score) == (True, True, 2, 2)
    assert r.changed_files == ["code.py"]
    assert (repo / "code.py").read_text() == CODE  # the original is never written


def test_reset_starts_fresh(quick, repo):
    first_folder = quick.workspace.folder
    quick.step(ToolCall("rewrite", {"path": "code.py", "new_code": "broken\n"}))
    quick.breakpoints.add("code.py", 1)
    quick.frame = ("code.py", 1)
    assert quick.generation == 1
    r = quick.reset()
    assert not first_folder.exists()
    assert quick.workspace.folder != first_folder
    assert (quick.workspace.root / "code.py").read_text() == CODE
    assert (quick.generation, quick.frame, r.breakpoints, r.changed_files) == (0, None, [], [])


def test_close_is_idempotent_and_removes_the_copy(repo):
    with RepoEnv(repo, entrypoint="true") as env:
        env.reset()
        folder = env.workspace.folder
        assert folder.exists()
    assert not folder.exists()
    env.close()
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(ToolCall("view", {"path": "code.py"}))


def test_close_during_reset_leaves_no_terminal(repo, monkeypatch):
    """close() from another thread (a give-up while the episode starts) that lands while
    reset makes the terminal: reset stops there, and no terminal outlives the close (the
    terminal was set after close had looked, then started and ran the setup commands and
    the eval on a closed environment)."""
    import threading

    from dgym_tui.core.terminals.base import TerminalError

    made = RepoEnv._make_terminal
    terminals = []

    def make_then_closed(self, workspace):
        terminal = made(self, workspace)
        terminals.append(terminal)
        closer = threading.Thread(target=self.close)
        closer.start()
        closer.join(60)
        return terminal

    env = RepoEnv(repo, entrypoint="true", setup_commands=["sleep 60"])
    monkeypatch.setattr(RepoEnv, "_make_terminal", make_then_closed)
    with pytest.raises(TerminalError, match="closed while"):
        env.reset()
    assert env.terminal is None and env.workspace is None and len(terminals) == 1
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(ToolCall("listdir", {}))


def test_step_before_reset(repo):
    env = RepoEnv(repo, entrypoint="true")
    with pytest.raises(RuntimeError, match="call reset"):
        env.step(ToolCall("listdir", {}))
    env.close()


def test_apply_to_source_only_on_request(quick, repo):
    quick.step(ToolCall("rewrite", {"path": "code.py", "start": 2,
                                    "new_code": "    return a + b"}))
    assert (repo / "code.py").read_text() == CODE
    patch = quick.patch()
    assert patch.startswith("diff --git a/code.py b/code.py\nindex ")  # git's own format
    assert "\n--- a/code.py\n+++ b/code.py\n" in patch
    assert quick.apply_to_source() == ["code.py"]
    assert (repo / "code.py").read_text() == CODE.replace("a - b", "a + b")


def test_terminal_instance_and_setup_commands(repo, fast_pytest):
    terminal = LocalTerminal()
    with RepoEnv(repo, entrypoint=f"{fast_pytest} test_code.py", terminal=terminal,
                 setup_commands=["echo 'def add(a, b):\n    return a + b' > code.py",
                                 "exit 3"]) as env:
        r = env.reset()
        assert env.terminal is terminal
        assert r.resolved and r.changed_files == ["code.py"]
        assert "Setup command failed (exit code 3): exit 3" in r.observation


def test_constructor_errors(repo, tmp_path):
    with pytest.raises(ValueError, match="known tools: .*listdir"):
        RepoEnv(repo, tools=["listdir", "telepathy"])
    with pytest.raises(ValueError, match="unknown terminal"):
        RepoEnv(repo, terminal="ssh")
    assert RepoEnv(repo, terminal="docker").image == "dgym-tui/sandbox:test"  # the default
    with pytest.raises(ValueError, match="does not exist"):
        RepoEnv(tmp_path / "missing")
    with pytest.raises(ValueError, match="is a file, not a folder"):
        RepoEnv(repo / "code.py")


def test_ignore_and_readonly_arguments(repo, make_env):
    env = make_env(repo, entrypoint="true", ignore=["test_code.py"], readonly=["code.py"])
    env.reset()
    r = env.step(ToolCall("listdir", {}))
    assert r.observation == "./\n  code.py"
    r = env.step(ToolCall("rewrite", {"path": "code.py", "new_code": "x\n"}))
    assert r.error and "read-only" in r.observation


def test_non_pytest_entrypoint_scores_by_exit_code(repo, make_env):
    env = make_env(repo, entrypoint="python -c 'raise SystemExit(3)'")
    r = env.reset()
    assert (r.score, r.max_score, r.resolved, r.eval.exit_code) == (0, 1, False, 3)
    env = make_env(repo, entrypoint="python -c 'print(1)'")
    assert env.reset().resolved


# ----------------------------------------------------------- invalid actions
@pytest.mark.parametrize("action,message", [
    (ToolCall("telepathy", {}), "unknown tool 'telepathy'; available tools: listdir, view"),
    (ToolCall("view", {}), ("invalid arguments for view: 'path' is a required property. "
                            "Parameters: path (string, required)")),
    (ToolCall("view", {"path": "code.py", "colour": "red"}),
     "Additional properties are not allowed ('colour' was unexpected)"),
    (ToolCall("view", {"path": "code.py", "start": "ten"}),
     "start: 'ten' is not of type 'integer', 'null'"),
    (ToolCall("view", {"path": "code.py", "start": 0}), "start: 0 is less than the minimum"),
    (ToolCall("view", "{'path': 'code.py'}"), "the arguments of view are not valid JSON"),
    (ToolCall("view", '["code.py"]'), "must be a JSON object, not list; e.g. {\"path\": "),
    (ToolCall("listdir", {"depth": True}), "depth: True is not of type 'integer'"),
    ({"arguments": {}}, "an action needs a tool name"),
])
def test_invalid_actions_are_observations(quick, action, message):
    r = quick.step(action)
    assert r.error
    assert message in r.observation
    assert quick.step(ToolCall("view", {"path": "code.py"})).error is False


def test_json_string_arguments_and_dict_actions(quick):
    r = quick.step(ToolCall("view", json.dumps({"path": "code.py", "start": 2})))
    assert not r.error and r.observation.startswith("code.py, lines 2-2 of 2:")
    r = quick.step({"name": "view", "arguments": '{"path": "code.py"}', "id": "call_1"})
    assert not r.error and r.action.id == "call_1"
    r = quick.step(ToolCall("listdir", ""))
    assert not r.error and r.observation.startswith("./")
    r = quick.step(ToolCall("listdir", "null"))
    assert not r.error and r.observation.startswith("./")


def test_internal_tool_error_keeps_env_usable(quick, monkeypatch):
    def boom(**_):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(quick.tools["grep"], "run", boom)
    r = quick.step(ToolCall("grep", {"pattern": "x"}))
    assert r.error
    assert r.observation == "internal error in tool grep: RuntimeError: disk on fire"
    r = quick.step(ToolCall("view", {"path": "code.py"}))
    assert not r.error


def test_generation_counts_only_changing_steps(quick):
    quick.step(ToolCall("view", {"path": "code.py"}))
    quick.step(ToolCall("grep", {"pattern": "add"}))
    assert quick.generation == 0
    quick.step(ToolCall("rewrite", {"path": "code.py", "start": 2, "new_code": "    pass"}))
    assert quick.generation == 1
    quick.step(ToolCall("rewrite", {"path": "code.py", "start": 2, "new_code": "    pass"}))
    assert quick.generation == 1  # identical text: nothing written


def test_changes_between_steps_count_and_move_breakpoints(quick):
    """A file written by someone else between two steps still bumps the generation
    and remaps breakpoints on the next step."""
    quick.breakpoints.add("code.py", 2)
    generation = quick.generation
    path = quick.workspace.root / "code.py"
    path.write_text("# a comment added by an editor\n" + path.read_text())
    r = quick.step(ToolCall("view", {"path": "code.py"}))
    assert quick.generation == generation + 1
    assert r.breakpoints == [("code.py", 3)]


def test_terminal_options_reach_the_docker_terminal(repo, monkeypatch):
    import dgym_tui.core.terminals.docker as docker_module

    seen = {}

    class Recorder(LocalTerminal):
        def __init__(self, image, readonly=(), ignored=(), overlay=None, run_as=None,
                     **options):
            super().__init__()
            seen.update(image=image, **options)

    monkeypatch.setattr(docker_module, "DockerTerminal", Recorder)
    with RepoEnv(repo, entrypoint="true", terminal="docker", image="img:1",
                 terminal_options={"workdir": "/testbed", "network": True}) as env:
        env.reset()
    assert seen == {"image": "img:1", "workdir": "/testbed", "network": True}


def test_tool_schemas_are_valid_and_described(quick):
    env = quick
    schemas = env.tool_schemas()
    assert [s["function"]["name"] for s in schemas] == list(DEFAULT_TOOLS)
    for schema in schemas:
        fn = schema["function"]
        assert fn["description"]
        jsonschema.Draft202012Validator.check_schema(fn["parameters"])
        for name, prop in fn["parameters"].get("properties", {}).items():
            assert prop.get("description"), f"{fn['name']}.{name} has no description"
    assert env.instructions().startswith("listdir: ")


# ------------------------------------------------------------ pytest summary
@pytest.mark.parametrize("line,counts", [
    ("1 failed, 2 passed in 0.12s", (2, 1, 0, 0)),
    ("==== 3 passed, 1 skipped, 2 warnings in 1.50s ====", (3, 0, 0, 1)),
    ("2 failed, 1 passed, 1 error in 0.30s (0:00:00)", (1, 2, 1, 0)),
    ("==== 1 passed, 1 xfailed, 1 xpassed, 3 errors in 0.01s ====", (2, 0, 3, 1)),
    ("no tests ran in 0.01s", (0, 0, 0, 0)),
    ("\x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m1 passed\x1b[0m\x1b[31m in 0.05s\x1b[0m",
     (1, 1, 0, 0)),
])
def test_parse_pytest_summary(line, counts):
    summary = parse_pytest_summary(f"collected 3 items\nsome output\n{line}\n", exit_code=1)
    assert (summary.passed, summary.failed, summary.errors, summary.skipped) == counts
    assert summary.exit_code == 1


def test_parse_pytest_summary_without_summary():
    assert parse_pytest_summary("Traceback (most recent call last):\nboom\n") is None
    assert parse_pytest_summary("I passed 3 exams in 2s\n") is None


def test_tool_data_reaches_the_step_result(quick):
    """ToolOutput.data is carried into StepResult.data and survives the JSON round trip."""
    from dgym_tui.core.types import StepResult

    view = quick.step(ToolCall("view", {"path": "code.py", "start": 2}))
    assert view.data == {"path": "code.py", "start": 2, "end": 2, "total": 2}
    fix = quick.step(ToolCall("rewrite", {"path": "code.py", "start": 2,
                                          "new_code": "    return a + b\n"}))
    assert fix.data == {"path": "code.py", "start": 2, "end": 2, "new_lines": 1}
    assert StepResult.from_dict(json.loads(json.dumps(fix.to_dict()))).data == fix.data
    grep = quick.step(ToolCall("grep", {"pattern": "add"}))
    assert grep.data == {"hits": 5, "skipped": 0}  # code.py once, test_code.py four times
    refused = quick.step(ToolCall("view", {"path": "../etc/passwd"}))
    assert refused.error and refused.data == {}
