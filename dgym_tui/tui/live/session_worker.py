"""The live episode's session, driven from one place: each blocking call (pdb, eval, Docker,
the LLM) on the session's own thread, one after the other, and closing it whatever runs."""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message_pump import MessagePump

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What a session call gave: ``value``, or the ``error`` it raised."""

    value: Any = None
    error: Exception | None = None


@dataclass(eq=False)
class SessionCall:
    """One call handed to :meth:`SessionWorker.call`: its ``name``; ``outcome`` once done;
    ``taken`` is set when the session's thread starts it."""

    name: str
    outcome: Outcome | None = None
    taken: threading.Event = field(default_factory=threading.Event)


def outcome(fn: Callable[[], Any]) -> Outcome:
    """Call ``fn()``; its value or its exception (shown to the person, never raised)."""
    try:
        return Outcome(fn())
    except Exception as exc:  # noqa: BLE001  the caller shows it
        return Outcome(error=exc)


class SessionWorker:
    """Owns a :class:`~dgym_tui.episode.session.Session` for the app.

    :meth:`call` runs a blocking session call on the session's own thread (one for the
    session's life, started at the first call), which posts
    :class:`~dgym_tui.tui.messages.CallDone` to the node that asked once the call
    returned; :meth:`close` writes the footer and closes the environment from any
    thread, cutting a running call short.

    One long-lived thread instead of a Textual thread worker per call: a worker started
    after the key's handler returned and the event loop ran its task, and its end came
    back through the executor's future, the worker's task and three ``StateChanged``
    messages, each an event-loop turn on the app's thread between pdb's answer and the
    frame that shows it (docs/performance.md).

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
        self._calls: queue.SimpleQueue[tuple[MessagePump, SessionCall, Callable[[], Any]] | None]
        self._calls = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pending = 0  # calls queued or running (read by idle)

    @property
    def idle(self) -> bool:
        """True when no call is queued or running."""
        return self._pending == 0

    def call(self, node: MessagePump, fn: Callable[[], Any], name: str = "",
             head_start: float = 0.0) -> SessionCall:
        """Run ``fn()`` on the session's thread; ``node`` then gets
        :class:`~dgym_tui.tui.messages.CallDone`.

        Calls run one after the other, in the order made; one that would start after
        :meth:`close` does not run (its outcome is empty). A call never fails: its
        outcome is ``fn``'s value or what it raised (:class:`Outcome`).

        Args:
            node: who gets the ``CallDone``.
            fn: the call.
            name: what it is (the caller's own bookkeeping).
            head_start: seconds to wait, at most, for the session's thread to take the
                call (0: return at once). The waiting thread gives up the GIL, and the
                session's thread keeps it until ``fn`` first waits (for pdb's answer,
                say): a quick step's command reaches pdb before this thread goes on;
                without it, only when this thread next waited, or at Python's switch
                interval (5 ms).
        """
        handle = SessionCall(name)
        with self._state_lock:
            self._pending += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="dgym-session",
                                                 daemon=True)
                self._thread.start()
        self._calls.put((node, handle, fn))
        if head_start > 0:
            handle.taken.wait(head_start)
        return handle

    def _serve(self) -> None:
        """The session's thread: run the calls in turn until :meth:`close`."""
        while (item := self._calls.get()) is not None:
            node, handle, fn = item
            try:
                with self._running:
                    handle.taken.set()
                    handle.outcome = Outcome() if self.closed else outcome(fn)
            finally:
                with self._state_lock:
                    self._pending -= 1
            # imported once the first call returned (the reset: after the app's first frame)
            from dgym_tui.tui.messages import CallDone

            node.post_message(CallDone(handle))  # thread-safe; False once node closed

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
            self.retire()
            self._close_done.set()

    def retire(self) -> None:
        """End the session's thread once the calls queued so far ran (a call made later
        starts another). Idempotent."""
        with self._state_lock:
            if self._thread is not None:
                self._thread = None
                self._calls.put(None)

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
