"""What one bash tool command costs, as ratios against floors measured in the same run.

A: ``RepoEnv.step`` of the bash tool (the persistent shell: one ``eval`` line, the
   sentinel read back, the working copy refreshed, the step result built).
B: ``Terminal.run`` of the same command (a fresh ``sh -c`` per command: what an
   agent without a persistent shell pays, mini-swe-agent's way), on the same terminal.
C: a bare persistent ``bash`` under pexpect writing the command and reading an
   ``echo`` marker back (the floor of any persistent shell; no sandbox, no step).

Measured interleaved A B C A B C per terminal (local, bwrap), with the load average
noted; prints min, median, p90 and mean in ms and the ratios of the medians.

    python bench/bench_bash.py [--rounds 30] [--terminals local,bwrap] [--command true]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import pexpect

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.types import ToolCall


def _stats(ms: list[float]) -> str:
    ordered = sorted(ms)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return (f"min {ordered[0]:7.2f}  median {statistics.median(ordered):7.2f}  "
            f"p90 {p90:7.2f}  mean {statistics.fmean(ordered):7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--terminals", default="local,bwrap")
    parser.add_argument("--command", default="true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; command {args.command!r}; "
          f"{args.rounds} rounds interleaved")
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        for i in range(100):
            (repo / f"m{i}.py").write_text(f"x = {i}\n")
        for terminal in args.terminals.split(","):
            env = RepoEnv(repo, entrypoint="true", terminal=terminal, tools=["bash"])
            env.reset()
            env.step(ToolCall("bash", {"command": "true"}))  # the shell starts here
            bare = pexpect.spawn("bash", ["--noprofile", "--norc", "--noediting"],
                                 encoding="utf-8", echo=False, cwd=str(repo))
            bare.delaybeforesend = None
            bare.sendline("PS1=''; PS2=''")
            times = {"A step": [], "B run": [], "C bare": []}
            for i in range(args.rounds):
                t = time.perf_counter()
                env.step(ToolCall("bash", {"command": args.command}))
                times["A step"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                env.terminal.run(args.command, timeout=30)
                times["B run"].append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                bare.sendline(f"{args.command}; echo __done{i}__")
                bare.expect(f"__done{i}__")
                times["C bare"].append((time.perf_counter() - t) * 1000)
            bare.close(force=True)
            env.close()
            print(f"\n{terminal}:")
            for name, ms in times.items():
                print(f"  {name:7s} {_stats(ms)}")
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"  A / B {med['A step'] / med['B run']:.2f}x   "
                  f"A / C {med['A step'] / med['C bare']:.2f}x")


if __name__ == "__main__":
    main()
