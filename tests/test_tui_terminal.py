"""The real ``dgym-tui`` command in a real terminal (tmux) at the sizes people use: 80x24,
99x30 (the side column hidden: below 100 columns), 120x36 and 200x60.

Each run drives a breakpoint, ``c s n u d``, a click in the stack pane (the side column
shown with ``]`` where it starts hidden), a resize in the middle of the session (across
the 100-column line and back) with more ``n u d``, an edit with ``E``, ``x`` and ``w``,
checking the screen (capture-pane) and the step counter after each key."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time

import pytest
from tmux_helpers import PAGINATION, Terminal, dgym_tui_command, needs_tmux

pytestmark = [*needs_tmux, pytest.mark.timeout(600)]

BUGGY = "        return max(1, len(self.items) // self.per_page)"
FIXED = "        return max(1, -(-len(self.items) // self.per_page))"
SOURCE_FOOTER = r"^ b Breakpoint "
CONSOLE_FOOTER = r"^ esc Back to source "


class Session:
    """The steps of one terminal session, with the step counter checked after each."""

    def __init__(self, terminal: Terminal) -> None:
        self.t = terminal
        self.steps = 0

    def step(self, seconds: float = 60.0) -> None:
        """Wait until the status bar counts one more step."""
        self.steps += 1
        self.t.wait_for(rf"│ step {self.steps}/\d+ ", seconds)

    def source(self) -> None:
        """Escape to the source view (its footer shows). A key right after an escape
        would be read as alt+key (one escape sequence): wait a little."""
        self.t.keys("Escape")
        time.sleep(0.3)
        self.t.wait_for(SOURCE_FOOTER, 30)

    def go_to(self, line: int) -> None:
        """``:LINE`` from the source view: the cursor moves there (no step)."""
        self.source()
        self.t.keys(":")
        self.t.wait_for(CONSOLE_FOOTER, 30)
        self.t.text(str(line))
        self.t.keys("Enter")
        self.t.wait_for(SOURCE_FOOTER, 30)

    def key(self, key: str, then: str | None = None) -> None:
        """Press ``key`` on the source view, wait for its step (and ``then`` on screen)."""
        self.t.keys(key)
        self.step()
        if then:
            self.t.wait_for(then, 30)

    def click(self, pattern: str) -> None:
        """A mouse click (SGR mouse report, as a terminal sends it) on ``pattern``."""
        screen = self.t.screen().splitlines()
        for row, line in enumerate(screen, 1):
            match = re.search(pattern, line)
            if match:
                column = len(line[:match.start()]) + 1
                self.t.text(f"\x1b[<0;{column};{row}M")
                self.t.text(f"\x1b[<0;{column};{row}m")
                return
        raise AssertionError(f"nothing to click: {pattern}\n" + "\n".join(screen))


def _other_size(size: tuple[int, int]) -> tuple[int, int]:
    """The size the session is resized to in the middle: across the 100-column line."""
    return (160, 48) if size[0] < 100 else (80, 24)


@pytest.mark.parametrize("size", [(80, 24), (99, 30), (120, 36), (200, 60)],
                         ids=lambda size: f"{size[0]}x{size[1]}")
def test_a_session_at_each_size(tmp_path, size):
    repo = tmp_path / "repo"
    shutil.copytree(PAGINATION, repo)
    terminal = Terminal(tmp_path, f"{dgym_tui_command()} repo --trajectory traj.jsonl "
                                  "--no-apply-prompt", size)
    s = Session(terminal)
    t = terminal
    try:
        t.wait_for(r"tests 3/5", 180)
        narrow = size[0] < 100
        s.go_to(9)
        s.key("b", r"│●  9 │")
        s.key("c", r"│●▶ 9 │")
        s.key("s", r"╭─ paging\.py ─")
        s.key("n")
        s.key("u", r"╭─ test_pagination\.py ─")
        s.key("d", r"╭─ paging\.py ─")

        # A resize across the 100-column line and back, with steps in between.
        other = _other_size(size)
        t.resize(*other)
        if other[0] < 100:
            t.wait_for(r"^│ +\d+ │", 30)  # the source at the left edge: no tree, no side
        else:
            t.wait_for(r"Debug +Transcript", 30)
        s.source()
        s.key("u", r"╭─ test_pagination\.py ─")
        s.key("d", r"╭─ paging\.py ─")
        s.key("n")
        t.resize(*size)
        t.wait_for(r"Debug +Transcript" if not narrow else r"^│ +\d+ │", 30)

        # The stack pane: shown with ] where it starts hidden; a click on the caller.
        s.source()
        if narrow:
            t.keys("]")
            t.wait_for(r"Debug +Transcript", 30)
        frame = r"  test_exact_pages(?!\()"  # the stack row (wrapped when narrow)
        t.wait_for(frame, 30)
        s.click(frame)
        s.step()
        t.wait_for(r"▶ test_exact_pages", 30)
        t.wait_for(r"╭─ test_pagination\.py ─", 30)
        s.source()
        s.key("d", r"╭─ paging\.py ─")
        if narrow:
            t.keys("]")
            t.wait_for(r"^│ +\d+ │", 30)

        # E: the fix typed over line 41, ctrl+s rewrites it.
        s.go_to(41)
        t.keys("E")
        t.wait_for(r"Edit paging\.py, line 41", 30)
        time.sleep(1.5)  # the editor takes the focus once it is mounted
        t.keys("C-k")
        t.text(FIXED)
        t.wait_for(r"return max\(1, -\(-len", 20)
        t.keys("C-s")
        s.step()
        t.wait_for(r"41 │ +return max\(1, -\(-len\(self\.items\)", 30)

        s.source()
        s.key("x", r"tests 5/5")
        t.keys("w")
        t.wait_for(r"Apply the patch to the original", 30)
        t.keys("y")
        t.wait_for(r"patch applied to", 60)
        assert FIXED in (repo / "paging.py").read_text().splitlines()
        t.keys("q")
        assert t.wait_exit() == "EXIT=0"
    finally:
        t.close()
    text = (tmp_path / "traj.jsonl").read_text()
    assert text.count('"type": "step"') == s.steps


def test_keys_typed_together_run_in_order(tmp_path):
    """Several commands in ONE write to the terminal (one send-keys: a paste, type-ahead):
    ``:9⏎b`` sets the breakpoint at line 9; three console lines run in order; ``:41⏎E``
    opens the editor on line 41, where ``  # abc``, Backspace, ``d`` leaves ``  # abd``."""
    repo = tmp_path / "repo"
    shutil.copytree(PAGINATION, repo)
    t = Terminal(tmp_path, f"{dgym_tui_command()} repo --trajectory traj.jsonl "
                           "--no-apply-prompt", (120, 36))
    s = Session(t)
    try:
        t.wait_for(r"tests 3/5", 180)
        s.source()
        t.keys(":", "9", "Enter", "b")
        s.step()
        t.wait_for(r"│●  9 │", 30)
        s.key("c", r"│●▶ 9 │")
        t.keys(":", "p 111", "Enter", "p 222", "Enter", "p 333", "Enter")
        s.steps += 2  # the three steps may run between two polls: wait for the last one
        s.step()
        t.wait_for(r"│333 +│", 30)
        screen = t.screen()
        assert screen.index("111") < screen.index("222") < screen.index("333"), screen
        s.source()
        s.key("s", r"╭─ paging\.py ─")
        t.keys(":", "41", "Enter", "E")
        t.wait_for(r"Edit paging\.py, line 41", 30)
        t.keys("End", "  # abc", "BSpace", "d", "C-s")
        s.step()
        t.wait_for(r"^ *│\+ +return max\(1, len\(self\.items\) //", 30)  # the diff
        t.wait_for(r"self\.per_page\)  # abd +│", 30)
        t.keys("q")
        assert t.wait_exit() == "EXIT=0"
    finally:
        t.close()
    lines = (tmp_path / "traj.jsonl").read_text()
    assert lines.index('"p 111"') < lines.index('"p 222"') < lines.index('"p 333"')
    assert '"b test_pagination.py:9"' in lines
    assert "# abd" in lines


@pytest.mark.parametrize("size", [(80, 24), (200, 60)], ids=lambda size: f"{size[0]}x{size[1]}")
def test_keys_typed_while_the_episode_starts_run_in_order(tmp_path, size):
    """A new user's first keys, ``b`` ``c`` ``n`` in ONE write right after the command
    (before the episode has started: the first frame, the working copy, the first eval),
    then ``q``: each waits for the start and runs in the order typed; none is lost."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "stats.py").write_text("def average(xs):\n    total = 0\n    for x in xs:\n"
                                   "        total += x\n    return total / len(xs[1:])\n")
    (repo / "test_stats.py").write_text("from stats import average\n\n\ndef test_average():\n"
                                        "    assert average([1, 2, 3]) == 2\n")
    t = Terminal(tmp_path, f"{dgym_tui_command()} repo --trajectory traj.jsonl "
                           "--no-apply-prompt", size)
    try:
        time.sleep(0.05)
        t.text("bcn")
        t.wait_for(r"│ step 3/\d+ ", 180)
        t.wait_for(r"> stats\.py\(1\)<module>\(\)->None", 30)  # c stopped at 1, n returned
        t.keys("q")
        assert t.wait_exit() == "EXIT=0"
    finally:
        t.close()
    steps = [json.loads(line) for line in (tmp_path / "traj.jsonl").read_text().splitlines()]
    commands = [s["action"]["arguments"].get("command") for s in steps if s["type"] == "step"]
    assert commands == ["b stats.py:1", "c", "n"]
    assert steps[-1]["type"] == "footer" and steps[-1]["reason"] == "quit"


LOOP = ("def work():\n    total = 0\n    for i in range(1000):\n        total += i\n"
        "        j = i * 2\n    return total\n\n\nif __name__ == '__main__':\n    print(work())\n")


def _console_rows(screen: str) -> list[str]:
    """The console's rows on ``screen`` (120x36: below the source box, above the input
    box; the scroll bar's two columns left out)."""
    lines = screen.splitlines()
    bottom = next(n for n, line in enumerate(lines) if "╰─" in line)
    left, right = lines[bottom].index("╰"), lines[bottom].index("╯") + 1
    field = next(n for n, line in enumerate(lines) if "▔▔▔" in line)
    return [line[left:right - 2].rstrip() for line in lines[bottom + 2:field]]


def test_the_console_scrolls_by_its_new_lines(tmp_path):
    """``n`` after ``n``: each answer scrolls the console by its lines, the rows already
    drawn moved rather than drawn again (the terminal gets only what Textual draws). The
    terminal shows the echo, the location and its line, in order, row after row, up to
    the last answer, the line the source view's marker is on."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "loop.py").write_text(LOOP)
    code = LOOP.splitlines()
    terminal = Terminal(tmp_path, f"{dgym_tui_command()} repo --entrypoint 'python loop.py' "
                                  "--trajectory traj.jsonl --no-apply-prompt", (120, 36))
    s, t = Session(terminal), terminal
    try:
        t.wait_for(r"│ step 0/", 180)
        t.keys(":")
        t.wait_for(CONSOLE_FOOTER, 30)
        t.text("b loop.py:4")
        t.keys("Enter")
        s.step()
        s.source()
        s.key("c", r"│●▶ 4 │")
        for _ in range(14):
            s.key("n")
            rows = _console_rows(t.screen())
            assert len(rows) == 10 and rows[-1].startswith("-> ")
        kinds = [0 if row == '› pdb(command="n")' else 1 if row.startswith("> loop.py(")
                 else 2 if row.startswith("-> ") else -1 for row in rows]
        first = kinds[0]
        assert kinds == [(first + n) % 3 for n in range(len(rows))], rows
        for number, row in enumerate(rows[:-1]):
            if kinds[number] == 1:  # the location, then its line of code
                line = int(re.match(r"> loop\.py\((\d+)\)work\(\)$", row).group(1))
                assert rows[number + 1] == "-> " + code[line - 1].strip()
        line = int(re.match(r"> loop\.py\((\d+)\)", rows[-2]).group(1))
        assert re.search(rf"│[ ●]▶ *{line} │", t.screen())
        t.keys("q")
        assert t.wait_exit() == "EXIT=0"
    finally:
        t.close()


@pytest.mark.parametrize("how", ["window closed", "SIGTERM"])
def test_a_closed_terminal_or_sigterm_leaves_nothing(tmp_path, how):
    """The terminal window closed under a running app (tmux kills its session: SIGHUP), or
    a SIGTERM to the app: the episode's working copy, scratch, plugin and support folders
    and its processes are gone, as after ``q``. Before, the episode started in a worker
    thread, where no signal handler can be installed: the signal ended the process at once
    and every folder stayed in the temporary folder."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n"
                                       "    assert add(1, 2) == 3\n")
    temp = tmp_path / "temp"
    temp.mkdir()
    marker = f"dgym-hangup-{tmp_path.name}"
    t = Terminal(tmp_path, f"TMPDIR={temp} {dgym_tui_command()} repo --trajectory "
                           f"{marker}.jsonl --no-apply-prompt", (100, 30))
    try:
        t.wait_for(r"│ tests 0/1", 180)  # the episode started: its first eval is shown
        assert any(name.startswith("dgym-ws-") for name in os.listdir(temp))
        if how == "SIGTERM":
            subprocess.run(["pkill", "-TERM", "-f", marker], check=True, timeout=30)
        else:
            t.tmux("kill-session", "-t", t.name)
        deadline = time.monotonic() + 60
        while os.listdir(temp) or _running(marker):
            assert time.monotonic() < deadline, (os.listdir(temp), _running(marker))
            time.sleep(0.2)
    finally:
        t.close()


def _running(marker: str) -> bool:
    return subprocess.run(["pgrep", "-f", marker], capture_output=True,
                          timeout=30).returncode == 0
