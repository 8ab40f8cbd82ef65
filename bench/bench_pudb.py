"""dgym-tui next to pudb, both driven in a real terminal (tmux) on the same small task.

Run: ``python bench/bench_pudb.py [--rounds 3] [--size 120x36] [--terminals bwrap,local]
[--baseline OTHER_CHECKOUT] [--first-screen-only]``. Prints one table of medians and their ratios (dgym-tui /
pudb; the eval row: dgym-tui's ``x`` / a bare ``python -m pytest`` of the same tests), one
dgym-tui column per terminal (default: the one a user gets, ``bwrap`` where it works, else
``local``; the bench prints which) and, with ``--baseline``, per terminal for another
checkout of dgym-tui too (before / after a change, measured in the same run, in turn).
pudb is optional: without it (``pip install pudb``) its rows are skipped and only
dgym-tui's times and the eval row are printed.

The task: a copy of ``data/mini/pagination`` (5 tests, 2 fail) plus ``run_tests.py``,
a plain script that calls each test function (pudb debugs a script; dgym-tui gets it as
``--entrypoint``, so both debuggers run the same program). pudb has no sandbox; dgym-tui
runs on each terminal asked for. Each row is timed from the key (or the command) to the
screen that shows its effect, read with ``tmux capture-pane`` polled in a loop (a few ms
per look, the same for both programs):

- first screen: from the command to the program's source on screen (dgym-tui: its first
  frame, then the working copy, terminal and initial eval, then the source; pudb: its
  first screen, which shows the source);
- ``c`` to a breakpoint: a breakpoint at ``test_pagination.py:7`` set first (dgym-tui:
  ``b`` in its console; pudb: its saved-breakpoints file), then ``c`` until line 7 is
  marked as the current line;
- ``n``, key to screen: ``n`` at line 7, then at line 8, until the next line is marked;
- ``x`` vs bare pytest: dgym-tui with its default entrypoint (pytest), ``x`` until the
  step is counted on the status bar; the floor is ``python -m pytest -q`` of the same
  file in a shell in tmux, until its summary line.

The programs run in turn (each dgym-tui variant and pudb, the order reversed every other
round), ``--rounds`` times each. With pudb runs the "Textual floor",
bench/textual_floor_app.py: one Textual widget showing the file with a marker that ``n``
moves, no debugger behind it (first screen and ``n`` only): what any Textual app pays here.
``--first-screen-only`` times the first row alone (each program is closed once its first
screen is timed; no eval rounds): more rounds in the same time for a change to the start.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK = ROOT / "data" / "mini" / "pagination"
RUN_TESTS = '''\
"""Run the pagination tests without pytest (a plain script both debuggers can run)."""
import test_pagination

for name in sorted(dir(test_pagination)):
    if name.startswith("test_"):
        try:
            getattr(test_pagination, name)()
            print(name, "ok")
        except Exception as exc:
            print(name, "FAILED", type(exc).__name__, exc)
'''
LINE8 = "assert paginator.total_pages == 2"
LINE9 = "assert paginator.page(2).items"


_SESSIONS = itertools.count()


class Tmux:
    """One command in a private tmux server (its own socket, no configuration)."""

    def __init__(self, command: str, size: tuple[int, int], cwd: Path, env: dict[str, str]):
        # a new name each time: an id() is reused once the last server is gone, and a
        # kill-server still finishing took the next session with it (a blank screen)
        self.name = f"bench-pudb-{os.getpid()}-{next(_SESSIONS)}"
        self.env = env
        self.started = time.perf_counter()
        self.run("new-session", "-d", "-s", self.name, "-x", str(size[0]), "-y", str(size[1]),
                 f"cd {shlex.quote(str(cwd))} && {command}; sleep 600")

    def run(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null", *args],
                              capture_output=True, text=True, env=self.env, check=False,
                              timeout=30).stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", self.name)

    def keys(self, *keys: str) -> float:
        """Send keys; the time just before they were written."""
        sent = time.perf_counter()
        self.run("send-keys", "-t", self.name, *keys)
        return sent

    def wait(self, pattern: str, since: float, limit: float = 120.0) -> float:
        """Seconds from ``since`` until the screen matches ``pattern`` (multi-line regex)."""
        regex = re.compile(pattern, re.MULTILINE)
        while True:
            if regex.search(self.screen()):
                return time.perf_counter() - since
            if time.perf_counter() - since > limit:
                raise RuntimeError(f"timed out waiting for {pattern!r}:\n{self.screen()}")

    def close(self) -> None:
        self.run("kill-server")


def _env(root: Path = ROOT) -> dict[str, str]:
    """The environment of a program in tmux, importing dgym-tui from ``root``; bytecode is
    read and written, as an installed package has it (pudb's is, in site-packages)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TMUX", "COLUMNS", "LINES", "PYTHONDONTWRITEBYTECODE")}
    rest = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([str(root), *rest])
    return env


#: what the ``dgym-tui`` console script runs (pyproject.toml's [project.scripts])
CONSOLE_SCRIPT = "import sys; from dgym_tui.cli.main import tui_main; sys.exit(tui_main())"


def _dgym_tui(args: str) -> str:
    """The shell command of ``dgym-tui ARGS`` as its console script starts it, with this
    interpreter: ``tui_main`` puts the interpreter's folder first on PATH, so the episode's
    ``python`` is this virtualenv's (the bare pytest's and pudb's), and pauses the garbage
    collector up to the first frame (``python -m dgym_tui.cli.tui`` does neither: its evals
    ran whatever ``python`` came first on PATH)."""
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(CONSOLE_SCRIPT)} {args}"


def _task(work: Path) -> Path:
    repo = work / "repo"
    if repo.exists():
        shutil.rmtree(repo)
    shutil.copytree(TASK, repo)
    (repo / "run_tests.py").write_text(RUN_TESTS)
    return repo


def dgym_round(work: Path, size: tuple[int, int], terminal: str = "local",
               root: Path = ROOT, first_only: bool = False) -> dict[str, list[float]]:
    """One dgym-tui session (the checkout at ``root``) on run_tests.py: first screen, c,
    n, n (``first_only``: the first screen alone)."""
    _task(work)
    command = _dgym_tui(f"repo --terminal {terminal} --entrypoint 'python run_tests.py' "
                        "--trajectory traj.jsonl --no-apply-prompt")
    t = Tmux(command, size, work, _env(root))
    try:
        first = t.wait(r"│ *\d+ │\S", t.started)
        if first_only:
            return {"first screen": [first]}
        t.wait(r"│ step 0/", t.started)
        t.keys(":")
        t.wait(r"^ esc Back to source", time.perf_counter(), 30)
        t.keys("-l", "b test_pagination.py:7")
        t.keys("Enter")
        t.wait(r"│ step 1/", time.perf_counter(), 60)
        t.keys("Escape")
        time.sleep(0.3)
        t.wait(r"^ b Breakpoint ", time.perf_counter(), 30)
        cont = t.wait(r"▶ *7 │", t.keys("c"))
        t.wait(r"│ step 2/", time.perf_counter(), 30)
        time.sleep(0.3)
        n8 = t.wait(rf"▶ *8 │ +{re.escape(LINE8)}", t.keys("n"))
        t.wait(r"│ step 3/", time.perf_counter(), 30)
        time.sleep(0.3)
        n9 = t.wait(rf"▶ *9 │ +{re.escape(LINE9)}", t.keys("n"))
        return {"first screen": [first], "c to a breakpoint": [cont], "n, key to screen": [n8, n9]}
    finally:
        t.close()


def _n_twice(t: Tmux, pattern: str) -> list[float]:
    """``n`` at line 7, then at line 8 (0.3 s apart), each timed until the next line is
    marked: ``pattern`` with ``{number}`` (8, 9) and ``{line}`` (its escaped code) filled in."""
    times = []
    for number, line in ((8, LINE8), (9, LINE9)):
        times.append(t.wait(pattern.format(number=number, line=re.escape(line)), t.keys("n")))
        if number == 8:
            time.sleep(0.3)
    return times


def pudb_round(work: Path, size: tuple[int, int],
               first_only: bool = False) -> dict[str, list[float]]:
    """One pudb session on run_tests.py, with a saved breakpoint at test_pagination.py:7
    (``first_only``: its first screen alone)."""
    repo = _task(work)
    config = work / "pudb-config"
    (config / "pudb").mkdir(parents=True, exist_ok=True)
    (config / "pudb" / "pudb.cfg").write_text("[pudb]\nseen_welcome = e999\n")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    (config / "pudb" / f"saved-breakpoints-{version}").write_text(
        f"b {repo / 'test_pagination.py'}:7\n")
    env = _env()
    env["XDG_CONFIG_HOME"] = str(config)
    t = Tmux(f"{shlex.quote(sys.executable)} -m pudb run_tests.py", size, repo, env)
    try:
        first = t.wait(r"^[> ] +import test_pagination", t.started)
        if first_only:
            return {"first screen": [first]}
        time.sleep(0.3)
        cont = t.wait(r"^>\*? +paginator = Paginator", t.keys("c"))
        time.sleep(0.3)
        steps = _n_twice(t, r"^> +{line}")
        return {"first screen": [first], "c to a breakpoint": [cont], "n, key to screen": steps}
    finally:
        t.close()


def floor_round(work: Path, size: tuple[int, int],
                first_only: bool = False) -> dict[str, list[float]]:
    """bench/textual_floor_app.py on test_pagination.py: a one-widget Textual app with no
    debugger behind it, its marker at line 7; first screen, then n, n (``first_only``:
    the first screen alone)."""
    repo = _task(work)
    app = Path(__file__).with_name("textual_floor_app.py")
    t = Tmux(f"{shlex.quote(sys.executable)} {shlex.quote(str(app))} test_pagination.py 7",
             size, repo, _env())
    try:
        first = t.wait(r"│ *\d+ │\S", t.started)
        if first_only:
            return {"first screen": [first]}
        time.sleep(0.3)
        steps = _n_twice(t, r"▶ *{number} │ +{line}")
        return {"first screen": [first], "n, key to screen": steps}
    finally:
        t.close()


def eval_round(work: Path, size: tuple[int, int], terminal: str = "local",
               root: Path = ROOT) -> dict[str, list[float]]:
    """dgym-tui's x (pytest, its default entrypoint)."""
    repo = _task(work)
    (repo / "run_tests.py").unlink()
    command = _dgym_tui(f"repo --terminal {terminal} --trajectory traj.jsonl --no-apply-prompt")
    t = Tmux(command, size, work, _env(root))
    try:
        t.wait(r"│ step 0/\d+ .*tests 3/5", t.started)
        time.sleep(0.5)
        ours = t.wait(r"│ step 1/\d+ .*tests 3/5", t.keys("x"))
    finally:
        t.close()
    return {"x": [ours]}


def bare_pytest_round(work: Path, size: tuple[int, int]) -> dict[str, list[float]]:
    """A bare ``python -m pytest`` of the same tests in a shell in tmux (the eval's floor)."""
    repo = _task(work)
    (repo / "run_tests.py").unlink()
    bare = Tmux(f"{shlex.quote(sys.executable)} -m pytest -q -p no:cacheprovider "
                "test_pagination.py", size, repo, _env())
    try:
        floor = bare.wait(r"\d+ failed, \d+ passed", bare.started)
    finally:
        bare.close()
    return {"bare pytest": [floor]}


def _add(into: dict[str, list[float]], part: dict[str, list[float]]) -> None:
    for key, values in part.items():
        into.setdefault(key, []).extend(values)


def _default_terminal() -> str:
    """The terminal ``dgym-tui PATH`` picks: bwrap where it works, else local."""
    sys.path.insert(0, str(ROOT))
    from dgym_tui.core.terminals.bwrap import default_terminal

    return default_terminal()[0]


def _ms(values: list[float] | None) -> str:
    return "-" if not values else f"{statistics.median(values) * 1000:,.0f} ms"


def _ratio(mine: list[float] | None, other: list[float] | None) -> str:
    if not mine or not other:
        return "-"
    return f"{statistics.median(mine) / statistics.median(other):.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", default="120x36", help="terminal size, COLSxROWS")
    parser.add_argument("--terminals", default="", help="dgym-tui's terminals, comma-separated "
                        "(default: the one dgym-tui PATH picks here)")
    parser.add_argument("--baseline", type=Path, help="another checkout of dgym-tui (e.g. a "
                        "git worktree of an older commit) to measure in the same run")
    parser.add_argument("--first-screen-only", action="store_true", help="time the first "
                        "screen alone (no c, n or eval rounds)")
    args = parser.parse_args()
    first_only = args.first_screen_only
    size = tuple(int(part) for part in args.size.split("x"))
    if shutil.which("tmux") is None:
        print("bench_pudb: tmux is not installed", file=sys.stderr)
        return 2
    try:
        import pudb  # noqa: F401
        has_pudb = True
        pudb_version = getattr(sys.modules["pudb"], "__version__", "?")
    except ImportError:
        has_pudb, pudb_version = False, None
        print("bench_pudb: pudb is not installed (pip install pudb): its rows are skipped")
    default = _default_terminal()
    terminals = [t for t in args.terminals.split(",") if t] or [default]
    roots = [("", ROOT)] + ([("before ", args.baseline.resolve())] if args.baseline else [])
    variants = [(f"{label}{terminal}", terminal, root) for label, root in roots
                for terminal in terminals]
    ours: dict[str, dict[str, list[float]]] = {name: {} for name, _, _ in variants}
    theirs: dict[str, list[float]] = {}
    floor: dict[str, list[float]] = {}
    textual: dict[str, list[float]] = {}
    load = os.getloadavg()[0]
    print(f"bench_pudb: dgym-tui PATH picks the {default} terminal here; measuring "
          f"{', '.join(name for name, _, _ in variants)}", flush=True)
    for _, root in roots:  # as pip does when it installs the package
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "dgym_tui")],
                       check=False, capture_output=True, env=_env(root), timeout=600)
    with tempfile.TemporaryDirectory(prefix="bench-pudb-") as tmp:
        work = Path(tmp)
        for number in range(args.rounds):
            runs = [*variants, None]
            for variant in (runs if number % 2 == 0 else runs[::-1]):
                if variant is None:
                    if has_pudb:
                        _add(theirs, pudb_round(work, size, first_only))
                    _add(textual, floor_round(work, size, first_only))
                    continue
                name, terminal, root = variant
                _add(ours[name], dgym_round(work, size, terminal, root, first_only))
                if first_only:  # its episode, closed mid-start, winds down before the next
                    time.sleep(1.5)
            if first_only:
                continue
            for variant in (variants if number % 2 == 0 else variants[::-1]):
                name, terminal, root = variant
                _add(ours[name], eval_round(work, size, terminal, root))
            _add(floor, bare_pytest_round(work, size))
    print(f"bench_pudb: {args.rounds} rounds at {size[0]}x{size[1]}, load {load:.2f} at the "
          f"start, {os.getloadavg()[0]:.2f} at the end; pudb {pudb_version or 'absent'}")
    print()
    names = [name for name, _, _ in variants]
    print("| | " + " | ".join(f"dgym-tui {name}" for name in names) + " | pudb | "
          + " | ".join(f"{name} / pudb" for name in names)
          + " | Textual floor | Textual floor / pudb |")
    print("|---|" + "---:|" * (2 * len(names) + 3))
    rows = ("first screen",) if first_only else ("first screen", "c to a breakpoint",
                                                  "n, key to screen")
    for row in rows:
        print(f"| {row} | " + " | ".join(_ms(ours[name].get(row)) for name in names)
              + f" | {_ms(theirs.get(row))} | "
              + " | ".join(_ratio(ours[name].get(row), theirs.get(row)) for name in names)
              + f" | {_ms(textual.get(row))} | {_ratio(textual.get(row), theirs.get(row))} |")
    if first_only:
        return 0
    print("| x, one eval (pudb column: bare pytest) | "
          + " | ".join(_ms(ours[name].get("x")) for name in names)
          + f" | {_ms(floor.get('bare pytest'))} | "
          + " | ".join(_ratio(ours[name].get("x"), floor.get("bare pytest")) for name in names)
          + " | - | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
