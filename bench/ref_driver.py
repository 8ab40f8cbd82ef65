"""Time the reference system (microsoft/debug-gym 1.3.0) on the same plan.

Runs inside the reference system's own virtualenv (see bench/setup_reference.sh):

    REF_PY bench/ref_driver.py TASK_DIR ENTRYPOINT MODULE ROUNDS RESETS

Prints one JSON line: ``{label: {"median": ms, "p90": ms, "n": count}}``.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from debug_gym.gym.envs.local import LocalEnv  # noqa: E402
from debug_gym.gym.tools.tool import ToolCall  # noqa: E402
from debug_gym.gym.tools.toolbox import Toolbox  # noqa: E402
from plan import actions, dump, find_probe, summarize  # noqa: E402


def main() -> None:
    task, entrypoint, module, rounds, resets = sys.argv[1:6]
    logging.disable(logging.CRITICAL)
    probe = find_probe(Path(task), module)
    samples: dict[str, list[float]] = {"reset": []}
    for i in range(int(resets)):
        env = LocalEnv(path=task, entrypoint=entrypoint)
        for name in ("view", "eval", "pdb", "edit"):
            env.add_tool(Toolbox.get_tool(name))
        started = time.perf_counter()
        env.reset()
        samples["reset"].append(time.perf_counter() - started)
        if i + 1 < int(resets):
            env.close()
    text = (Path(task) / module).read_text().splitlines()
    line = probe["line"]
    plan = actions(probe, int(rounds))
    plan.append(("rewrite", "edit", {"path": module, "start": line, "end": line,
                                     "new_code": text[line - 1]}))
    for n, (label, name, args) in enumerate(plan):
        started = time.perf_counter()
        env.step(ToolCall(id=f"b{n}", name=name, arguments=args))
        samples.setdefault(label, []).append(time.perf_counter() - started)
    env.close()
    print(dump(summarize(samples)))


if __name__ == "__main__":
    main()
