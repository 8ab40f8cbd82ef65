"""Our side of the environment benchmark: a driver process for bench_env.py.

    python bench/ours_driver.py TASK TERMINAL IMAGE

Answers ``round`` lines on stdin (see plan.serve): each round opens a fresh
episode of the data/mini task TASK on TERMINAL (``local``, ``bwrap`` or
``docker``), runs plan.round_plan and closes it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from plan import find_probe, play_round, round_plan, serve  # noqa: E402

from dgym_tui import ToolCall  # noqa: E402
from dgym_tui.benchmarks import get_benchmark  # noqa: E402


def code_module(folder: Path) -> str:
    """The task's code module: the first .py file that is not a test file."""
    for path in sorted(folder.glob("*.py")):
        if not path.name.startswith("test_"):
            return path.name
    raise SystemExit(f"{folder}: no code module found")


def main() -> None:
    name, terminal, image = sys.argv[1:4]
    task = get_benchmark("mini").load(name)
    probe = find_probe(Path(task.path), code_module(Path(task.path)))
    plan = round_plan(probe)

    def run_round() -> tuple[dict, dict]:
        env = task.make_env(terminal=terminal, image=image if terminal == "docker" else None)

        def step(tool: str, arguments: dict) -> str:
            result = env.reset() if tool == "reset" else env.step(ToolCall(name=tool, arguments=arguments))
            if result.error:
                return f"*** Error: {result.observation}"
            return result.observation

        return play_round(plan, step, probe, env.close)

    serve(run_round)


if __name__ == "__main__":
    main()
