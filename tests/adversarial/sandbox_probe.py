"""Run one episode and some commands in its sandbox; print the results as one JSON line.

Started as a separate program by the adversarial tests (``conftest.run_probe``),
as root or as an unprivileged user (``setpriv``), so that the sandbox is
built exactly as dgym builds it for whoever started it:

    python sandbox_probe.py SPEC.json

SPEC holds ``repo`` (a folder), ``terminal`` (``bwrap`` / ``docker``),
``image``, ``options`` (the terminal options), ``commands`` (shell lines run
one after the other with ``env.terminal.run``), ``timeout`` (seconds per
command), ``background`` (a command spawned before them, ended after them),
and optionally ``entrypoint`` (default ``true``) and ``steps`` (tool calls
``{"name", "arguments"}`` given to ``env.step`` after the commands). Prints
``{"results": [{"exit_code", "output", "timed_out"}, ...], "steps": [{"observation",
"resolved", "error", "done"}, ...], "workdir", "scratch", "run_as"}``.
"""

from __future__ import annotations

import json
import sys
import time


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    from dgym_tui.core.env import RepoEnv

    env = RepoEnv(spec["repo"], entrypoint=spec.get("entrypoint") or "true",
                  terminal=spec["terminal"],
                  image=spec.get("image"), terminal_options=spec.get("options") or {})
    try:
        env.reset()
        background = None
        if spec.get("background"):
            background = env.terminal.spawn(spec["background"])
            time.sleep(1.0)
        results = []
        for command in spec["commands"]:
            res = env.terminal.run(command, timeout=spec.get("timeout", 60))
            results.append({"exit_code": res.exit_code, "output": res.output,
                            "timed_out": res.timed_out})
        steps = []
        for call in spec.get("steps") or []:
            step = env.step(call)
            steps.append({"observation": step.observation, "resolved": step.resolved,
                          "error": step.error, "done": step.done})
        if background is not None:
            background.close(force=True)
        report = {"results": results, "steps": steps, "workdir": env.terminal.workdir,
                  "host_root": str(env.workspace.root), "scratch": env.terminal.scratch,
                  "run_as": getattr(env.terminal, "run_as", None)}
    finally:
        env.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
