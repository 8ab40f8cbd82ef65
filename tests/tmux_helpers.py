"""The real ``dgym-tui`` command in a real terminal: a private tmux server (its own socket,
no configuration file), keys sent with ``send-keys`` and the screen read with
``capture-pane``, as scripts/tmux_smoke.sh does from bash."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

#: The repository used by the terminal tests (a floor division drops the last page).
PAGINATION = Path(__file__).resolve().parent.parent / "data" / "mini" / "pagination"

#: Skip marks for a test that needs tmux and the dgym-tui command.
needs_tmux = [
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def dgym_tui_command() -> str:
    """The shell words that start dgym-tui with this interpreter (and this checkout's code,
    through PYTHONPATH, as the tests import it)."""
    return f"{shlex.quote(sys.executable)} -m dgym_tui.cli.tui"


class Terminal:
    """One tmux session running one command, ``columns`` x ``rows`` cells.

    Args:
        work: a folder for the session's files (its exit marker, screens on failure).
        command: the shell command to run (run from ``work``).
        size: (columns, rows).
    """

    def __init__(self, work: Path, command: str, size: tuple[int, int]) -> None:
        self.work = work
        self.name = f"dgym-test-{os.getpid()}-{id(self):x}"
        self.exit_file = work / "exit"
        self.exit_file.unlink(missing_ok=True)
        env = {key: value for key, value in os.environ.items() if key not in ("TMUX", "COLUMNS", "LINES")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(__file__).resolve().parent.parent),
                                                          env.get("PYTHONPATH", "")]))
        self._env = env
        wrapped = (f"cd {shlex.quote(str(work))} && {command}; "
                   f"echo \"EXIT=$?\" > {shlex.quote(str(self.exit_file))}; sleep 60")
        self.tmux("new-session", "-d", "-s", self.name, "-x", str(size[0]), "-y", str(size[1]),
                  wrapped)

    def tmux(self, *args: str) -> str:
        """Run one tmux command against this session's private server; its stdout."""
        proc = subprocess.run(["tmux", "-L", self.name, "-f", "/dev/null", *args],
                              capture_output=True, text=True, timeout=30, env=self._env, check=False)
        return proc.stdout

    def screen(self) -> str:
        """The characters on the screen now, one line a row."""
        return self.tmux("capture-pane", "-p", "-t", self.name)

    def wait_for(self, pattern: str, seconds: float = 60.0) -> re.Match:
        """Poll the screen until ``pattern`` (a regular expression, multi-line) matches.

        Raises:
            AssertionError: the time ran out or the app exited first (the screen is shown).
        """
        deadline = time.monotonic() + seconds
        regex = re.compile(pattern, re.MULTILINE)
        while True:
            screen = self.screen()
            match = regex.search(screen)
            if match:
                return match
            if self.exit_file.exists():
                raise AssertionError(f"the app exited ({self.exit_file.read_text().strip()}) "
                                     f"while waiting for {pattern!r}:\n{screen}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {seconds}s waiting for {pattern!r}:\n{screen}")
            time.sleep(0.1)

    def keys(self, *keys: str) -> None:
        """Send tmux key names (``Enter``, ``Escape``, ``C-s``, a letter...), in one write."""
        self.tmux("send-keys", "-t", self.name, *keys)

    def text(self, text: str) -> None:
        """Send ``text`` literally, in one write (a paste-like burst of keys)."""
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def resize(self, columns: int, rows: int) -> None:
        """Resize the terminal (the app gets SIGWINCH)."""
        self.tmux("resize-window", "-t", self.name, "-x", str(columns), "-y", str(rows))

    def wait_exit(self, seconds: float = 60.0) -> str:
        """Wait for the command to end; its ``EXIT=<code>`` line."""
        deadline = time.monotonic() + seconds
        while not self.exit_file.exists():
            if time.monotonic() > deadline:
                raise AssertionError(f"the app did not exit:\n{self.screen()}")
            time.sleep(0.1)
        return self.exit_file.read_text().strip()

    def close(self) -> None:
        """End the tmux server and everything in it."""
        self.tmux("kill-server")
