"""Preloaded starts (issue 28 part 1) against a bare start of the same command.

1. eval of one test: ``RepoEnv.step(eval)`` whose pytest was preloaded by a spare
   (the episode's next eval is prepared and its spare started after each eval)
   against a bare ``python -m pytest`` of the same test started as the terminal
   starts commands (same sandbox, environment, folder; on docker an exec in the
   episode's container, read to its end); the same step with preloading off is
   printed too. Goal <= 0.5x.
2. pdb restart after a rewrite: a rewrite step (not timed), then the pdb step
   ``restart`` (the session closed and started again up to pdb's first prompt,
   prompt token set) from a spare, against a bare ``pexpect.spawn`` of the same
   debug command to its first prompt (its close not timed; on docker an exec with
   a pseudo-terminal in the episode's container). Goal <= 0.5x.

A spare imports while the agent thinks: before each timed start the bench waits
until the terminals' spares have finished their imports (``wait_spares``), so no
measurement (ours or the floor) runs beside a spare's imports. Interleaved
A B C A B C ..., with the load average noted; ms min / median / p90 / mean; the
ratio of the medians and of the minimums.

Two entrypoints: ``fast`` (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1: pytest alone) and
``plugins`` (pytest with every plugin installed beside it autoloaded; in this
repository's virtualenv hypothesis, syrupy, textual-snapshot, asyncio, anyio,
timeout: what a developer's environment looks like).

    python bench/bench_preload.py [--rounds 15] [--terminals local,bwrap,docker]
                                  [--entrypoints fast,plugins]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.terminals.docker import DockerProcess, DockerTerminal, _FrameReader
from dgym_tui.core.terminals.local import LocalProcess
from dgym_tui.core.terminals.output import BoundedOutput

ENTRYPOINTS = {
    "fast": "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider",
    "plugins": "python -m pytest -q -p no:cacheprovider",
}
DEBUG = "python -m pdb -m pytest -s -p no:cacheprovider"
SETTLE = 30.0  # seconds a spare may take to import (a loaded machine)


def make_repo(root: Path) -> None:
    """One module, one test of it."""
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "test_app.py").write_text("from app import add\n\n\ndef test_add():\n"
                                      "    assert add(1, 2) == 3\n")


def stats(samples: list[float]) -> tuple[float, float, float, float]:
    """(min, median, p90, mean) in ms."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (ordered[0] * 1e3, statistics.median(ordered) * 1e3, p90 * 1e3,
            statistics.mean(ordered) * 1e3)


def settle(*envs: RepoEnv) -> None:
    for env in envs:
        env.terminal.wait_spares(SETTLE)


def bare_pytest(env: RepoEnv, entrypoint: str) -> float:
    """A bare pytest of the test, started as the terminal starts commands."""
    started = time.perf_counter()
    if isinstance(env.terminal, DockerTerminal):  # an exec in the container, to its end
        _exec_id, sock, _pidfile = env.terminal._start_exec(f"{entrypoint} test_app.py", None,
                                                            tty=False)
        raw = getattr(sock, "_sock", sock)
        assert _FrameReader(raw, BoundedOutput(1 << 16)).pump(time.monotonic() + 120)
        elapsed = time.perf_counter() - started
        raw.close()
        sock.close()
        return elapsed
    with env.terminal.launch_spec(f"{entrypoint} test_app.py") as spec:
        subprocess.run(spec.argv, cwd=env.terminal.workdir, stdout=subprocess.DEVNULL,
                       stderr=subprocess.STDOUT, env=spec.env, pass_fds=spec.pass_fds,
                       preexec_fn=spec.preexec, check=True)
    return time.perf_counter() - started


#: starts that were not what the row asks for (a spare gone stale: e.g. a package
#: installed into the shared virtualenv meanwhile); the log says why
UNEXPECTED: list[str] = []


def eval_step(env: RepoEnv, expect: str) -> float:
    started = time.perf_counter()
    step = env.step({"name": "eval", "arguments": {}})
    elapsed = time.perf_counter() - started
    assert step.eval.passed == 1, step.observation
    if step.start != expect:
        UNEXPECTED.append(f"eval {step.start}, not {expect}")
    return elapsed


def bare_spawn(env: RepoEnv, command: str) -> float:
    """A bare pexpect spawn of ``command`` to its first prompt (close not timed)."""
    started = time.perf_counter()
    if isinstance(env.terminal, DockerTerminal):  # an exec with a pseudo-terminal
        exec_id, sock, pidfile = env.terminal._start_exec(command, None, tty=True)
        child = DockerProcess(env.terminal, sock, exec_id, pidfile)
    else:
        with env.terminal.launch_spec(command, interactive=True) as spec:
            child = LocalProcess(spec.argv[0], spec.argv[1:], cwd=env.terminal.workdir,
                                 encoding="utf-8", env=spec.env, pass_fds=spec.pass_fds,
                                 preexec=spec.preexec)
    child.expect_exact("(Pdb) ", timeout=60)
    elapsed = time.perf_counter() - started
    child.close(force=True)
    return elapsed


def restart_after_rewrite(env: RepoEnv, round_: int, expect: str) -> float:
    env.step({"name": "rewrite", "arguments": {"path": "app.py", "start": 1, "end": 1,
                                               "new_code": f"def add(a, b):  # {round_}"}})
    settle(env)
    started = time.perf_counter()
    step = env.step({"name": "pdb", "arguments": {"command": "restart"}})
    elapsed = time.perf_counter() - started
    assert step.data.get("restarted"), step.observation
    if step.start != expect:
        UNEXPECTED.append(f"pdb restart {step.start}, not {expect}")
    return elapsed


def run(kind: str, entry: str, rounds: int) -> list[tuple[str, list[float], list[float],
                                                          list[float]]]:
    entrypoint = ENTRYPOINTS[entry]
    with tempfile.TemporaryDirectory() as tmp:
        make_repo(Path(tmp))
        common = dict(entrypoint=f"{entrypoint} test_app.py", terminal=kind,
                      debug_entrypoint=f"{DEBUG} test_app.py",
                      tools=["eval", "pdb", "rewrite"])
        warm = RepoEnv(tmp, preload=True, **common)
        cold = RepoEnv(tmp, preload=False, **common)
        try:
            warm.reset()
            cold.reset()
            for env in (warm, cold):  # pdb sessions running (a spare for the next start)
                env.step({"name": "pdb", "arguments": {"command": "l"}})
            floor_e, ours_e, cold_e, floor_p, ours_p, cold_p = ([] for _ in range(6))
            for i in range(rounds):
                settle(warm, cold)
                floor_e.append(bare_pytest(warm, entrypoint))
                settle(warm, cold)
                ours_e.append(eval_step(warm, "preloaded"))
                settle(warm, cold)
                cold_e.append(eval_step(cold, "cold"))
                settle(warm, cold)
                floor_p.append(bare_spawn(warm, f"{DEBUG} test_app.py"))
                ours_p.append(restart_after_rewrite(warm, i, "preloaded"))
                cold_p.append(restart_after_rewrite(cold, i, "cold"))
        finally:
            warm.close()
            cold.close()
    return [(f"{kind} {entry}: eval of one test", floor_e, ours_e, cold_e),
            (f"{kind} {entry}: pdb restart after rewrite", floor_p, ours_p, cold_p)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--terminals", default="local,bwrap,docker")
    parser.add_argument("--entrypoints", default="fast,plugins")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    logging.getLogger("dgym_tui.core.env").setLevel(logging.WARNING)
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"({os.cpu_count()} CPUs); {args.rounds} rounds, interleaved")
    rows = []
    for kind in filter(None, args.terminals.split(",")):
        for entry in filter(None, args.entrypoints.split(",")):
            rows += run(kind, entry, args.rounds)
            print(f"  {kind} {entry} done, load {os.getloadavg()[0]:.2f}", flush=True)
    print(f"{'what':44} {'bare min/med/p90/mean ms':>32} {'preloaded min/med/p90/mean':>32} "
          f"{'cold (preload off) min/med/p90/mean':>36} {'ratio med':>9} {'ratio min':>9}")
    for what, floor, ours, cold in rows:
        f, o, c = stats(floor), stats(ours), stats(cold)
        print(f"{what:44} " + " ".join(f"{x:7.0f}" for x in f) + "  "
              + " ".join(f"{x:7.0f}" for x in o) + "  "
              + " ".join(f"{x:8.0f}" for x in c)
              + f" {o[1] / f[1]:8.2f}x {o[0] / f[0]:8.2f}x")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"starts not as asked: {len(UNEXPECTED)} {UNEXPECTED}")


if __name__ == "__main__":
    main()
