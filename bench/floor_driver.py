"""The floor of the environment benchmark: the bare commands, no environment.

    python bench/floor_driver.py TASK

Answers ``round`` lines on stdin (see plan.serve) with one sample: ``eval``, a
bare ``python -m pytest`` of the task's entrypoint in a copy of the task
folder, with this interpreter first on PATH (as our local terminal runs it).
The target for our local eval is within 1.05x of this (shared/DESIGN.md).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from plan import serve  # noqa: E402

from dgym_tui.benchmarks import get_benchmark  # noqa: E402


def main() -> None:
    task = get_benchmark("mini").load(sys.argv[1])
    argv = shlex.split(task.entrypoint)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")

    def run_round() -> tuple[dict, dict]:
        with tempfile.TemporaryDirectory() as tmp:
            work = shutil.copytree(task.path, Path(tmp) / "w")
            started = time.perf_counter()
            proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
            elapsed = time.perf_counter() - started
        ok = " passed" in proc.stdout or " failed" in proc.stdout
        return {"eval": elapsed}, {} if ok else {"eval": proc.stdout[-300:] + proc.stderr[-300:]}

    serve(run_round)


if __name__ == "__main__":
    main()
