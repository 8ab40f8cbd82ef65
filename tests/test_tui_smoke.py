"""The real app in a real terminal: scripts/tmux_smoke.sh drives `dgym-tui --task` in tmux."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "tmux_smoke.sh"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
@pytest.mark.skipif(shutil.which("dgym-tui") is None, reason="dgym-tui is not installed")
def test_tmux_smoke():
    proc = subprocess.run(check=False, args=["bash", str(SCRIPT), "bank_account"], capture_output=True,
                          text=True, timeout=420)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "tmux_smoke: OK" in proc.stdout
