"""``n`` alone, key to screen, in a real terminal (tmux): many keys per session, sessions of
two checkouts in turn.

Run: ``python bench/bench_n_key.py [--sessions 5] [--keys 16] [--terminal bwrap]
[--baseline OTHER_CHECKOUT]``. Each session starts ``dgym-tui`` (as its console script
does, bytecode read and written: ``bench_pudb.py``'s helpers) on a loop of three lines,
sets a breakpoint in it with ``b``, continues to it with ``c`` and then presses ``n``
``--keys`` times, each 0.25 s after the last one's answer; a key is timed until the status
bar shows its step counted (the same frame as the source view's marker). Sessions of this
checkout and of ``--baseline`` alternate; prints each session's median and the medians of
all keys. ``bench_pudb.py`` presses ``n`` twice a session (6-8 keys a run): too few to
tell two checkouts apart at a few milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pudb import ROOT, Tmux, _dgym_tui, _env  # noqa: E402

LOOP = '''\
def work():
    total = 0
    for i in range(100000):
        total += i
        j = i * 2
        k = j + total
    return total


if __name__ == "__main__":
    print(work())
'''


def session(work: Path, root: Path, terminal: str, keys: int) -> list[float]:
    """One dgym-tui session of checkout ``root``: seconds from each ``n`` to its step shown."""
    repo = work / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "loop.py").write_text(LOOP)
    command = _dgym_tui(f"repo --terminal {terminal} --entrypoint 'python loop.py' "
                        "--trajectory traj.jsonl --no-apply-prompt")
    t = Tmux(command, (120, 36), work, _env(root))
    try:
        t.wait(r"│ step 0/", t.started)
        t.keys(":")
        time.sleep(0.3)
        t.keys("-l", "b loop.py:4")
        t.keys("Enter")
        t.wait(r"│ step 1/", time.perf_counter(), 60)
        t.keys("Escape")
        time.sleep(0.5)
        t.wait(r"│ step 2/", t.keys("c"), 60)
        time.sleep(0.5)
        times = []
        for number in range(keys):
            times.append(t.wait(rf"│ step {3 + number}/", t.keys("n"), 30))
            time.sleep(0.25)
        return times
    finally:
        t.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--terminal", default="bwrap")
    parser.add_argument("--baseline", type=Path, help="another checkout of dgym-tui")
    args = parser.parse_args()
    roots = [("this", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    times: dict[str, list[float]] = {name: [] for name, _ in roots}
    print(f"bench_n_key: load {os.getloadavg()[0]:.2f} at the start", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-n-") as tmp:
        for number in range(args.sessions):
            for name, root in (roots if number % 2 == 0 else roots[::-1]):
                keys = session(Path(tmp) / f"{name}-{number}", root, args.terminal, args.keys)
                times[name].extend(keys)
                print(f"  {name}: median {statistics.median(keys) * 1000:.1f} ms", flush=True)
    print(f"bench_n_key: load {os.getloadavg()[0]:.2f} at the end; {args.terminal}, "
          f"{args.sessions} sessions x {args.keys} keys each")
    for name, values in times.items():
        ms = sorted(v * 1000 for v in values)
        print(f"{name}: median {statistics.median(ms):.1f} ms, p25 {ms[len(ms) // 4]:.1f}, "
              f"p75 {ms[3 * len(ms) // 4]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
