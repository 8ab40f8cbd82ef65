"""What the sandbox work costs, as ratios against their floors measured in the same run.

1. eval: ``RepoEnv.run_eval`` (the structured test report: our pytest plugin,
   one JSON line per test, read back) against a bare ``python -m pytest`` of
   the same tests in the same folder. Target <= 1.05x.
2. pdb restart: closing a pdb session and starting it again up to its first
   prompt (what a rewrite -> next pdb command pays) against a bare
   ``pexpect.spawn`` of the same command to its first prompt (its close not
   timed). Target <= 1.15x.

3. rewrite: one ``RepoEnv.step`` of the rewrite tool (one line of a 40-line
   file; checks, write, change index, diff, step result) in a repository of
   100, 1,000 and 10,000 files, against reading that file, replacing the line,
   writing it back and ``difflib.unified_diff`` of it: the cost must follow the
   file rewritten, not the repository (the ratio must not grow with the files).
   A second floor writes as the working copy does, to a new file renamed over
   the old one (atomic for a reader; on ext4 the rename flushes the new data).

Each is measured interleaved A B A B (eval and restart on the local and the
bwrap terminal, rewrite on local), with the load average noted. Prints min,
median, p90 and mean in ms; on a busy machine the ratio of the minimums is the
least noisy.

    python bench/bench_sandbox.py [--rounds 20] [--tests 50] [--terminals local,bwrap]
                                  [--files 100,1000,10000]
"""

from __future__ import annotations

import argparse
import difflib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.pdb.session import PdbSession
from dgym_tui.core.terminals.local import LocalProcess
from dgym_tui.core.types import ToolCall

PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"


def make_repo(root: Path, tests: int) -> None:
    """A small repository: one module, ``tests`` test functions (one fails)."""
    (root / "app.py").write_text("def add(a, b):\n    return a + b\n")
    body = ["from app import add\n"]
    for i in range(tests):
        body.append(f"\ndef test_{i}():\n    assert add({i}, 1) == {i + 1 if i else 0}\n")
    (root / "test_app.py").write_text("".join(body))


def stats(samples: list[float]) -> tuple[float, float, float, float]:
    """(min, median, p90, mean) in ms: the minimum is the least disturbed by machine load."""
    ordered = sorted(samples)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return (ordered[0] * 1e3, statistics.median(ordered) * 1e3, p90 * 1e3,
            statistics.mean(ordered) * 1e3)


def bare_pytest(env: RepoEnv) -> float:
    """A bare pytest, started as the terminal starts commands (in the same sandbox)."""
    started = time.perf_counter()
    with env.terminal.launch_spec(PYTEST + " test_app.py") as spec:
        subprocess.run(spec.argv, cwd=env.terminal.workdir, stdout=subprocess.DEVNULL,
                       stderr=subprocess.STDOUT, env=spec.env, pass_fds=spec.pass_fds)
    return time.perf_counter() - started


def our_eval(env: RepoEnv) -> float:
    started = time.perf_counter()
    summary, _ = env.run_eval()
    elapsed = time.perf_counter() - started
    assert summary.failed == 1 and not summary.problem, summary
    return elapsed


def bare_restart(env: RepoEnv, command: str) -> float:
    """A bare pexpect spawn of ``command`` to its first prompt, started as the terminal starts
    commands (the descriptors the sandbox binds are passed as the terminal passes them)."""
    started = time.perf_counter()
    with env.terminal.launch_spec(command, interactive=True) as spec:
        child = LocalProcess(spec.argv[0], spec.argv[1:], cwd=env.terminal.workdir,
                             encoding="utf-8", env=spec.env, pass_fds=spec.pass_fds)
    child.expect_exact("(Pdb) ", timeout=30)
    elapsed = time.perf_counter() - started  # to the first prompt; closing is not timed
    child.close(force=True)
    return elapsed


def our_restart(session: PdbSession) -> float:
    started = time.perf_counter()
    session.close()
    session.start(timeout=30)
    return time.perf_counter() - started


def run(kind: str, rounds: int, tests: int) -> list[tuple[str, str, list[float], list[float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        make_repo(Path(tmp), tests)
        env = RepoEnv(tmp, entrypoint=f"{PYTEST} test_app.py", terminal=kind)
        try:
            env.reset()
            command = "python -m pdb app.py"
            session = PdbSession(env.terminal, command)
            session.start(timeout=30)
            a_eval, b_eval, a_pdb, b_pdb = [], [], [], []
            for _ in range(rounds):
                a_eval.append(bare_pytest(env))
                b_eval.append(our_eval(env))
                a_pdb.append(bare_restart(env, command))
                b_pdb.append(our_restart(session))
            session.close()
        finally:
            env.close()
    return [(kind, "eval vs bare pytest", a_eval, b_eval),
            (kind, "pdb restart vs bare spawn", a_pdb, b_pdb)]


TARGET = "".join(f"def f_{i}(x):\n    return x + {i}\n" for i in range(20))  # 40 lines


def make_big_repo(root: Path, files: int) -> None:
    """``files`` small modules in folders of 100, plus ``target.py`` (40 lines)."""
    for i in range(files - 1):
        folder = root / f"pkg_{i // 100}"
        folder.mkdir(exist_ok=True)
        (folder / f"mod_{i}.py").write_text(f"VALUE = {i}\n\n\ndef get():\n    return VALUE\n")
    (root / "target.py").write_text(TARGET)


def bare_rewrite(path: Path, line: str, rename: bool = False) -> float:
    """Read, replace line 2, write (in place, or to a new file renamed over it), unified
    diff: the floor of a one-line rewrite."""
    started = time.perf_counter()
    old = path.read_text()
    lines = old.splitlines(keepends=True)
    lines[1] = line
    new = "".join(lines)
    if rename:
        tmp = path.with_name(path.name + ".new")
        tmp.write_text(new)
        os.rename(tmp, path)
    else:
        path.write_text(new)
    diff = "".join(difflib.unified_diff(old.splitlines(keepends=True), lines,
                                        "a/target.py", "b/target.py"))
    elapsed = time.perf_counter() - started
    assert diff and new != old
    return elapsed


def our_rewrite(env: RepoEnv, line: str) -> float:
    call = ToolCall("rewrite", {"path": "target.py", "start": 2, "end": 2, "new_code": line})
    started = time.perf_counter()
    result = env.step(call)
    elapsed = time.perf_counter() - started
    assert not result.error and "Replaced line 2" in result.observation, result.observation
    return elapsed


def run_rewrite(files: int, rounds: int) -> list[tuple[str, str, list[float], list[float]]]:
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as plain:
        make_big_repo(Path(tmp), files)
        (Path(plain) / "target.py").write_text(TARGET)
        env = RepoEnv(tmp, entrypoint="true", terminal="local")
        try:
            env.reset()
            floor, renamed, ours = [], [], []
            for i in range(rounds):
                line, other = f"    return x + {i} + 1\n", f"    return x + {i} + 2\n"
                floor.append(bare_rewrite(Path(plain) / "target.py", line))
                renamed.append(bare_rewrite(Path(plain) / "target.py", other, rename=True))
                ours.append(our_rewrite(env, line))
        finally:
            env.close()
    return [("local", f"rewrite {files:,} files", floor, ours),
            ("local", "  vs write + rename", renamed, ours)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--tests", type=int, default=50)
    parser.add_argument("--terminals", default="local,bwrap")
    parser.add_argument("--files", default="100,1000,10000",
                        help="repository sizes for the rewrite measurement")
    args = parser.parse_args()
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]
    print(f"load average before: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs); "
          f"{args.rounds} rounds, interleaved")
    rows = []
    for kind in filter(None, args.terminals.split(",")):
        rows += run(kind, args.rounds, args.tests)
    for files in filter(None, args.files.split(",")):
        rows += run_rewrite(int(files), args.rounds)
    print(f"{'terminal':8} {'what':26} {'floor min/med/p90/mean ms':>32} "
          f"{'ours min/med/p90/mean ms':>32} {'ratio min':>9} {'ratio mean':>10}")
    for kind, what, floor, ours in rows:
        f, o = stats(floor), stats(ours)
        print(f"{kind:8} {what:26} " + " ".join(f"{x:7.1f}" for x in f) + "  "
              + " ".join(f"{x:7.1f}" for x in o) + f" {o[0] / f[0]:8.3f}x {o[3] / f[3]:9.3f}x")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
