"""The live episode's session, driven from one place: each blocking call (pdb, eval, Docker,
the LLM) in a Textual thread worker, and closing it whatever runs."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.dom import DOMNode
from textual.worker import Worker

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session

log = logging.getLogger(__name__)

#: The worker group of session calls (the screen tells their ends from other workers').
GROUP = "session"


@dataclass
class Outcome:
    """What a call in a worker gave: ``value``, or the ``error`` it raised."""

    value: Any = None
    error: Exception | None = None


def outcome(fn: Callable[[], Any]) -> Outcome:
    """Call ``fn()``; its value or its exception (shown to the person, never raised)."""
    try:
        return Outcome(fn())
    except Exception as exc:  # noqa: BLE001  the caller shows it
        return Outcome(error=exc)


class SessionWorker:
    """Owns a :class:`~dgym_tui.episode.session.Session` for the app.

    :meth:`call` runs a blocking session call in a thread worker of a node (the live
    screen, which gets the worker's ``StateChanged`` messages); :meth:`close` writes the
    footer and closes the environment from any thread, cutting a running call short.

    Args:
        session: the session (started or not).
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        #: True once the session has started (reset done, or a fork that is live).
        self.started = False
        #: True once :meth:`close` began: no call starts any more.
        self.closed = False
        self._state_lock = threading.Lock()
        self._running = threading.Lock()  # held while a call runs in its thread
        self._close_done = threading.Event()

    def call(self, node: DOMNode, fn: Callable[[], Any], name: str = "") -> Worker[Outcome]:
        """Run ``fn()`` in a thread worker of ``node`` (group :data:`GROUP`).

        Calls run one after the other; one that would start after :meth:`close` does not
        run. The worker never fails: its result is an :class:`Outcome` (``fn``'s value or
        what it raised), which reaches ``node`` in ``Worker.StateChanged``.
        """
        def run() -> Outcome:
            with self._running:
                if self.closed:
                    return Outcome()
                return outcome(fn)

        return node.run_worker(run, name=name, group=GROUP, thread=True, exit_on_error=False)

    def close(self, reason: str = "quit", timeout: float = 10.0) -> None:
        """Write the trajectory footer and close the environment. Idempotent.

        Safe from any thread except a call's own. When no call runs, the footer is
        written first (with the final patch), then the environment is closed. When one
        runs, the environment is closed first: that ends the step's processes, the step
        returns (or fails) and is recorded as usual, and then the footer is written.

        Args:
            reason: the footer's reason (``"quit"``, ``"error: ..."``).
            timeout: seconds to wait for a cut-short call to return before the footer
                is written anyway.
        """
        with self._state_lock:
            if self.closed:
                return
            self.closed = True
        idle = self._running.acquire(blocking=False)
        try:
            if not idle:
                self._close_env()
                idle = self._running.acquire(timeout=timeout)
                if not idle:
                    log.warning("a step did not return %.0f s after the environment closed",
                                timeout)
            self._finish(reason, timeout)
            self._close_env()
        finally:
            if idle:
                self._running.release()
            self._close_done.set()

    def wait_closed(self, timeout: float) -> bool:
        """Wait for a :meth:`close` running in another thread (True: it finished)."""
        return self._close_done.wait(timeout)

    def _finish(self, reason: str, timeout: float) -> None:
        """``session.finish(reason)`` in a helper thread, waiting at most ``timeout`` s."""
        finisher = threading.Thread(target=self.session.finish, args=(reason,), daemon=True)
        finisher.start()
        finisher.join(timeout)

    def _close_env(self) -> None:
        try:
            self.session.close()
        except Exception:
            log.exception("closing the environment failed")
