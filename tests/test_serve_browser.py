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

import contextlib
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
    assert command.startswith(f"exec {sys.executable} ")  # the app is the server's child
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


@contextlib.contextmanager
def _served(tmp_path, *args: str):
    """``dgym-tui ARGS --serve`` on a free port (its own session: killed as a group at the
    end); yields (the page's URL, the server's Popen)."""
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "dgym_tui.cli.tui", *args, "--serve", "--host", "127.0.0.1",
         "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")])})
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_for_page(url, server, time.monotonic() + 30)
        yield url, server
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


@pytest.fixture
def served_run(tmp_path):
    """A 3-episode run served by ``dgym-tui RUN --serve`` on a free port; yields the URL."""
    run = write_run(tmp_path / "run", 3)
    with _served(tmp_path, str(run)) as (url, _server):
        yield url


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


def _apps(marker: str) -> list:
    """The running app processes (and their children) whose command line holds ``marker``."""
    psutil = pytest.importorskip("psutil")
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if marker in line and "--serve" not in line and proc.pid != os.getpid():
            found.append(proc)
    return found


def _wait_gone(marker: str, seconds: float) -> list:
    """Wait up to ``seconds`` for every app process of ``marker`` to end; those left."""
    deadline = time.monotonic() + seconds
    while (left := [p for p in _apps(marker) if p.is_running() and p.status() != "zombie"]):
        if time.monotonic() > deadline:
            return left
        time.sleep(0.2)
    return []


@contextlib.contextmanager
def _browser(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch_persistent_context(
            tmp_path / "profile", executable_path=CHROMIUM, args=FLAGS, headless=True,
            viewport={"width": 1000, "height": 600}, timeout=30_000)
        try:
            yield browser
        finally:
            browser.close()


def _open_tab(browser, url: str, marker: str, count: int) -> object:
    """Open ``url`` in a new tab and wait until ``count`` app processes run."""
    page = browser.new_page()
    page.goto(url, wait_until="domcontentloaded", timeout=30_000)
    deadline = time.monotonic() + 30
    while len([p for p in _apps(marker) if "dgym_tui.cli.tui" in " ".join(p.cmdline())]) < count:
        assert time.monotonic() < deadline, "the tab's app did not start"
        page.wait_for_timeout(200)
    page.wait_for_timeout(3000)  # the app draws its first screen and starts its episode
    return page


@pytest.fixture
def served_repo(tmp_path):
    """A copy of data/mini/pagination served by ``dgym-tui REPO --serve`` (each tab debugs
    it, the local terminal); yields (URL, server, the repository's path: in every app's
    command line)."""
    repo = tmp_path / "served-repo"
    shutil.copytree(Path(__file__).resolve().parent.parent / "data" / "mini" / "pagination", repo)
    with _served(tmp_path, str(repo), "--terminal", "local", "--no-apply-prompt",
                 "--trajectory", str(tmp_path / "t.jsonl")) as (url, server):
        yield url, server, str(repo)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no chromium (scripts/setup_system.sh)")
def test_a_closed_tab_ends_its_app(served_repo, tmp_path):
    url, server, marker = served_repo
    with _browser(tmp_path) as browser:
        page = _open_tab(browser, url, marker, 1)
        assert _apps(marker)
        page.close()
        assert _wait_gone(marker, 10) == []
        assert server.poll() is None  # the server goes on serving


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no chromium (scripts/setup_system.sh)")
def test_sigterm_to_the_server_ends_every_app(served_repo, tmp_path):
    url, server, marker = served_repo
    with _browser(tmp_path) as browser:
        _open_tab(browser, url, marker, 1)
        _open_tab(browser, url, marker, 2)
        server.send_signal(signal.SIGTERM)
        assert _wait_gone(marker, 10) == []
        server.wait(10)


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no chromium (scripts/setup_system.sh)")
def test_an_app_whose_server_died_quits(served_repo, tmp_path):
    url, server, marker = served_repo
    with _browser(tmp_path) as browser:
        _open_tab(browser, url, marker, 1)
        server.kill()  # no clean-up of the server's own
        server.wait(10)
        assert _wait_gone(marker, 10) == []
