"""What ``RepoEnv.reset()`` costs against repository size: a copy against an overlay.

    python bench/bench_reset.py [--sizes 100,10000] [--rounds 5] [--terminals local,bwrap,docker]
        [--layout flat|nested]

On bench/repo_size_plan.py's synthetic repositories (50 modules of ~40 lines
per folder, plus target.py and its test), each round measures, the cases in
turn (A B C ..., then backwards), so all share the machine's load:

- ``reset T overlay``: ``RepoEnv.reset()`` on terminal T (the working copy is
  an overlay of the original, the default: nothing copied; issue 28 part 2),
  one eval of ``test_target.py``;
- ``reset T copy``: the same with ``terminal_options={"overlay": False}``
  (the copy every terminal made before);
- ``reset T bare-overlay`` (``--kinds overlay,bare-overlay``): the overlay without
  its look-ahead thread (``core/fs/lookahead.py``), as before that thread: an A/B
  of it in the same run;
- ``workspace overlay`` / ``workspace copy``: ``Workspace()`` alone, the
  part of reset that depends on the repository's size;
- ``eval T plain`` (local and bwrap): the command the reset's eval runs, run
  once through a fresh terminal of that kind in a plain folder holding the
  same repository (no working copy, no overlay; only the run timed): what
  pytest alone costs in this tree. A twin of the original, because a bwrap
  terminal without an overlay hands its folder to the sandbox's uid
  (``chown``) at its start, which must not touch the original the resets use.

Each environment is closed untimed; one round of every case runs first, untimed
(imports and first-use costs), unless ``--warmup 0``. Prints median, p90 and mean milliseconds
per case and size with the machine's load before and after, the CPU time of
each reset (this process and the children it waited for: on ``local`` the
eval's pytest too; steadier than wall time on a shared machine), each reset
split into its eval's run (the terminal's ``run`` of the entrypoint) and the
rest (the working copy, the terminal's start, the report, the spares), then
issue 28's two goals for each terminal's overlay: reset at the largest size /
at the smallest (<= 1.1; also as the ratio of the fastest runs, the median of
each round's own ratio (its two runs seconds apart, under the same load) and the
ratio of the CPU times; and the plain eval's, pytest's own), and the overlay's
reset / the copy's at the smallest size (<= 1.0, "no slower than today"); and
where the overlay reset's growth goes: the rest, the eval, and the same eval
in the plain original (pytest's own growth, the part dgym cannot remove
without changing what pytest does).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from repo_size_plan import ENTRYPOINT, ENV, interleaved, make_repo, print_table  # noqa: E402

from dgym_tui import RepoEnv  # noqa: E402
from dgym_tui.core.evaluation import pytest_plugin  # noqa: E402
from dgym_tui.core.fs import workspace as workspace_module  # noqa: E402
from dgym_tui.core.fs.lookahead import LookAhead  # noqa: E402
from dgym_tui.core.fs.workspace import Workspace  # noqa: E402
from dgym_tui.core.terminals.bwrap import BwrapTerminal  # noqa: E402
from dgym_tui.core.terminals.docker import DockerTerminal  # noqa: E402
from dgym_tui.core.terminals.identity import sandbox_ids  # noqa: E402
from dgym_tui.core.terminals.local import LocalTerminal  # noqa: E402

#: Seconds of each terminal ``run`` since the list was last cleared (a reset runs one:
#: its eval).
_RUNS: list[float] = []


def _timing_runs(cls: type) -> None:
    """Make ``cls.run`` (a terminal's) append its wall time to :data:`_RUNS`."""
    real = cls.run

    def run(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return real(self, *args, **kwargs)
        finally:
            _RUNS.append(time.perf_counter() - started)

    cls.run = run


for _cls in (LocalTerminal, DockerTerminal):  # BwrapTerminal runs through LocalTerminal's
    _timing_runs(_cls)


def _cpu() -> float:
    """CPU seconds of this process and of its children waited for so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class _NoLookAhead:
    """Stands for ``workspace.LookAhead`` in the ``bare-overlay`` cases: starts nothing."""

    def __init__(self, fd: int, delay: float = 0.0, within: object = None) -> None:
        pass

    def stop(self) -> None:
        pass


def _reset(repo: Path, terminal: str, kind: str, cpu: list[float],
           split: dict[str, list[float]]) -> Callable[[], float]:
    def run() -> float:
        env = RepoEnv(repo, entrypoint=ENTRYPOINT, terminal=terminal,
                      terminal_options={"overlay": kind != "copy"})
        try:
            _RUNS.clear()
            if kind == "bare-overlay":
                workspace_module.LookAhead = _NoLookAhead  # type: ignore[misc,assignment]
            started, cpu_started = time.perf_counter(), _cpu()
            try:
                result = env.reset()
            finally:
                workspace_module.LookAhead = LookAhead  # type: ignore[misc]
            elapsed = time.perf_counter() - started
            cpu.append(_cpu() - cpu_started)
            if len(_RUNS) != 1:
                raise SystemExit(f"reset ran {len(_RUNS)} commands, not its eval alone")
            split.setdefault("eval", []).append(_RUNS[0])
            split.setdefault("rest", []).append(elapsed - _RUNS[0])
            _check_ran(result.observation, "reset's eval")
        finally:
            env.close()
            _reap()
        return elapsed
    return run


def _check_ran(output: str, what: str) -> None:
    """Stop the bench when ``output`` shows no pytest result (nothing was timed)."""
    if " passed" not in output and " failed" not in output:
        raise SystemExit(f"{what} did not run: {output[-300:]}")


def _reap() -> None:
    """Wait for the children a closed environment killed (its spares), untimed, so their
    CPU time is not counted in the next case's reset."""
    for _ in range(2):
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                break
        time.sleep(0.02)


def _plain_eval(repo: Path, terminal: str) -> Callable[[], float]:
    """The reset's eval command run in folder ``repo`` through a fresh ``terminal``
    (``local`` or ``bwrap``; no overlay, no working copy): only the run is timed."""
    def run() -> float:
        term: LocalTerminal = (BwrapTerminal(source=str(repo)) if terminal == "bwrap"
                               else LocalTerminal())
        term.preload = False
        try:
            term.start(str(repo))
            pytest_plugin.install(term)
            command, _report = pytest_plugin.prepare(term, ENTRYPOINT)
            started = time.perf_counter()
            res = term.run(command, timeout=120)
            elapsed = time.perf_counter() - started
            _check_ran(res.output, "the plain eval")
        finally:
            term.close()
            _reap()
        return elapsed
    return run


def _workspace(repo: Path, overlay: bool) -> Callable[[], float]:
    def run() -> float:
        ids = sandbox_ids() if overlay else None
        started = time.perf_counter()
        ws = Workspace(repo, overlay=overlay, run_as=ids)
        elapsed = time.perf_counter() - started
        ws.cleanup()
        return elapsed
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100,10000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--terminals", default="local,bwrap,docker")
    parser.add_argument("--kinds", default="overlay,copy",
                        help="working copies to time: overlay, copy, bare-overlay (the overlay "
                             "without its look-ahead thread), comma-separated (a copy of "
                             "10,000 files leaves writeback that slows the case after it)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--layout", choices=("flat", "nested"), default="flat",
                        help="flat: the module folders in the repository's root (200 root "
                             "entries at 10,000 files, 2 at 100: pytest's own collection "
                             "scans them); nested: in its folder src/ (3 root entries at "
                             "every size)")
    args = parser.parse_args()
    under = "src" if args.layout == "nested" else ""
    os.environ.update(ENV)
    sizes = [int(s) for s in args.sizes.split(",")]
    terminals = args.terminals.split(",")
    kinds = args.kinds.split(",")
    cases: dict[str, Callable[[], float]] = {}
    cpu: dict[str, list[float]] = {}
    split: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(prefix="dgym-bench-reset-") as tmp:
        for size in sizes:
            repo = make_repo(Path(tmp) / f"repo{size}", size, under)
            twin = make_repo(Path(tmp) / f"plain{size}", size, under)
            for terminal in terminals:
                for kind in kinds:
                    name = f"{size:>6} files reset {terminal} {kind}"
                    cpu[name], split[name] = [], {}
                    cases[name] = _reset(repo, terminal, kind, cpu[name], split[name])
                if terminal in ("local", "bwrap"):
                    cases[f"{size:>6} files eval {terminal} plain"] = _plain_eval(twin, terminal)
            for kind in kinds:
                if kind != "bare-overlay":
                    cases[f"{size:>6} files workspace {kind}"] = _workspace(repo,
                                                                             kind == "overlay")
        if args.warmup:
            interleaved(cases, args.warmup)
            for values in (*cpu.values(), *(p for parts in split.values()
                                            for p in parts.values())):
                values.clear()
        samples, load_before, load_after = interleaved(cases, args.rounds)
    print_table(f"reset() and working-copy costs on {time.strftime('%Y-%m-%d %H:%M')}, "
                f"{os.cpu_count()} cores, load {load_before:.2f} before / {load_after:.2f} "
                f"after, {args.rounds} rounds, interleaved, uid {os.geteuid()}, "
                f"{args.layout} layout", samples,
                width=36)
    print_table("CPU time of the same resets (dgym's process and the children it waited for: "
                "the local terminal's eval; not a sandbox's processes)", cpu, width=36)
    for part in ("eval", "rest"):
        print_table(f"the same resets, {part}" + (" (the terminal's run of the entrypoint)"
                                                  if part == "eval" else
                                                  " (reset minus its eval's run)"),
                    {name: parts[part] for name, parts in split.items()}, width=36)

    def median(size: int, case: str, data: dict[str, list[float]] = samples) -> float:
        return statistics.median(data[f"{size:>6} files {case}"])

    def fastest(size: int, case: str) -> float:
        return min(samples[f"{size:>6} files {case}"])

    def paired(case: str) -> float:
        """Median over rounds of (largest size / smallest size) within each round: the two
        runs of a round are seconds apart, so they share the machine's load."""
        return statistics.median(b / a for a, b in zip(samples[f"{small:>6} files {case}"],
                                                       samples[f"{big:>6} files {case}"],
                                                       strict=True))

    small, big = min(sizes), max(sizes)
    for terminal in terminals:
        overlay, copy = f"reset {terminal} overlay", f"reset {terminal} copy"
        if small != big:
            for kind in kinds:
                case = f"reset {terminal} {kind}"
                print(f"{case}: at {big} files / at {small} files = "
                      f"{median(big, case) / median(small, case):.2f}"
                      + ("  (goal <= 1.1)" if kind == "overlay" else "")
                      + f"; fastest runs {fastest(big, case) / fastest(small, case):.2f}"
                      + f"; paired by round {paired(case):.2f}"
                      + f"; CPU time {median(big, case, cpu) / median(small, case, cpu):.2f}")
            if terminal in ("local", "bwrap"):
                plain = f"eval {terminal} plain"
                print(f"{plain} (pytest alone, no working copy): at {big} files / at {small} "
                      f"files = {median(big, plain) / median(small, plain):.2f}; paired by "
                      f"round {paired(plain):.2f}")
        if "overlay" in kinds and "copy" in kinds:
            print(f"{overlay} / {copy} at {small} files = "
                  f"{median(small, overlay) / median(small, copy):.2f}  (goal <= 1.0)")
        for kind in kinds:
            if small != big and kind != "copy":
                _growth(f"reset {terminal} {kind}", terminal, small, big, samples, split)


def _growth(case: str, terminal: str, small: int, big: int, samples: dict[str, list[float]],
            split: dict[str, dict[str, list[float]]]) -> None:
    """Print where the growth of ``case`` (an overlay reset on ``terminal``) from ``small``
    to ``big`` files goes: the rest of reset, its eval, and the same eval in the plain
    original (pytest's own)."""
    def ms(data: dict[str, list[float]], case: str, size: int) -> float:
        return statistics.median(data[f"{size:>6} files {case}"]) * 1000

    parts = {part: {name: values[part] for name, values in split.items()}
             for part in ("eval", "rest")}
    total = (ms(samples, case, small), ms(samples, case, big))
    line = (f"{case}, ms from {small} to {big} files: reset {total[0]:.0f} -> {total[1]:.0f} "
            f"({total[1] - total[0]:+.0f})")
    for part in ("rest", "eval"):
        a, b = ms(parts[part], case, small), ms(parts[part], case, big)
        line += f"; {part} {a:.0f} -> {b:.0f} ({b - a:+.0f})"
    plain = f"eval {terminal} plain"
    if f"{small:>6} files {plain}" in samples:
        a, b = ms(samples, plain, small), ms(samples, plain, big)
        line += (f"; the same eval in the plain original {a:.0f} -> {b:.0f} ({b - a:+.0f}): "
                 f"with only pytest's own growth the ratio would be "
                 f"{(total[0] + b - a) / total[0]:.2f}")
    print(line)


if __name__ == "__main__":
    main()
