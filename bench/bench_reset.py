"""What ``RepoEnv.reset()`` costs against repository size, and what a copy-free working copy would.

    python bench/bench_reset.py [--sizes 100,1000,10000] [--rounds 5]

On bench/repo_size_plan.py's synthetic repositories (50 modules of ~40 lines
per folder, plus target.py and its test), each round measures, the cases in
turn (A B C D E, then backwards), so all share the machine's load:

- ``reset``: ``RepoEnv.reset()`` on the local terminal (copy, index, terminal,
  one eval of ``test_target.py``), the environment closed untimed;
- ``copy /tmp``: ``Workspace()`` alone (the copy through folder descriptors
  and the change index) in the system's temporary folder, as reset does;
- ``copy tmpfs``: the same with the working copy on ``/dev/shm`` (tmpfs), to
  tell file creation on this disk from the copy's own work;
- ``overlay mount``: what an overlay working copy costs instead of a copy:
  ``unshare -Urm`` + ``mount -t overlay`` (lower = the repository) + one
  listing of the merged folder, minus a bare ``unshare -Urm true`` measured
  in the same round (``shared/DESIGN.md``: works unprivileged on this kernel);
- ``index scan``: the change index's first scan of the merged tree, which an
  overlay working copy would still pay (inotify watches one per folder).

Prints median, p90 and mean milliseconds per case and size with the machine's
load before and after, then the issue-28 ratio reset(10,000) / reset(100).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from repo_size_plan import ENTRYPOINT, ENV, interleaved, make_repo, print_table  # noqa: E402

from dgym_tui import RepoEnv  # noqa: E402
from dgym_tui.core.fs.safefs import SafeTree  # noqa: E402
from dgym_tui.core.fs.treeindex import TreeIndex  # noqa: E402
from dgym_tui.core.fs.workspace import Workspace  # noqa: E402


def _reset(repo: Path) -> Callable[[], float]:
    def run() -> float:
        env = RepoEnv(repo, entrypoint=ENTRYPOINT, terminal="local")
        try:
            started = time.perf_counter()
            result = env.reset()
            elapsed = time.perf_counter() - started
            if " passed" not in result.observation and " failed" not in result.observation:
                raise SystemExit(f"reset's eval did not run: {result.observation[-300:]}")
        finally:
            env.close()
        return elapsed
    return run


def _copy(repo: Path, folder: str | None) -> Callable[[], float]:
    def run() -> float:
        saved = tempfile.tempdir
        tempfile.tempdir = folder
        try:
            started = time.perf_counter()
            ws = Workspace(repo)
            elapsed = time.perf_counter() - started
        finally:
            tempfile.tempdir = saved
        ws.cleanup()
        return elapsed
    return run


def _overlay(repo: Path, scratch: Path) -> Callable[[], float]:
    script = ('set -e; mount -t overlay overlay -o "lowerdir=$1,upperdir=$2/u,workdir=$2/w" '
              '"$2/m"; ls "$2/m" >/dev/null')

    def timed(argv: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        return time.perf_counter() - started

    def run() -> float:
        base = Path(tempfile.mkdtemp(dir=scratch))
        for name in ("u", "w", "m"):
            (base / name).mkdir()
        try:
            bare = timed(["unshare", "-Urm", "true"])
            mounted = timed(["unshare", "-Urm", "sh", "-c", script, "sh", str(repo), str(base)])
        finally:
            shutil.rmtree(base, ignore_errors=True)
        return max(0.0, mounted - bare)
    return run


def _scan(repo: Path) -> Callable[[], float]:
    def run() -> float:
        tree = SafeTree(repo)
        try:
            started = time.perf_counter()
            index = TreeIndex(tree, lambda rel, is_dir: True)
            elapsed = time.perf_counter() - started
            index.close()
        finally:
            tree.close()
        return elapsed
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    os.environ.update(ENV)
    sizes = [int(s) for s in args.sizes.split(",")]
    overlay_ok = shutil.which("unshare") is not None
    cases: dict[str, Callable[[], float]] = {}
    with tempfile.TemporaryDirectory(prefix="dgym-bench-reset-") as tmp:
        for size in sizes:
            repo = make_repo(Path(tmp) / f"repo{size}", size)
            cases[f"{size:>6} files reset"] = _reset(repo)
            cases[f"{size:>6} files copy /tmp"] = _copy(repo, None)
            cases[f"{size:>6} files copy tmpfs"] = _copy(repo, "/dev/shm")
            if overlay_ok:
                cases[f"{size:>6} files overlay mount"] = _overlay(repo, Path(tmp))
            cases[f"{size:>6} files index scan"] = _scan(repo)
        samples, load_before, load_after = interleaved(cases, args.rounds)
    print_table(f"reset() and working-copy costs on {time.strftime('%Y-%m-%d %H:%M')}, "
                f"{os.cpu_count()} cores, load {load_before:.2f} before / {load_after:.2f} "
                f"after, {args.rounds} rounds, interleaved", samples, width=28)
    small, big = f"{min(sizes):>6} files reset", f"{max(sizes):>6} files reset"
    if small != big:
        ratio = statistics.median(samples[big]) / statistics.median(samples[small])
        print(f"goal (issue 28): reset at {max(sizes)} files / at {min(sizes)} files = "
              f"{ratio:.2f} (goal <= 1.1)")


if __name__ == "__main__":
    main()
