"""Process checks shared by the tests: is a pid still running (terminal tests), a free port
and waiting for a server process to listen on it (MCP tests)."""

from __future__ import annotations

import time


def alive(pid: int) -> bool:
    """True if ``pid`` runs and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def wait_dead(pid: int, seconds: float = 5.0) -> bool:
    """Wait up to ``seconds`` for ``pid`` to end; True when it has."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not alive(pid)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(proc, port: int, seconds: float = 120.0) -> None:
    """Wait until ``proc`` (a ``subprocess.Popen``) accepts connections on 127.0.0.1:``port``.

    Raises:
        AssertionError: the process ended, or did not listen within ``seconds``.
    """
    import socket

    deadline = time.monotonic() + seconds
    while True:
        assert proc.poll() is None, f"the server ended with status {proc.returncode}"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, f"nothing listened on port {port}"
            time.sleep(0.1)
