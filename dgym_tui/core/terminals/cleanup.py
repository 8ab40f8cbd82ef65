"""Registry of live terminals, closed at interpreter exit and on SIGTERM / SIGHUP.

Every terminal registers itself when it starts and unregisters when it closes.
Whatever is still registered when the interpreter exits (``atexit``) or when
the process receives SIGTERM or SIGHUP is closed, so no container or process
outlives its episode. After closing, a signal handler hands over to the
handler that was installed before it (the default one terminates the process,
with the usual exit status).

A process killed with SIGKILL cannot clean up; Docker containers carry labels
naming their owner process, and :func:`dgym_tui.core.terminals.docker.remove_stale_containers`
removes those whose owner is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from typing import Protocol


class _Closable(Protocol):
    def close(self) -> None: ...


#: Signals after which live terminals are closed.
HANDLED_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_lock = threading.RLock()
_live: dict[int, _Closable] = {}
_previous: dict[int, object] = {}
_atexit_installed = False
_closing = False


def register(terminal: _Closable) -> None:
    """Track ``terminal`` (any object with ``close()``) until :func:`unregister`.

    Installs the exit and signal handlers on first use (signal handlers only
    when called from the main thread; call :func:`install_handlers` from the
    main thread at program start when terminals are started in worker threads).
    """
    with _lock:
        _live[id(terminal)] = terminal
    install_handlers()


def unregister(terminal: _Closable) -> None:
    """Stop tracking ``terminal``. No error if it was not registered."""
    with _lock:
        _live.pop(id(terminal), None)


def live() -> list[_Closable]:
    """Return the terminals registered now (a copy, oldest first)."""
    with _lock:
        return list(_live.values())


def close_all() -> None:
    """Close every registered terminal (newest first); errors are reported on stderr, not raised."""
    global _closing
    with _lock:
        if _closing:
            return
        _closing = True
        terminals = list(_live.values())
    try:
        for terminal in reversed(terminals):
            try:
                terminal.close()
            except Exception as exc:  # noqa: BLE001  keep closing the others
                print(f"dgym-tui: could not close {terminal!r}: {exc}", file=sys.stderr)
            unregister(terminal)
    finally:
        with _lock:
            _closing = False


def closing_all() -> bool:
    """True while :func:`close_all` runs (the process is exiting or was signalled)."""
    return _closing


def install_handlers() -> bool:
    """Install the ``atexit`` hook and, from the main thread, the signal handlers.

    Idempotent. Returns True when the signal handlers are in place (False when
    called outside the main thread before they were installed).
    """
    global _atexit_installed
    with _lock:
        if not _atexit_installed:
            atexit.register(close_all)
            _atexit_installed = True
        if threading.current_thread() is not threading.main_thread():
            return bool(_previous)
        for signum in HANDLED_SIGNALS:
            current = signal.getsignal(signum)
            if current is _on_signal:
                continue
            try:
                signal.signal(signum, _on_signal)
            except (ValueError, OSError):  # not allowed here (embedded interpreter)
                continue
            _previous[signum] = current
        return bool(_previous)


def _set_handlers(handler) -> None:
    for signum in _previous:
        with contextlib.suppress(ValueError, OSError):
            signal.signal(signum, handler)


def _on_signal(signum: int, frame) -> None:
    """Close live terminals, then behave as the previously installed handler would.

    The handled signals are ignored while closing: one often follows another (a
    ``kill`` of a terminal's shell and of its program: the program gets SIGTERM, then
    SIGHUP when its terminal goes), and the second one's default action would end the
    process in the middle of the first one's cleanup."""
    _set_handlers(signal.SIG_IGN)
    close_all()
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous) or previous == signal.SIG_IGN:
        _set_handlers(_on_signal)  # the process goes on: handle the next one again
        if callable(previous):
            previous(signum, frame)
        return
    # Default action: terminate with this signal, as if we had never caught it.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
