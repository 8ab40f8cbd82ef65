"""Helpers for the session / trajectory / runner / CLI tests: a scripted policy
and a tiny buggy repository. (The real LLM agent is tested end to end against
the HTTP stub in test_session.py.)"""

from __future__ import annotations

from pathlib import Path

from dgym_tui.benchmarks import Benchmark, Task
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.policy import Policy
from dgym_tui.episode.records import EpisodeInfo, Proposal, Usage
from dgym_tui.runs.config import load_config

# pytest without third-party plugins: starts in ~0.2 s instead of seconds.
ENTRYPOINT = "env PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider test_calc.py"
TOOLS = ("listdir", "view", "eval", "rewrite", "submit")

BUGGY = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"
TESTS = ("from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
         "def test_mul():\n    assert mul(2, 3) == 6\n")
FIX = ToolCall("rewrite", {"path": "calc.py", "start": 2, "end": 2, "new_code": "    return a + b"})


def write_repo(folder: Path, source: str = BUGGY, tests: str = TESTS) -> Path:
    """Write the tiny calc repository (one failing test out of two) into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "calc.py").write_text(source)
    (folder / "test_calc.py").write_text(tests)
    return folder


class ScriptedPolicy(Policy):
    """Proposes the given actions in order (None = an invalid reply with an error).

    ``seen`` records the turns passed to each ``propose`` call; ``info`` the
    EpisodeInfo of ``reset``.
    """

    name = "scripted"

    def __init__(self, actions: list[ToolCall | None], usage: Usage | None = None) -> None:
        self.actions = list(actions)
        self.usage = usage or Usage(100, 20, 0.001)
        self.seen: list[list] = []
        self.info: EpisodeInfo | None = None

    def reset(self, info: EpisodeInfo) -> None:
        self.info = info

    def propose(self, turns: list) -> Proposal:
        self.seen.append(list(turns))
        if not self.actions:
            raise AssertionError("the scripted policy ran out of actions")
        action = self.actions.pop(0)
        if action is None:
            return Proposal(None, reasoning="hmm", error="no tool call found in the reply",
                            usage=self.usage)
        # a fresh copy: the same ToolCall may be scripted twice
        return Proposal(ToolCall(action.name, dict(action.arguments)),
                        reasoning=f"I will call {action.name}", usage=self.usage)


MUL_BUG = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
MUL_FIX = ToolCall("rewrite", {"path": "calc.py", "start": 6, "end": 6,
                               "new_code": "    return a * b"})


class TinyBenchmark(Benchmark):
    """Two one-bug repositories written under ``root``; meta holds the fix."""

    name = "tiny"

    def __init__(self, root: str) -> None:
        self.root = Path(root)

    def tasks(self) -> list[str]:
        return ["add", "mul"]

    def _load(self, task_name: str) -> Task:
        source = BUGGY if task_name == "add" else MUL_BUG
        fixed = source.replace("return a - b", "return a + b") if task_name == "add" else \
            MUL_BUG.replace("return a + b\n", "return a * b\n", 2).replace(
                "def add(a, b):\n    return a * b", "def add(a, b):\n    return a + b")
        folder = write_repo(self.root / task_name, source)
        return Task(name=task_name, benchmark=self.name, path=folder, entrypoint=ENTRYPOINT,
                    meta={"solution_files": {"calc.py": fixed}})


def tiny_config(tmp_path, tiny, *extra):
    """A run config of the tiny benchmark under ``tiny`` (the fixture's folder), solution policy."""
    path = tmp_path / "run.yaml"
    path.write_text(f"benchmark: {{name: tiny, root: {tiny}}}\npolicy: solution\n"
                    f"max_steps: 5\noutput_dir: {tmp_path / 'out'}\n")
    return load_config(path, list(extra))


def tiny_policy(task):
    """view, the task's fix, submit."""
    fix = FIX if task.name == "add" else MUL_FIX
    return ScriptedPolicy([ToolCall("view", {"path": "calc.py"}), fix, ToolCall("submit", {})])


def small_tools(monkeypatch):
    """Episodes of this test get the small tool set (no pdb) to stay fast."""
    # the scripted runs use the small tool set (no pdb) to stay fast
    orig = Task.make_env

    def make_env(self, **overrides):
        overrides.setdefault("tools", TOOLS)
        return orig(self, **overrides)

    monkeypatch.setattr(Task, "make_env", make_env)


def stub_agent_files(tmp_path: Path, llm_server) -> tuple[Path, Path]:
    """An llm.yaml whose ``stub`` entry is the LLM stub (native tool calls, no retry) and a
    small agent spec (the shipped prompts, the fast :data:`TOOLS`, no pdb) in ``tmp_path``.

    Returns:
        ``(agent spec path, llm.yaml path)`` for a run config's ``agent`` / ``llm_config``.
    """
    llm_yaml = tmp_path / "llm.yaml"
    llm_yaml.write_text(f"stub:\n  model: openai/stub\n  api_base: {llm_server.url}\n"
                        "  api_key: x\n  tool_calling: native\n  retries: 0\n")
    agent = tmp_path / "small_agent.yaml"
    prompts = Path(__file__).resolve().parent.parent / "agents" / "prompts"
    agent.write_text(f"name: small_agent\ntools: [{', '.join(TOOLS)}]\n"
                     f"system_prompt: {prompts / 'system.jinja'}\n"
                     f"instance_prompt: {prompts / 'instance.jinja'}\n")
    return agent, llm_yaml
