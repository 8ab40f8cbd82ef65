"""LocalTerminal: run the episode's commands as host subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pexpect

from . import cleanup
from .base import DEFAULT_MAX_OUTPUT, RunResult, Terminal, TerminalError
from .output import BoundedOutput


class LocalTerminal(Terminal):
    """Runs commands on this machine, in the working copy, each in its own process group.

    Every process started here is killed at ``close()`` (and by the environment's
    exit handlers), so nothing outlives the episode.
    """

    def __init__(self) -> None:
        self.workdir = ""
        self._children: list = []

    def start(self, host_root: str) -> None:
        if not os.path.isdir(host_root):
            raise TerminalError(f"working copy {host_root!r} does not exist")
        self.workdir = os.path.realpath(host_root)
        cleanup.register(self)

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        env = dict(os.environ)
        env.update({"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
                    "TERM": "dumb", "COLUMNS": "200", "PAGER": "cat"})
        env.update(extra or {})
        return env

    def run(self, command: str, timeout: float = 60.0, max_output: int = DEFAULT_MAX_OUTPUT,
            env: dict[str, str] | None = None) -> RunResult:
        if not self.workdir:
            raise TerminalError("terminal not started; call start() first")
        proc = subprocess.Popen(["sh", "-c", command], cwd=self.workdir, env=self._env(env),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        self._children.append(proc)
        out = BoundedOutput(max_output)
        deadline = time.monotonic() + timeout
        timed_out = False
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        import selectors

        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not sel.select(min(left, 1.0)):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                out.feed(chunk)
        if timed_out:
            _kill_group(proc.pid)
        proc.stdout.close()
        code = proc.wait()
        if proc in self._children:  # close() from another thread may have cleared the list
            self._children.remove(proc)
        return RunResult(exit_code=None if timed_out else code, output=out.text(),
                         timed_out=timed_out, truncated_bytes=out.dropped)

    def spawn(self, command: str, env: dict[str, str] | None = None):
        if not self.workdir:
            raise TerminalError("terminal not started; call start() first")
        child = pexpect.spawn("sh", ["-c", command], cwd=self.workdir, env=self._env(env),
                              encoding="utf-8", codec_errors="replace", echo=False,
                              dimensions=(50, 200))
        self._children.append(child)
        return child

    def close(self) -> None:
        for child in self._children:
            pid = getattr(child, "pid", None)
            if pid:
                _kill_group(pid)
            if isinstance(child, pexpect.spawn):
                child.close(force=True)
        self._children.clear()
        cleanup.unregister(self)


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (ignore if already gone)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
