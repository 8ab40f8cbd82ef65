"""The reference system's side of bench_repo_size.py (microsoft/debug-gym 1.3.0).

Runs in the reference system's own virtualenv (see bench/setup_reference.sh):

    REF_PY bench/ref_repo_size_driver.py REPO

Opens one episode of REPO (a LocalEnv on its local terminal, with its view,
listdir, grep, pdb, edit and eval tools), resets it, then answers the
requests of repo_size_plan.serve until stdin closes.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from debug_gym.gym.envs.local import LocalEnv  # noqa: E402
from debug_gym.gym.tools.tool import ToolCall  # noqa: E402
from debug_gym.gym.tools.toolbox import Toolbox  # noqa: E402
from repo_size_plan import ENTRYPOINT, bare_run, serve  # noqa: E402

NAMES = {"rewrite": "edit"}  # our tool name -> the reference's


def main() -> None:
    logging.disable(logging.CRITICAL)
    env = LocalEnv(path=sys.argv[1], entrypoint=ENTRYPOINT)
    for name in ("view", "listdir", "grep", "eval", "pdb", "edit"):
        env.add_tool(Toolbox.get_tool(name))
    env.reset()
    count = iter(range(10**9))

    def step(tool: str, arguments: dict) -> str:
        call = ToolCall(id=f"b{next(count)}", name=NAMES.get(tool, tool), arguments=arguments)
        return env.step(call).step_observation.observation

    def bare() -> float:  # the same environment the reference's terminal gives its commands
        return bare_run(str(env.working_dir), env=dict(env.terminal.env_vars))

    try:
        serve(step, bare)
    finally:
        env.close()


if __name__ == "__main__":
    main()
