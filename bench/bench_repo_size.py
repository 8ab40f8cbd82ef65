"""Step cost against repository size: view, listdir, grep, pdb p, rewrite, eval overhead.

Builds synthetic repositories of 100 / 1,000 / 10,000 Python files (folders
of 50 modules of ~40 lines, plus one buggy module and its test), runs each
action ``--rounds`` times on the local terminal and prints median and p90
milliseconds per action and size. "eval overhead" is one eval step minus a
bare run of the same command in the working copy, measured alternately.

    python bench/bench_repo_size.py [--sizes 100,1000,10000] [--rounds 20]

Run it on two checkouts (before / after a change) on the same machine and
compare the tables; the machine load is printed with each table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dgym_tui import RepoEnv, ToolCall

ENTRYPOINT = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider test_target.py"
TARGET = "def middle(values):\n    ordered = sorted(values)\n    return ordered[len(ordered) // 2 - 1]\n"
TEST = "from target import middle\n\n\ndef test_middle():\n    assert middle([3, 1, 2]) == 2\n"


def make_repo(root: Path, files: int) -> Path:
    """Write ``files`` modules (50 per folder) plus target.py / test_target.py into ``root``."""
    body = "".join(f"def helper_{i}(x):\n    return x * {i}  # filler line\n\n" for i in range(13))
    for n in range(files):
        folder = root / f"pkg{n // 50:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{n % 50:02d}.py").write_text(f"# module {n}\n{body}")
    (root / "target.py").write_text(TARGET)
    (root / "test_target.py").write_text(TEST)
    return root


def timed(env: RepoEnv, name: str, **arguments) -> float:
    started = time.perf_counter()
    result = env.step(ToolCall(name=name, arguments=arguments))
    elapsed = time.perf_counter() - started
    if result.error:
        raise SystemExit(f"{name} {arguments} failed: {result.observation[:200]}")
    return elapsed


def bench_size(files: int, rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {k: [] for k in
                                       ("view", "listdir", "grep", "grep rare", "pdb p", "rewrite",
                                        "eval overhead")}
    with tempfile.TemporaryDirectory(prefix="dgym-bench-") as tmp:
        repo = make_repo(Path(tmp) / "repo", files)
        with RepoEnv(repo, entrypoint=ENTRYPOINT) as env:
            env.reset()
            env.step(ToolCall(name="pdb", arguments={"command": "b target.py:2"}))
            env.step(ToolCall(name="pdb", arguments={"command": "c"}))
            variants = ["    ordered = sorted(values)  # a\n", "    ordered = sorted(values)  # b\n"]
            for _ in range(rounds):
                samples["view"].append(timed(env, "view", path="pkg000/mod07.py", start=1, end=40))
                samples["listdir"].append(timed(env, "listdir", path="."))
                samples["grep"].append(timed(env, "grep", pattern="def helper_12"))  # in every file
                samples["grep rare"].append(timed(env, "grep", pattern="def middle"))  # in one file
                samples["pdb p"].append(timed(env, "pdb", command="p values"))
            for i in range(rounds):
                samples["rewrite"].append(timed(env, "rewrite", path="target.py", start=2, end=2,
                                                new_code=variants[i % 2]))
            for _ in range(max(3, rounds // 4)):
                bare_started = time.perf_counter()
                subprocess.run(ENTRYPOINT, shell=True, cwd=env.workspace.root,
                               capture_output=True, check=False)
                bare = time.perf_counter() - bare_started
                samples["eval overhead"].append(timed(env, "eval") - bare)
    return samples


def fmt(values: list[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
    return f"{statistics.median(ms):8.2f} {p90:8.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    # the bare run and the eval step must find the same python (the local terminal's PATH)
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = {size: bench_size(size, args.rounds) for size in sizes}
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; "
          f"{args.rounds} rounds; ms median / p90; python {sys.version.split()[0]}")
    header = f"{'action':14}" + "".join(f"{f'{size} files':>18}" for size in sizes)
    print(header)
    for action in results[sizes[0]]:
        print(f"{action:14}" + "".join(f"{fmt(results[s][action]):>18}" for s in sizes))


if __name__ == "__main__":
    main()
