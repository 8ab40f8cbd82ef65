"""``n`` alone, key to screen, in a real terminal (tmux): many keys per session, sessions of
two checkouts in turn.

Run: ``python bench/bench_n_key.py [--sessions 5] [--keys 16] [--terminal bwrap]
[--baseline OTHER_CHECKOUT] [--hops]``. Each session starts ``dgym-tui`` (as its console script
does, bytecode read and written: ``bench_pudb.py``'s helpers) on a loop of three lines,
sets a breakpoint in it with ``b``, continues to it with ``c`` and then presses ``n``
``--keys`` times, each 0.25 s after the last one's answer; a key is timed until the status
bar shows its step counted (the same frame as the source view's marker). Sessions of this
checkout and of ``--baseline`` alternate; prints each session's median and the medians of
all keys. ``bench_pudb.py`` presses ``n`` twice a session (6-8 keys a run): too few to
tell two checkouts apart at a few milliseconds.

``--hops`` starts each app through ``bench/c_hops.py`` (timestamps at each hop; the
checkout imported is the session's) and prints, per checkout, the medians of each hop of
every key: tmux to Textual's input thread, the key to the screen's action, the action to
pdb's command written (the session's thread), pdb, pdb's reply to the trajectory's line
written, that write, the state read after the step (the inspection), the call's end
handled on the app's thread, the answer's frame handed to the terminal, and that frame to
the screen read by tmux (the terminal write, tmux, the capture's polling).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_pudb import ROOT, Tmux, _dgym_tui, _env  # noqa: E402

HOPS = Path(__file__).resolve().parent / "c_hops.py"
#: (hop, from mark, to mark) of one key in the c_hops log; ``screen`` is the bench's own
HOP_SPANS = (("tmux to the app", "sent", "key"), ("key to action", "key", "act>"),
             ("action to pdb written", "act>", "pdb>"), ("pdb", "pdb>", "pdb<"),
             ("reply to recording", "pdb<", "record>"), ("recording", "record>", "record<"),
             ("state read (inspection)", "record<", "turn<"),
             ("to the call's end handled", "turn<", "done>"), ("call's end handling", "done>", "done<"),
             ("to the frame written", "done<", "frame"), ("frame to screen", "frame", "screen"),
             ("total", "sent", "screen"))

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


def hops(log: Path, sent: float, screen: float) -> dict[str, float]:
    """One key's hops (seconds, :data:`HOP_SPANS`) from the c_hops ``log`` lines after
    ``sent`` (the key written to tmux) up to ``screen`` (its step seen)."""
    marks: list[tuple[float, str]] = [(sent, "sent")]
    for line in log.read_text().splitlines():
        stamp, _, rest = line.partition(" ")
        if sent <= float(stamp) <= screen:
            marks.append((float(stamp), rest.partition(" ")[0]))
    marks.append((screen, "screen"))
    at: dict[str, float] = {}
    for stamp, name in marks:
        if name == "frame" and "done<" not in at:
            continue  # the answer's frame: the first one after the call's end
        at.setdefault(name, stamp)
    return {hop: at[end] - at[start] for hop, start, end in HOP_SPANS
            if start in at and end in at}


def session(work: Path, root: Path, terminal: str, keys: int,
            with_hops: bool = False) -> tuple[list[float], list[dict[str, float]]]:
    """One dgym-tui session of checkout ``root``: seconds from each ``n`` to its step
    shown, and (``with_hops``) each key's hops."""
    repo = work / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "loop.py").write_text(LOOP)
    args = (f"repo --terminal {terminal} --entrypoint 'python loop.py' "
            "--trajectory traj.jsonl --no-apply-prompt")
    env, log = _env(root), work / "hops.log"
    if with_hops:
        env["C_HOPS_LOG"] = str(log)
        env["C_HOPS_NO_CPU"] = "1"  # no psutil look at pdb's process tree around its command
        command = f"{shlex.quote(sys.executable)} {shlex.quote(str(HOPS))} {args}"
    else:
        command = _dgym_tui(args)
    t = Tmux(command, (120, 36), work, env)
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
        times, sent = [], []
        for number in range(keys):
            sent.append(t.keys("n"))
            times.append(t.wait(rf"│ step {3 + number}/", sent[-1], 30))
            time.sleep(0.25)
    finally:
        t.close()
    return times, [hops(log, s, s + took) for s, took in zip(sent, times, strict=True)] if with_hops else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=5)
    parser.add_argument("--keys", type=int, default=16)
    parser.add_argument("--terminal", default="bwrap")
    parser.add_argument("--baseline", type=Path, help="another checkout of dgym-tui")
    parser.add_argument("--hops", action="store_true", help="time each hop (bench/c_hops.py)")
    args = parser.parse_args()
    roots = [("this", ROOT)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    times: dict[str, list[float]] = {name: [] for name, _ in roots}
    steps: dict[str, list[dict[str, float]]] = {name: [] for name, _ in roots}
    print(f"bench_n_key: load {os.getloadavg()[0]:.2f} at the start", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-n-") as tmp:
        for number in range(args.sessions):
            for name, root in (roots if number % 2 == 0 else roots[::-1]):
                keys, their_hops = session(Path(tmp) / f"{name}-{number}", root,
                                           args.terminal, args.keys, args.hops)
                times[name].extend(keys)
                steps[name].extend(their_hops)
                print(f"  {name}: median {statistics.median(keys) * 1000:.1f} ms", flush=True)
    print(f"bench_n_key: load {os.getloadavg()[0]:.2f} at the end; {args.terminal}, "
          f"{args.sessions} sessions x {args.keys} keys each")
    for name, values in times.items():
        ms = sorted(v * 1000 for v in values)
        print(f"{name}: median {statistics.median(ms):.1f} ms, p25 {ms[len(ms) // 4]:.1f}, "
              f"p75 {ms[3 * len(ms) // 4]:.1f}")
    if args.hops:
        print()
        print("| hop, median (p25-p75) | " + " | ".join(name for name, _ in roots) + " |")
        print("|---|" + "---:|" * len(roots))
        for hop, _, _ in HOP_SPANS:
            cells = []
            for name, _ in roots:
                ms = sorted(step[hop] * 1000 for step in steps[name] if hop in step)
                cells.append("-" if not ms else f"{statistics.median(ms):.1f} "
                             f"({ms[len(ms) // 4]:.1f}-{ms[3 * len(ms) // 4]:.1f})")
            print(f"| {hop} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
