"""Blocking session calls in thread workers, and closing the session when the app quits."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.message import Message
from textual.message_pump import MessagePump

from dgym_tui.core.errors import first_line
from dgym_tui.tui import resume_gc
from dgym_tui.tui.screens.modals import CodeEditScreen, QuitScreen

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session

log = logging.getLogger(__name__)


class CallDone(Message):
    """A session call of a worker returned (posted after the call's own events)."""


class SessionCalls(MessagePump):
    """Mixin of :class:`~dgym_tui.tui.app.DgymApp`: runs one blocking Session call at a time
    in a thread worker (spinner, errors as notifications) and closes the session on quit.
    """

    def _calling(self, running: bool) -> None:
        """Count session calls running in worker threads (any thread may call this)."""
        with self._close_lock:
            self._calls += 1 if running else -1
            if self._calls:
                self._idle.clear()
            else:
                self._idle.set()

    def _to_ui(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        """Run ``callback`` on the app's thread from a worker, unless the app is closing.

        While the app quits, its event loop may be waiting for this very
        worker (or already be gone), so nothing is handed over any more.
        """
        if self._session_closed:
            return
        try:
            self.call_from_thread(callback, *args, **kwargs)
        except RuntimeError:  # the app stopped meanwhile
            log.debug("app gone before %s", getattr(callback, "__name__", callback))

    @work(thread=True, group="session", exit_on_error=False)
    def _start_session(self) -> None:
        self._calling(True)
        try:
            self.session.start()
        except Exception as exc:  # noqa: BLE001  shown as one line, exit code 2
            message = first_line(exc)
            self._to_ui(self._start_failed, message)
            return
        finally:
            self._calling(False)
        self.post_message(CallDone())

    def _start_failed(self, message: str) -> None:
        self._set_busy(None)
        if self._session_closed:  # quit while starting: not an error
            return
        self.start_error = f"dgym-tui: could not start the episode: {message}"
        self.exit(2, return_code=2)

    def _set_busy(self, label: str | None) -> None:
        self.busy = label is not None
        self.status.set_busy(label)
        if label is None:
            self._screen_hold.release()  # the call's end and its result: one frame

    def _call_refused(self) -> str | None:
        """Why a session call cannot start now (a call runs, the episode has not started),
        or None."""
        if self.busy:
            return "busy: wait for the current step to finish (the key was dropped)"
        if not self.started:
            return "the episode has not started yet (the key was dropped)"
        return None

    def _session_call(self, label: str, fn: Callable[[], Any],
                      failed: Callable[[str], None] | None = None) -> bool:
        """Run ``fn`` (a blocking Session call) in a thread worker unless one is running.

        Args:
            label: what the spinner says.
            fn: the call.
            failed: called on the UI thread with the error's first line when ``fn``
                raises (default: an error notification).

        Returns:
            False (and a notification) when another call is still running.
        """
        if self.session is None:
            return False
        refused = self._call_refused()
        if refused is not None:
            self.notify(refused, severity="warning")
            return False
        if self.session.done:
            self.notify("the episode is over", severity="warning")
            return False
        self._screen_hold.hold()  # a quick call is drawn once, with its result
        self._set_busy(label)
        if self.source_view.preview is not None:  # a decision (or a step) ends the preview
            self.source_view.set_preview(None)
        self._run_session_call(fn, failed or self._step_failed)
        return True

    @work(thread=True, group="session", exit_on_error=False)
    def _run_session_call(self, fn: Callable[[], Any], failed: Callable[[str], None]) -> None:
        self._calling(True)
        try:
            fn()
        except Exception as exc:  # noqa: BLE001  the session already emitted "error"
            text = first_line(exc)
            self._to_ui(failed, text)
        finally:
            self._calling(False)
            self.post_message(CallDone())

    def _step_failed(self, text: str) -> None:
        self.notify(text, severity="error", title="step failed")

    async def action_quit_app(self) -> None:
        """Finish the episode, close the environment (in a thread), then exit.

        A step still running is cut short: closing the environment ends its
        pdb / terminal processes, so quitting never waits for a step's timeout.
        """
        if self._session_closed:
            return
        if isinstance(self.screen, CodeEditScreen):  # ctrl+c in the editor: keep the edit
            self.notify("an edit is open: ctrl+s rewrites it, escape cancels it; then q quits",
                        severity="warning", title="not quitting")
            return
        if (self._unapplied_fix() and not self._quit_confirmed
                and not isinstance(self.screen, QuitScreen)):  # ctrl+c there: quit anyway
            self.push_screen(QuitScreen(self.session.source_path, self._last_result.changed_files),
                             self._quit_answer)
            return
        self._set_busy("closing")
        await asyncio.to_thread(self.close_session, "quit")
        self.exit(self.return_code or 0)

    async def on_unmount(self) -> None:
        """The app shuts down: close the session if nothing did yet, so the episode's
        processes (terminal, pdb) end whatever way the app was left (``ctrl+q``, the
        palette's Quit, a test's Pilot), and wait for a close still running (``q``
        whose action the shutdown cut short). An app that failed (exit code other
        than 0) leaves the closing, with the reason, to its caller (``dgym-tui``)."""
        if not self._session_closed and not self.return_code:
            await asyncio.to_thread(self.close_session, "quit")
        elif self._session_closed:
            await asyncio.to_thread(self._close_done.wait, 30.0)

    def close_session(self, reason: str = "quit", timeout: float = 10.0) -> None:
        """Write the trajectory footer and close the environment / replay. Idempotent.

        Safe from any thread except the one running a session call. When no
        step runs, the footer is written first (with the final patch), then
        the environment is closed. When a step runs, the environment is
        closed first: that ends the step's processes, the step returns (or
        fails) and is recorded as usual, and then the footer is written.

        Args:
            reason: the footer's reason (``"quit"``, ``"error: ..."``).
            timeout: seconds to wait for a cut-short step to return before
                the footer is written anyway.
        """
        with self._close_lock:
            if self._session_closed:
                return
            self._session_closed = True
            running = self._calls > 0
        session = self.session
        if session is not None:
            if running:
                self._close_env(session)
                if not self._idle.wait(timeout):
                    log.warning("a step did not return %.0f s after the environment closed",
                                timeout)
                self._finish(session, reason, timeout)
            else:
                self._finish(session, reason, timeout)
                self._close_env(session)
        if self.replay is not None:
            self.replay.close()
        self._unfreeze_gc()
        self._close_done.set()

    def _freeze_gc(self) -> None:
        """Keep the objects made so far (imported modules, the app's widgets, a loaded
        trajectory) out of the garbage collector's full passes until the app closes.

        They live as long as the app, and a full pass re-scanning them delayed a stop
        (docs/performance.md). Each call also freezes the objects made since the last
        one. Undone by :meth:`_unfreeze_gc`."""
        gc.freeze()
        self._gc_frozen = True

    def _unfreeze_gc(self) -> None:
        """Hand the objects frozen by :meth:`_freeze_gc` back to the garbage collector
        (and resume it, for an app closed before its first frame: ``dgym_tui.tui.pause_gc``)."""
        resume_gc()
        if self._gc_frozen:
            self._gc_frozen = False
            gc.unfreeze()

    @staticmethod
    def _finish(session: Session, reason: str, timeout: float) -> None:
        """``session.finish(reason)`` in a helper thread, waiting at most ``timeout`` s."""
        finisher = threading.Thread(target=session.finish, args=(reason,), daemon=True)
        finisher.start()
        finisher.join(timeout)

    @staticmethod
    def _close_env(session: Session) -> None:
        try:
            session.close()
        except Exception:
            log.exception("closing the environment failed")
