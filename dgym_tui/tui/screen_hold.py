"""Draw a quick step once: the screen waits for the step's end, or :data:`GRACE` seconds.

A step's start changes the screen (the console's echo of the command, the busy label and
spinner, the cleared input line), and a pdb step ends a few tens of milliseconds later.
Drawn at once, the start cost a frame of its own (a layout of the screen: the console
grew) on the app's thread while the step's worker thread needed it, so the step's own
frame came later (docs/performance.md). :class:`ScreenHold` keeps Textual from drawing
(``App.batch_update``, held open) from a step's start until the step ended or
:data:`GRACE` passed, whichever comes first: a quick step is drawn as one frame with its
result, and a slow one shows its echo and spinner after :data:`GRACE`. The garbage
collector waits too, from the hold to the frame after the release, or for a slow step
to the frame of its result (:meth:`ScreenHold.collector_waits_for_frame`), :data:`GC_RESUME`
seconds after the release at the latest: its young-generation passes (about one per
``n``, ~0.4 ms of the app's thread) ran wherever the step's allocations reached the
threshold, often between the key and the answer's frame; they run after it now, on the
same objects.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from dgym_tui.tui import pause_gc, resume_gc

#: Seconds a step's start waits to be drawn (about the longest delay a person does not
#: notice; a pdb step on an idle machine takes 10-30 ms).
GRACE = 0.1

#: Seconds after a release by which the collector runs again even if no frame came.
GC_RESUME = 0.5


def after_next_frame(app: Any, callback: Callable[[], Any]) -> None:
    """Call ``callback()`` once ``app``'s next frame was handed to the terminal driver:
    ``DgymApp.after_next_frame``; an app without it (another Textual app) calls it at the
    screen's next idle moment (``call_after_refresh``)."""
    getattr(app, "after_next_frame", app.call_after_refresh)(callback)


class ScreenHold:
    """Hold and release an app's screen updates.

    Args:
        app: the Textual ``App``.
        on_grace: called when a hold's grace ran out, just before the screen is released
            (what a slow step shows: its busy label and spinner); not when
            :meth:`release` comes first.
    """

    def __init__(self, app: Any, on_grace: Callable[[], None] | None = None) -> None:
        self._app = app
        self._on_grace = on_grace
        self._batch: AbstractContextManager[None] | None = None
        self._timer: Any = None
        self._gc_fallback: asyncio.TimerHandle | None = None  # the last release's GC_RESUME

    @property
    def held(self) -> bool:
        """True while the screen is held."""
        return self._batch is not None

    def hold(self, grace: float | None = None) -> None:
        """Draw nothing until :meth:`release`, at most ``grace`` seconds (None:
        :data:`GRACE`). Idempotent (a second call keeps the first deadline)."""
        if self._batch is not None:
            return
        grace = GRACE if grace is None else grace
        pause_gc()  # (a collector the program disabled stays so)
        if self._gc_fallback is not None:  # an earlier release's: not in this hold's frame
            self._gc_fallback.cancel()
            self._gc_fallback = None
        self._batch = self._app.batch_update()
        self._batch.__enter__()
        self._timer = self._app.set_timer(grace, self._grace_over, name="screen-hold")

    def _grace_over(self) -> None:
        self._timer = None
        if self._batch is not None and self._on_grace is not None:
            self._on_grace()
        self.release(collector_after_frame=False)

    def release(self, collector_after_frame: bool = True) -> None:
        """Draw what changed meanwhile (at the screen's next tick). Idempotent.

        Args:
            collector_after_frame: the collector runs again after the frame this draws;
                False (a slow step's grace over: its result is still to come) leaves it
                paused until :meth:`collector_waits_for_frame`'s frame, or
                :data:`GC_RESUME` seconds (the app's close resumes it too)."""
        batch, self._batch = self._batch, None
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.stop()
        if batch is None:
            return
        batch.__exit__(None, None, None)
        if collector_after_frame:
            after_next_frame(self._app, self._resume_gc)
        self._gc_fallback = asyncio.get_running_loop().call_later(  # (no task made)
            GC_RESUME, self._resume_gc)
        try:
            screen = self._app.screen
        except Exception:  # noqa: BLE001  no screen any more (the app is closing)
            self._resume_gc()
            return
        screen.check_idle()  # the screen's update timer resumes when something changed

    def collector_waits_for_frame(self) -> None:
        """Pause the garbage collector until the next frame was drawn (:data:`GC_RESUME` at
        the latest), as a hold's release does: for a slow step's result, whose handling
        and frame allocate enough for a young-generation pass or two (~1-7 ms on the app's
        thread between pdb's stop and its frame, in tmux). The collector waited since the
        step's start unless the step ran longer than the grace and :data:`GC_RESUME`.
        Does nothing while a hold is on (its release does it)."""
        if self._batch is not None:
            return
        pause_gc()
        if self._gc_fallback is not None:
            self._gc_fallback.cancel()
        after_next_frame(self._app, self._resume_gc)
        self._gc_fallback = asyncio.get_running_loop().call_later(GC_RESUME, self._resume_gc)

    def _resume_gc(self) -> None:
        """The collector runs again, unless a new hold began meanwhile. Idempotent."""
        if self._batch is None:
            resume_gc()
