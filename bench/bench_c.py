"""Where the app's ``c`` to a breakpoint goes: pdb alone, a RepoEnv step, the app hop by hop.

Run: ``python bench/bench_c.py [--rounds 5] [--terminals bwrap,local] [--no-app]
[--app-only] [--baseline OTHER_CHECKOUT]``.

The task is bench_pudb's (``data/mini/pagination`` plus ``run_tests.py``, a breakpoint at
``test_pagination.py:7``, ``c`` from the script's first line: the script imports
``test_pagination``, which imports pytest, all under pdb's trace function). Each round
times, in turn (the order reversed every other round):

- ``pdb alone``: ``python -m pdb run_tests.py`` spawned by pexpect (this interpreter, on the
  host, ``PYTHONDONTWRITEBYTECODE=1`` as in the sandbox), ``b``, then ``c`` to the prompt;
- ``pdb, pudb's modules first``: the same pdb after importing what pudb imports before it
  runs a script (its UI, urwid, pygments...; only with pudb installed): what ``import
  pytest`` costs under the same trace when most of the standard library is already loaded,
  as in pudb's process;
- ``pdb alone, the session's cheap continue``: the same after the command a session sends at
  its start (its prompt and :mod:`dgym_tui.core.pdb.fastcontinue`), and with
  ``--baseline`` the command of another checkout (e.g. ``git archive`` of an older commit);
- ``RepoEnv step`` per terminal: ``RepoEnv.step`` of ``c`` (the pdb started by a ``b`` step
  before, from its preloaded spare; the next spare's imports waited for), and the same with
  the session's cheap ``continue`` off (``session.FAST_CONTINUE``: bdb's plain trace);
- ``app`` per terminal: the app in tmux (bench_pudb's session: ``b`` in the console, then
  ``c`` until line 7 is marked), started through ``bench/c_hops.py``, which timestamps each
  hop: key to the screen's action, action to pdb's command written, pdb, the reply to the
  bridge's reading of the state, that to the first frame written after it (and the CPU
  time the app's thread used meanwhile), and that frame to the screen read by tmux; with
  ``--baseline`` the other checkout's app too, in the same rounds.

For each process the CPU time it used during ``c`` (user + system, itself and its children,
10 ms ticks) is printed beside the wall time: on a shared machine the CPU time says what the
work costs, the wall time what the load added. Medians of the rounds, with the load.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pexpect

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_pudb import ROOT, Tmux, _env, _task  # noqa: E402
from c_hops import tree_cpu  # noqa: E402

from dgym_tui.core.env import RepoEnv  # noqa: E402
from dgym_tui.core.pdb import session  # noqa: E402
from dgym_tui.core.pdb.session import _prompt_setter  # noqa: E402

BREAK = "test_pagination.py:7"
#: what pudb imports before it runs a script (its debugger, UI and their libraries)
PUDB_MODULES = "import pudb, pudb.debugger, pudb.ui_tools, pudb.source_view, pudb.var_view, urwid"
#: pdb of the script after pudb's imports, as ``python -m pdb run_tests.py`` would run it
PUDB_FIRST = (f"{PUDB_MODULES}; import sys, pdb; sys.argv[:] = ['pdb', 'run_tests.py']; "
              "pdb.main()")
HOPS = Path(__file__).resolve().parent / "c_hops.py"


def start_command(checkout: Path) -> str:
    """The command a session of the dgym-tui at ``checkout`` sends at its start (its
    prompt and cheap ``continue``), asked of that checkout in a child Python."""
    import subprocess
    code = ("from dgym_tui.core.pdb.session import _prompt_setter; "
            "print(_prompt_setter('(Pdb) '))")
    return subprocess.run([sys.executable, "-c", code], cwd=checkout,  # "" first on the path
                          env={**os.environ, "PYTHONPATH": str(checkout)}, capture_output=True,
                          text=True, check=True).stdout.strip()


def pdb_alone(work: Path, first: str = "", fast: bool = False,
              start: str = "") -> tuple[float, float]:
    """(wall, CPU) seconds of ``c`` in a pdb spawned on the host; ``first``: Python code
    run instead of ``-m pdb`` (it starts pdb itself); ``fast``: pdb given the session's
    cheap ``continue`` first (the command a session sends at its start); ``start``: that
    command of another checkout (:func:`start_command`) instead."""
    repo = _task(work)
    env = _env()
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    args = ["-c", first] if first else ["-m", "pdb", "run_tests.py"]
    child = pexpect.spawn(sys.executable, args, cwd=str(repo), env=env, encoding="utf-8",
                          timeout=120)
    try:
        child.delaybeforesend = None
        child.expect_exact("(Pdb) ")
        if fast or start:
            child.sendline(start or _prompt_setter("(Pdb) ", True))
            child.expect_exact("\n(Pdb) ")  # not the echo's "'(Pdb) '"
        child.sendline(f"b {repo / BREAK}")
        child.expect_exact("(Pdb) ")
        time.sleep(0.3)
        cpu, started = tree_cpu(child.pid), time.perf_counter()
        child.sendline("c")
        child.expect_exact("(Pdb) ")
        wall = time.perf_counter() - started
        assert "test_pagination.py(7)" in child.before, child.before
        return wall, tree_cpu(child.pid) - cpu
    finally:
        child.close(force=True)


def env_step(work: Path, terminal: str, fast: bool = True) -> tuple[float, float]:
    """(wall, CPU of the pdb process) seconds of ``RepoEnv.step`` of ``c``; ``fast``: the
    session's cheap ``continue`` on (as dgym runs) or off (bdb's plain trace)."""
    repo = _task(work)
    path = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{path}"  # as tui_main
    session.FAST_CONTINUE = fast
    try:
        with RepoEnv(str(repo), entrypoint="python run_tests.py", terminal=terminal) as env:
            env.reset()
            env.step({"name": "pdb", "arguments": {"command": f"b {BREAK}"}})
            env.terminal.wait_spares(30)
            time.sleep(0.3)
            pid = env.tools["pdb"].session.child.pid
            cpu, started = tree_cpu(pid), time.perf_counter()
            step = env.step({"name": "pdb", "arguments": {"command": "c"}})
            wall = time.perf_counter() - started
            assert step.data.get("frame") == ["test_pagination.py", 7], step.observation
            return wall, tree_cpu(pid) - cpu
    finally:
        os.environ["PATH"] = path
        session.FAST_CONTINUE = True


def _hops(log: Path, key: float, screen: float) -> dict[str, float]:
    """The hops of the ``c`` step in the app's log (seconds), from its lines after ``key``."""
    marks: list[tuple[float, str, str]] = []
    for line in log.read_text().splitlines():
        stamp, _, rest = line.partition(" ")
        name, _, detail = rest.partition(" ")
        if float(stamp) >= key:
            marks.append((float(stamp), name, detail))

    def first(name: str, after: float = key) -> tuple[float, str]:
        return next((t, d) for t, n, d in marks if n == name and t >= after)

    act, _ = first("act>")
    sent, _ = first("pdb>")
    replied, detail = first("pdb<", sent)
    pdb_cpu, app_cpu, _start = detail.split()
    read, read_cpu = first("turn<", replied)
    frame, frame_detail = first("frame", read)
    return {"key to action": act - key, "action to pdb": sent - act,
            "pdb": replied - sent, "pdb CPU": float(pdb_cpu), "app CPU meanwhile": float(app_cpu),
            "reply to state read": read - replied, "state to frame": frame - read,
            "app thread's CPU, state to frame": float(frame_detail.split()[1]) - float(read_cpu),
            "frame to screen": screen - frame, "total": screen - key}


def app_round(work: Path, terminal: str, checkout: Path = ROOT) -> dict[str, float]:
    """The app's ``c`` hop by hop (bench_pudb's session, started through c_hops.py), of
    the dgym-tui at ``checkout``."""
    _task(work)
    log = work / "hops.log"
    log.unlink(missing_ok=True)
    env = _env(checkout)
    env["C_HOPS_LOG"] = str(log)
    command = (f"{shlex.quote(sys.executable)} {shlex.quote(str(HOPS))} repo --terminal "
               f"{terminal} --entrypoint 'python run_tests.py' --trajectory traj.jsonl "
               "--no-apply-prompt")
    t = Tmux(command, (120, 36), work, env)
    try:
        t.wait(r"│ step 0/", t.started)
        t.keys(":")
        t.wait(r"^ esc Back to source", time.perf_counter(), 30)
        t.keys("-l", f"b {BREAK}")
        t.keys("Enter")
        t.wait(r"│ step 1/", time.perf_counter(), 60)
        t.keys("Escape")
        time.sleep(0.3)
        t.wait(r"^ b Breakpoint ", time.perf_counter(), 30)
        time.sleep(0.5)
        key = t.keys("c")
        took = t.wait(r"▶ *7 │", key)
        t.wait(r"│ step 2/", time.perf_counter(), 30)
    finally:
        t.close()
    return _hops(log, key, key + took)


def _ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:,.0f} ms" if values else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--terminals", default="bwrap,local")
    parser.add_argument("--no-app", action="store_true", help="leave the app rows out")
    parser.add_argument("--baseline", type=Path, help="another checkout of dgym-tui: one more "
                        "row, pdb alone with that checkout's cheap continue, and its app's "
                        "hops beside this one's")
    parser.add_argument("--app-only", action="store_true",
                        help="only the app rows (no pdb alone, no RepoEnv step)")
    args = parser.parse_args()
    terminals = [t for t in args.terminals.split(",") if t]
    try:
        import pudb  # noqa: F401
        has_pudb = True
    except ImportError:
        has_pudb = False
    jobs: list[tuple[str, object]] = []
    if not args.app_only:
        jobs += [("pdb alone", lambda w: pdb_alone(w)),
                 ("pdb alone, the session's cheap continue", lambda w: pdb_alone(w, fast=True))]
    if args.baseline and not args.app_only:
        other = start_command(args.baseline.resolve())
        jobs.append(("pdb alone, the baseline's cheap continue",
                     lambda w: pdb_alone(w, start=other)))
    if has_pudb and not args.app_only:
        jobs.append(("pdb, pudb's modules first", lambda w: pdb_alone(w, PUDB_FIRST)))
    for terminal in terminals:
        if not args.app_only:
            jobs.append((f"RepoEnv step, {terminal}", lambda w, t=terminal: env_step(w, t)))
            jobs.append((f"RepoEnv step, {terminal}, bdb's plain continue",
                         lambda w, t=terminal: env_step(w, t, fast=False)))
        if not args.no_app:
            jobs.append((f"app, {terminal}", lambda w, t=terminal: app_round(w, t)))
            if args.baseline:
                jobs.append((f"app, {terminal}, baseline",
                             lambda w, t=terminal: app_round(w, t, args.baseline.resolve())))
    results: dict[str, list[object]] = {name: [] for name, _ in jobs}
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-c-") as tmp:
        work = Path(tmp)
        for number in range(args.rounds):
            for name, job in (jobs if number % 2 == 0 else jobs[::-1]):
                results[name].append(job(work))  # type: ignore[operator]
    print(f"bench_c: {args.rounds} rounds, load {load:.2f} at the start, "
          f"{os.getloadavg()[0]:.2f} at the end")
    print()
    if not args.app_only:
        print("| | wall | CPU of the pdb process |")
        print("|---|---:|---:|")
    for name, values in results.items():
        if name.startswith("app"):
            continue
        print(f"| {name} | {_ms([v[0] for v in values])} | {_ms([v[1] for v in values])} |")
    apps = [name for name in results if name.startswith("app")]
    if apps:
        print()
        print("| app, hop | " + " | ".join(name[5:] for name in apps) + " |")
        print("|---|" + "---:|" * len(apps))
        for hop in results[apps[0]][0]:  # type: ignore[union-attr]
            print(f"| {hop} | " + " | ".join(_ms([v[hop] for v in results[name]])  # type: ignore[index]
                                             for name in apps) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
