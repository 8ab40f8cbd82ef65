"""The symlink-swap race against host-side file access, with counts.

Code inside the sandbox swaps folder ``d`` of the working copy with a
symbolic link to a host folder, in a loop, with ``renameat2(...,
RENAME_EXCHANGE)`` (through ctypes); meanwhile the host-side tools alternate
``view d/x.txt``, ``rewrite d/new.txt``, ``listdir d`` and ``grep`` through
``RepoEnv.step``. Counted: host reads (an observation showing the host
file's text), host writes (files appearing in the host folder), exceptions
out of ``env.step`` and internal errors. All must stay 0.

    python bench/race_symlink_swap.py [--seconds 40] [--terminal local|docker] [--image TAG]

tests/test_adversarial_fs.py runs :func:`run_race` for ~5 s on every terminal.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

HOST_SECRET = "HOST SECRET 7f3a"

#: Runs inside the sandbox: swap ``d`` and the link ``l`` until ``stop`` exists or time runs out.
SWAPPER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
host, seconds = sys.argv[1], float(sys.argv[2])
if not os.path.lexists("l"):
    os.symlink(host, "l")
swaps = 1 if libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE) == 0 else 0
if not swaps and ctypes.get_errno() == 18:  # EXDEV: an overlay refuses to move the original's
    import shutil  # folders; one made here moves freely
    shutil.copytree("d", "d.new")
    for _ in range(10000):  # the host's rewrite of d/new.txt may make d again meanwhile
        shutil.rmtree("d", ignore_errors=True)
        try:
            os.rename("d.new", "d")
            break
        except OSError:
            pass
end = time.time() + seconds
while time.time() < end and not os.path.exists("stop"):
    if libc.renameat2(AT_FDCWD, b"d", AT_FDCWD, b"l", RENAME_EXCHANGE) == 0:
        swaps += 1
with open("swaps.count", "w") as fh:
    fh.write(str(swaps))
"""


def make_repo(root: Path, host_dir: Path) -> Path:
    """A repository with folder ``d`` and the swapper script; a host folder with a secret."""
    (root / "d").mkdir(parents=True)
    (root / "d" / "x.txt").write_text("inside the working copy\n")
    (root / "swapper.py").write_text(SWAPPER)
    (root / "test_ok.py").write_text("def test_ok():\n    pass\n")
    host_dir.mkdir(parents=True, exist_ok=True)
    (host_dir / "x.txt").write_text(HOST_SECRET + "\n")
    return root


def run_race(env, host_dir: Path, seconds: float) -> dict[str, int]:
    """Run the race on a reset ``env`` whose repository came from :func:`make_repo`.

    Returns:
        ``{"steps", "host_reads", "host_writes", "exceptions", "internal_errors",
        "swaps"}``.
    """
    from dgym_tui import ToolCall

    before = set(os.listdir(host_dir))
    # an interactive session of the terminal: sandboxes end a run's background processes
    swapper = env.terminal.spawn(f"python swapper.py {host_dir} {seconds + 5:g}")
    counts = dict(steps=0, host_reads=0, host_writes=0, exceptions=0, internal_errors=0,
                  swaps=0)
    actions = [ToolCall("view", {"path": "d/x.txt"}),
               ToolCall("rewrite", {"path": "d/new.txt", "new_code": "written by rewrite"}),
               ToolCall("listdir", {"path": "d"}),
               ToolCall("grep", {"pattern": "SECRET", "path": "d"}),
               ToolCall("view", {"path": "l/x.txt"})]
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        action = actions[i % len(actions)]
        i += 1
        try:
            result = env.step(action)
        except Exception:  # noqa: BLE001  counted: a step must never raise
            counts["exceptions"] += 1
            continue
        counts["steps"] += 1
        if HOST_SECRET in result.observation:
            counts["host_reads"] += 1
        if "internal error" in result.observation:
            counts["internal_errors"] += 1
    env.terminal.run("touch stop", timeout=30)
    deadline = time.monotonic() + 15
    count_file = Path(env.workspace.root) / "swaps.count"
    while not count_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if count_file.exists():
        counts["swaps"] = int(count_file.read_text() or 0)
    swapper.close(force=True)
    counts["host_writes"] = len(set(os.listdir(host_dir)) - before)
    return counts


def main() -> None:
    from dgym_tui import RepoEnv

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40)
    parser.add_argument("--terminal", default="local")
    parser.add_argument("--image", default=os.environ.get("DGYM_TEST_IMAGE", "dgym-tui/sandbox:test"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dgym-race-") as tmp:
        host_dir = Path(tmp) / "host"
        repo = make_repo(Path(tmp) / "repo", host_dir)
        image = args.image if args.terminal == "docker" else None
        with RepoEnv(repo, entrypoint="true", terminal=args.terminal, image=image) as env:
            env.reset()
            counts = run_race(env, host_dir, args.seconds)
    print(f"{args.terminal}, {args.seconds:g} s: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
