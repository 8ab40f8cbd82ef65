"""Issue 24, class 7: output is data. A program that prints terminal escape sequences
(OSC 52 fills the clipboard, OSC 2 sets the window title, CSI moves the cursor or asks
the terminal to answer, C1 codes do the same in 8 bits) reaches the person only as text:
in the observations (eval and pdb), in ``dgym replay --show`` and in ``dgym play``.
(The app: tests/test_tui_output_is_data.py.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from dgym_tui.core.safetext import one_line, strip_controls
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.trajectory import read_trajectory

DGYM = [sys.executable, "-c", "import sys; from dgym_tui.cli.main import main; sys.exit(main())"]

#: What a hostile program prints: clipboard, title, cursor report request, screen clear,
#: 8-bit CSI and OSC, BEL, NUL, DEL.
NOISE = ("\x1b]52;c;aGFja2Vk\x07\x1b]2;pwned\x1b\\\x1b[6n\x1b[2J"
         "\u009b31m\u009d0;c1title\u009c\x07\x00\x7f")
#: Any control character but newline and tab.
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

NOISY = f"""\
import sys

NOISE = {NOISE!r}


def shout():
    sys.stdout.write("before" + NOISE + "after\\n")
    sys.stdout.flush()
    return 1
"""
TESTS = "from noisy import shout\n\n\ndef test_shout():\n    assert shout() == 2\n"


def assert_clean(text: str, payloads: bool = True) -> None:
    """No control character is left, nor (``payloads``) the text of the sequences."""
    found = CONTROLS.search(text)
    assert found is None, f"control {found.group()!r} in {text[max(found.start() - 40, 0):found.end() + 40]!r}"
    for payload in ("52;c;", "aGFja2Vk", "pwned", "c1title", "[6n", "[2J") if payloads else ():
        assert payload not in text


@pytest.fixture
def noisy_repo(make_repo, fast_pytest):
    """A repository whose test prints NOISE (pytest -s: straight to the output), with a
    text file holding NOISE's raw characters; returns ``(path, entrypoint)``."""
    text = NOISE.replace("\x00", "")  # a NUL makes it a binary file, which is never shown
    repo = make_repo({"noisy.py": NOISY, "test_noisy.py": TESTS, "notes.txt": f"one{text}\ntwo\n"})
    return repo, f"{fast_pytest} -s test_noisy.py"


@pytest.mark.parametrize(("raw", "shown"), [
    ("a\x1b]52;c;aGVsbG8=\x07b", "ab"),  # OSC 52 ended by BEL
    ("x\x1b]2;title\x1b\\y", "xy"),  # OSC 2 ended by ST
    ("\x1b[31mred\x1b[0m \x1b[?1049h", "red "),  # CSI with parameters
    ("\u009b2J\u009d0;t\u009cz", "z"),  # 8-bit CSI and OSC
    ("a\rb\r\nc", "a\nb\nc"),  # a lone CR shows the "overwritten" text on its own line
    ("\x1b]0;unterminated\nnext", "\nnext"),  # an unterminated string stops at the line's end
    ("\x00\x07\x08\x7f ok\t\n", " ok\t\n"),  # other C0 and DEL go; tab and newline stay
    ("\x1bc\x1b(B\x1b7q", "q"),  # other escapes, with their intermediates and final
    ("plain text, [bold]x[/]", "plain text, [bold]x[/]"),  # printable text is untouched
])
def test_the_rule(raw, shown):
    assert strip_controls(raw) == shown


def test_file_text_keeps_its_lines():
    """Shown with line numbers, a file keeps its newline count: a lone CR is removed."""
    assert strip_controls("a\rb\nc\r\n", keep_lines=True) == "ab\nc\n"
    assert one_line("dir\x1b]2;t\x07\n\tname") == "dir  name"


def test_observations_of_eval_view_and_pdb_hold_no_controls(noisy_repo, make_env):
    """The program's noise reaches the reset's and eval's observation, the eval output,
    the view of a file holding it and pdb's reply only as text."""
    repo, entrypoint = noisy_repo
    env = make_env(repo, entrypoint=entrypoint)
    first = env.reset()
    assert "before" in first.observation and "after" in first.observation  # the output is there
    results = [first, env.step(ToolCall("eval", {})), env.step(ToolCall("view", {"path": "notes.txt"})),
               env.step(ToolCall("pdb", {"command": "c"})),
               env.step(ToolCall("pdb", {"command": "!import noisy; noisy.shout()"}))]
    assert "before" in results[3].observation + results[4].observation  # pdb ran the program
    assert "one" in results[2].observation and not results[2].error
    for result in results:
        assert_clean(result.observation)
        assert_clean(result.eval_output)
        assert_clean(json.dumps(result.eval.to_dict(), ensure_ascii=False))


def test_replay_show_and_play_print_no_controls(noisy_repo, tmp_path):
    """``dgym play`` on the repository, then ``dgym replay --show`` of its trajectory and of
    a trajectory file whose records were written with raw controls (an old or forged
    file), and ``dgym replay`` of the forged file (its divergence diff): stdout holds none."""
    repo, entrypoint = noisy_repo
    traj = tmp_path / "play.jsonl"
    play = subprocess.run(DGYM + ["play", str(repo), "--entrypoint", entrypoint, "-o", str(traj),
                                  "--terminal", "local"],
                          input="view notes.txt\neval\nc\n", text=True, capture_output=True,
                          timeout=240, check=False)
    assert play.returncode == 0, play.stderr
    assert "before" in play.stdout and "one" in play.stdout
    assert_clean(play.stdout)

    forged = tmp_path / "forged.jsonl"
    lines = traj.read_text().splitlines()
    step = json.loads(lines[1])
    step["observation"] = f"forged{NOISE}observation"
    step["action"]["arguments"] = {"path": f"x{NOISE}.py"}
    forged.write_text("\n".join([lines[0], json.dumps(step), *lines[2:]]) + "\n")
    assert NOISE in read_trajectory(forged).steps[0]["observation"]  # the file holds it raw
    for path in (traj, forged):
        show = subprocess.run(DGYM + ["replay", str(path), "--show"], text=True, capture_output=True,
                              timeout=120, check=False)
        assert show.returncode == 0, show.stderr
        assert "--- step 1" in show.stdout
        # the forged action's arguments print as Python's repr (\\x1b as text): no controls
        assert_clean(show.stdout, payloads=path == traj)
    assert "forgedobservation" in show.stdout
    again = subprocess.run(DGYM + ["replay", str(forged)], text=True, capture_output=True,
                           timeout=240, check=False)  # re-executed: step 1 diverges, diff shown
    assert again.returncode == 1 and "step 1: DIVERGED" in again.stdout, again.stderr
    assert "forgedobservation" in again.stdout
    assert_clean(again.stdout, payloads=False)


def test_run_and_report_print_task_names_as_text(make_repo, tmp_path):
    """A folder benchmark whose task folder is named with markup and controls: ``dgym run``'s
    progress and summary and ``dgym report`` show the name as written (the markup was
    applied: a bold red "t") and print no control."""
    name = "[bold red]t\x1b]2;pwned\x07"
    root = make_repo({f"{name}/calc.py": "def add(a, b):\n    return a - b\n",
                      f"{name}/test_calc.py": "from calc import add\n\n\ndef test_add():\n"
                                              "    assert add(2, 3) == 5\n"}, "suite")
    config = tmp_path / "run.yaml"
    config.write_text(f"benchmark: {{name: folder, path: {root}}}\npolicy: human\nmax_steps: 1\n"
                      "terminal: local\n")
    out = tmp_path / "out"
    run = subprocess.run(DGYM + ["run", str(config), "--output", str(out)], input="submit\n",
                         text=True, capture_output=True, timeout=240, check=False)
    assert run.returncode == 0, run.stderr
    assert "[bold red]t" in run.stdout
    assert_clean(run.stdout + run.stderr)
    for fmt in ("table", "markdown", "csv"):
        report = subprocess.run(DGYM + ["report", str(out), "--format", fmt], text=True,
                                capture_output=True, timeout=120, check=False)
        assert report.returncode == 0, report.stderr
        assert ("[bold red]t" in report.stdout) == (fmt != "csv")  # csv: per system only
        assert_clean(report.stdout)
