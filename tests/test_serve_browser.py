"""``dgym-tui RUN --serve`` in a real headless browser: Debian's chromium driven by playwright.

The page shows the run browser's table; ``u`` filters it (the screen changes,
a screenshot is saved and its path printed); ``enter`` opens the episode's steps.

The server runs as a real ``dgym-tui`` process; the browser loads its page,
whose script starts the app (a subprocess of the server) over a websocket.
The terminal is drawn on a canvas, so the test reads what the app sent: the
websocket frames the page received (the terminal's output bytes).
Skipped where chromium or playwright is missing (scripts/test.sh installs both).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from run_folders import write_run

from dgym_tui.tui.serve import page_url, served_command

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Control sequences of the terminal output (colours, cursor moves), removed before reading text.
ESCAPES = re.compile(rb"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")

pytestmark = pytest.mark.timeout(240)


def test_served_command_drops_the_server_options():
    command = served_command(["runs/a", "--serve", "--host", "0.0.0.0", "--port=9000",
                              "--theme", "dgym-light", "runs/b"])
    assert command.endswith(" -m dgym_tui.cli.tui runs/a --theme dgym-light runs/b")
    assert command.startswith(sys.executable)
    assert page_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert page_url("0.0.0.0", 80) == f"http://{socket.getfqdn()}:80"  # a name others reach


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_page(url: str, server: subprocess.Popen, deadline: float) -> None:
    while time.monotonic() < deadline:
        assert server.poll() is None, "the server exited"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


@pytest.fixture
def served_run(tmp_path):
    """A 3-episode run served by ``dgym-tui RUN --serve`` on a free port; yields the URL."""
    run = write_run(tmp_path / "run", 3)
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "dgym_tui.cli.tui", str(run), "--serve", "--host", "127.0.0.1",
         "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])})
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_for_page(url, server, time.monotonic() + 30)
        yield url
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(server.pid, signal.SIGKILL)  # the server and any app it still runs
        except ProcessLookupError:
            pass
        server.wait(10)
        log.close()


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no chromium (scripts/setup_system.sh)")
def test_browser_shows_the_run_browser_and_takes_keys(served_run, tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    received = bytearray()

    def on_websocket(ws) -> None:
        ws.on("framereceived", lambda payload: received.extend(
            payload if isinstance(payload, bytes) else payload.encode()))

    def text() -> str:
        return ESCAPES.sub(b"", bytes(received)).decode("utf-8", "replace")

    def wait_for(needle: str, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while needle not in text():
            assert time.monotonic() < deadline, f"{needle!r} never shown; got {text()[-2000:]!r}"
            page.wait_for_timeout(100)

    with sync_api.sync_playwright() as playwright:
        # a fresh profile folder: playwright passes it as --user-data-dir
        browser = playwright.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=CHROMIUM, args=FLAGS, headless=True,
            viewport={"width": 1400, "height": 800}, timeout=30_000)
        try:
            page = browser.new_page()
            page.on("websocket", on_websocket)
            page.goto(served_run, wait_until="domcontentloaded", timeout=30_000)
            # the run browser's table: its headings, its rows, its summary line
            wait_for("end reason")
            wait_for("t0002")
            wait_for("3 episode(s)")
            before = page.screenshot()
            assert "unresolved only" not in text()
            page.locator(".textual-terminal").click()
            page.keyboard.press("u")  # unresolved episodes only
            wait_for("unresolved only")
            page.wait_for_timeout(500)  # let the canvas draw the new frame
            shot = tmp_path / "served-run-browser.png"
            after = page.screenshot(path=str(shot))
            print(f"screenshot: {shot}")
            assert after != before
            # enter opens the episode's steps inside the served app (the tab's session goes on)
            page.keyboard.press("Enter")
            wait_for("t0002 (debug_agent × stub, t0002) · 4 step(s) · not resolved")
        finally:
            browser.close()
