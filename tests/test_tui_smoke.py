"""The real app in a real terminal: scripts/tmux_smoke.sh drives `dgym-tui` in tmux through
the task's description at start, a live resize to 80x24 and back, b, c, the variables and stack panes, a search, an edit, `w` with an outside edit of the
original present, and a replay of the recorded episode (see the script's header)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "tmux_smoke.sh"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.skipif(shutil.which("dgym-tui") is None, reason="dgym-tui is not installed")
def test_tmux_smoke():
    proc = subprocess.run(check=False, args=["bash", str(SCRIPT)], capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tmux_smoke: OK" in proc.stdout
