"""The reference system's side of the environment benchmark (microsoft/debug-gym 1.3.0).

Runs inside the reference system's own virtualenv (see bench/setup_reference.sh):

    REF_PY bench/ref_driver.py TASK_DIR ENTRYPOINT TERMINAL IMAGE

Answers ``round`` lines on stdin (see plan.serve) like bench/ours_driver.py:
each round is a fresh episode (a new LocalEnv, its reset) on its local
terminal, or on its DockerTerminal with ``base_image`` set to IMAGE (our
sandbox image: it works offline), running plan.round_plan.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from debug_gym.gym.envs.local import LocalEnv  # noqa: E402
from debug_gym.gym.terminals.docker import DockerTerminal  # noqa: E402
from debug_gym.gym.tools.tool import ToolCall  # noqa: E402
from debug_gym.gym.tools.toolbox import Toolbox  # noqa: E402
from plan import find_probe, play_round, round_plan, serve  # noqa: E402

NAMES = {"rewrite": "edit"}  # our tool name -> the reference's


def code_module(folder: Path) -> str:
    for path in sorted(folder.glob("*.py")):
        if not path.name.startswith("test_"):
            return path.name
    raise SystemExit(f"{folder}: no code module found")


def main() -> None:
    task, entrypoint, terminal, image = sys.argv[1:5]
    logging.disable(logging.CRITICAL)
    probe = find_probe(Path(task), code_module(Path(task)))
    plan = round_plan(probe)
    count = iter(range(10**9))

    def run_round() -> tuple[dict, dict]:
        term = DockerTerminal(base_image=image) if terminal == "docker" else None
        env = LocalEnv(path=task, entrypoint=entrypoint, terminal=term)
        for name in ("view", "eval", "pdb", "edit"):
            env.add_tool(Toolbox.get_tool(name))

        def step(tool: str, arguments: dict) -> str:
            if tool == "reset":
                info = env.reset()
            else:
                call = ToolCall(id=f"b{next(count)}", name=NAMES.get(tool, tool), arguments=arguments)
                info = env.step(call)
            return info.step_observation.observation

        return play_round(plan, step, probe, env.close)

    serve(run_round)


if __name__ == "__main__":
    main()
