"""Benchmarks end to end with an LLM agent: `dgym run` -> LLMAgent -> litellm -> the HTTP stub.

The scripted model (tests/llm_stub.py) plays a debugging session on our
offline SWE-bench fixture instance (in Docker) and an Exercism exercise
(locally). The script is the test's: its fix is computed from the task's
reference solution, which the environment never shows to the agent; the
tests check that nothing the model was sent before it "wrote" the fix
contained that fix, and (plain swebench) that the hidden tests never reached
the model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.swebench import default_instances
from dgym_tui.cli.main import main
from dgym_tui.core.fs.patches import parse_patch, patched_text
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.policies.solution import SolutionPolicy

INSTANCE = "dgym__calc-1"
#: The buggy line of the fixture: `return left + right if op == "+" else left - right`.
BUG_LINE = 30


@pytest.fixture(scope="module")
def swebench_cache(tmp_path_factory):
    """One cache of materialized repositories for the module's episodes."""
    return tmp_path_factory.mktemp("swebench-cache")


def _llm_yaml(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "llm.yaml"
    path.write_text(f"stub:\n  model: openai/stub\n  api_base: {url}\n  api_key: x\n"
                    "  tool_calling: native\n  retries: 0\n")
    return path


def _run(tmp_path: Path, url: str, benchmark: dict, task: str, agent: str,
         max_steps: int, terminal: str | None = None) -> Path:
    """Write a run config, run `dgym run` on it, return the task's result folder."""
    config = {"benchmark": benchmark, "tasks": [task], "policy": "agent", "agent": agent,
              "llm": "stub", "llm_config": str(_llm_yaml(tmp_path, url)),
              "max_steps": max_steps}
    if terminal:
        config["terminal"] = terminal
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    out = tmp_path / "out"
    assert main(["run", str(path), "--output", str(out), "--no-progress"]) == 0
    return out / task


def _calls(*calls: tuple[str, dict]) -> list[dict]:
    """One scripted reply per tool call."""
    return [{"content": f"Next: {name}.", "tool_calls": [{"name": name, "arguments": args}]}
            for name, args in calls]


def _strings(value):
    """Every string inside a request body; JSON-encoded strings (tool call arguments) decoded."""
    if isinstance(value, str):
        yield value
        try:
            decoded = json.loads(value)
        except ValueError:
            return
        if isinstance(decoded, (dict, list)):
            yield from _strings(decoded)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _sent(requests: list[dict]) -> str:
    return "\n".join(s for request in requests for s in _strings(request))


def _added_lines(patch: str, base: Path) -> list[str]:
    """Lines a patch adds (stripped) that appear nowhere in the files it changes."""
    seen = set()
    for fp in parse_patch(patch):
        if fp.old_path and (base / fp.old_path).is_file():
            seen |= {line.strip() for line in (base / fp.old_path).read_text().splitlines()}
    added = [line[1:].strip() for line in patch.splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    return [line for line in added if line and line not in seen]


def _status(folder: Path) -> dict:
    return json.loads((folder / "status.json").read_text())


@pytest.mark.docker
@pytest.mark.parametrize("name, first_values", [
    ("swebench-debug", "(3, 2)"),   # FAIL_TO_PASS under pdb: evaluate("10 - 3 - 2")
    ("swebench", "(2, 3)"),         # only the old tests exist: evaluate("1 + 2 + 3")
])
def test_scripted_debug_agent_resolves_swebench_fixture(name, first_values, fixture_image,
                                                        swebench_cache, tmp_path, llm_server):
    options = {"name": name, "instances": str(default_instances()),
               "cache_dir": str(swebench_cache)}
    task = get_benchmark(name, **{k: v for k, v in options.items() if k != "name"}).load(INSTANCE)
    gold = task.meta["patch"]
    policy = SolutionPolicy.from_patch(gold, task.path)
    policy.reset(None)
    (fix,) = [a["arguments"] for a in policy.plan() if a["name"] == "rewrite"]
    assert fix["path"] == "calc/evaluator.py"

    calls = [("pdb", {"command": f"b calc/evaluator.py:{BUG_LINE}"}),
             ("pdb", {"command": "c"}),
             ("pdb", {"command": "p left, right"}),
             ("rewrite", fix),
             ("eval", {}),
             ("submit", {})]
    if name == "swebench":  # look for the new tests: they are not in the working copy
        calls.insert(0, ("grep", {"pattern": "left_associative"}))
    llm_server.script(_calls(*calls))
    folder = _run(tmp_path, llm_server.url, options, INSTANCE, "debug_agent", max_steps=12)

    status = _status(folder)
    assert status["state"] == "done", status
    assert (status["resolved"], status["score"], status["max_score"]) == (True, 6, 6), status
    assert (status["reason"], status["steps"]) == ("submitted", len(calls))
    assert llm_server.remaining == 0 and len(llm_server.requests) == len(calls)

    traj = read_trajectory(folder / "trajectory.jsonl")
    assert traj.finished and traj.footer["resolved"] is True
    assert (traj.initial.score, traj.initial.max_score, traj.initial.resolved) == (4, 6, False)
    names = [s["action"]["name"] for s in traj.steps]
    assert names == [c[0] for c in calls]
    first_pdb = names.index("pdb")
    brk, cont, show = (traj.result(first_pdb + i) for i in (1, 2, 3))
    assert not brk.error and ("calc/evaluator.py", BUG_LINE) in brk.breakpoints, brk.observation
    # the program stopped at the breakpoint: a frame inside the repository
    assert tuple(cont.frame) == ("calc/evaluator.py", BUG_LINE), cont.observation
    assert first_values in show.observation, show.observation
    assert tuple(show.frame) == ("calc/evaluator.py", BUG_LINE)
    assert "calc/evaluator.py" in (folder / "patch.diff").read_text()

    # Nothing sent to the model before it produced the rewrite held the fix.
    fix_request = names.index("rewrite")  # request i produced step i + 1
    before_fix = _sent(llm_server.requests[:fix_request + 1])
    gold_lines = _added_lines(gold, task.path)
    assert len(gold_lines) >= 4
    for line in gold_lines:
        assert line not in before_fix, line
    assert gold not in _sent(llm_server.requests)
    if name == "swebench":
        grep = traj.result(1)
        assert "tests/test_evaluator.py" not in grep.observation, grep.observation
        # the hidden tests' code never reached the model (eval output names them only)
        everything = _sent(llm_server.requests)
        assert task.meta["test_patch"] not in everything
        for fp in parse_patch(task.meta["test_patch"]):
            hidden = patched_text(fp, (task.path / fp.old_path).read_text())
            assert hidden not in everything
        hidden_lines = _added_lines(task.meta["test_patch"], task.path)
        assert len(hidden_lines) == 4
        for line in hidden_lines:
            assert line not in everything, line
        assert "test_subtraction_is_left_associative" in traj.initial.observation


def test_scripted_rewrite_agent_solves_exercism_exercise(tmp_path, llm_server):
    slug = "run-length-codec"
    task = get_benchmark("exercism").load(slug)
    stub = task.meta["stub"]
    example = Path(task.meta["example"]).read_text()
    llm_server.script(_calls(("view", {"path": stub}),
                             ("rewrite", {"path": stub, "new_code": example}),
                             ("submit", {})))
    folder = _run(tmp_path, llm_server.url, {"name": "exercism"}, slug, "rewrite_agent",
                  max_steps=8, terminal="local")

    status = _status(folder)
    assert status["state"] == "done" and status["resolved"] is True, status
    assert status["score"] == status["max_score"] > 0 and status["steps"] == 3
    traj = read_trajectory(folder / "trajectory.jsonl")
    assert traj.initial.score == 0 and not traj.initial.resolved
    assert f"{status['max_score']} failed" in _sent(llm_server.requests[:1])  # the first eval
    assert traj.result(3).resolved and traj.footer["reason"] == "submitted"
    # rewrite_agent has no debugger
    offered = [t["function"]["name"] for t in llm_server.requests[0]["tools"]]
    assert "pdb" not in offered and "rewrite" in offered
    # the reference solution (.meta) was never shown before the agent wrote its own
    before = _sent(llm_server.requests[:2])
    assert "itertools.groupby" not in before and ".meta" not in before
    assert "itertools.groupby" in (folder / "patch.diff").read_text()
