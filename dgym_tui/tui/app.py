"""The dgym-tui Textual app: one episode, live or replayed, on its own screen.

A live session is shown by :class:`~dgym_tui.tui.live.screen.LiveScreen` (watch, step,
approve, edit, reject or take over each turn), a recorded trajectory by
:class:`~dgym_tui.tui.replay.screen.ReplayScreen`. Forking a replay (``f``) or branching a
live episode switches to a new live screen. The app itself holds what outlives a screen:
the session's :class:`~dgym_tui.tui.live.session_worker.SessionWorker` (closed when the
app quits, whatever way), the themes, and the garbage collector's freezing.
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen

from dgym_tui.core.safetext import one_line, strip_controls
from dgym_tui.tui import pause_gc, resume_gc
from dgym_tui.tui.episode_screen import EpisodeScreen
from dgym_tui.tui.key_order import OrderedKeys
from dgym_tui.tui.live.screen import LiveScreen
from dgym_tui.tui.live.session_worker import SessionWorker
from dgym_tui.tui.themes import load_themes

if TYPE_CHECKING:
    from dgym_tui.episode.session import Session
    from dgym_tui.tui.live.running import Live
    from dgym_tui.tui.replay.screen import ReplayScreen
    from dgym_tui.tui.replay_model import ReplayModel
    from dgym_tui.tui.widgets.console import PdbConsole
    from dgym_tui.tui.widgets.source_view import SourceView
    from dgym_tui.tui.widgets.status_bar import StatusBar
    from dgym_tui.tui.widgets.transcript import Transcript


class DgymApp(OrderedKeys, App[int]):
    """The dgym-tui app.

    Args:
        session: a live :class:`~dgym_tui.episode.session.Session` (not started; the
            live screen starts it in a worker). Mutually exclusive with ``replay``.
        replay: a :class:`~dgym_tui.tui.replay_model.ReplayModel` to browse.
        fork: ``fork(step) -> Session`` building a live session whose first
            ``step`` actions were re-executed (replay's ``f``); None disables forking.
        ask_apply: offer to apply the patch to the original repository when
            the episode ends.
        can_apply: False when the original is not the user's (a benchmark
            task's scratch copy): ``w`` is off and nothing is offered.
        theme_name: theme to start with (default ``dgym-dark``).

    The app's return code (``app.return_code``) is 2 when the episode could
    not start (:attr:`start_error` says why), else 0.
    """

    CSS_PATH = "app.tcss"
    #: Below 100 columns the file tree and the side column start hidden ([ and ] show them).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]
    TITLE = "dgym-tui"
    ENABLE_COMMAND_PALETTE = True
    #: The screen of a replay (a subclass may add keys); None:
    #: :class:`~dgym_tui.tui.replay.screen.ReplayScreen`, imported only for a replay (it and
    #: the patch parser it needs are not on a live session's first frame).
    REPLAY_SCREEN: ClassVar[type[ReplayScreen] | None] = None
    #: ctrl+c quits from a dialog too (the screens' own keys are in dgym_tui.tui.keys).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "quit_app", "Quit", show=False, priority=True)]

    def __init__(self, session: Session | None = None, replay: ReplayModel | None = None,
                 fork: Callable[[int], Session] | None = None, ask_apply: bool = True,
                 theme_name: str = "dgym-dark", can_apply: bool = True) -> None:
        super().__init__()
        if (session is None) == (replay is None):
            raise ValueError("give exactly one of session= or replay=")
        self.worker = SessionWorker(session) if session is not None else None
        self.replay_screen: ReplayScreen | None = None
        if replay is not None:
            from dgym_tui.tui.replay.screen import ReplayScreen

            self.replay_screen = (self.REPLAY_SCREEN or ReplayScreen)(replay, fork)
        self.ask_apply = ask_apply
        self.can_apply = can_apply
        self.start_error: str | None = None
        self._forks = 0  # live screens gone to (each the base of its own mode)
        #: True once :meth:`close_session` began.
        self.closed = False
        self._gc_frozen = False
        self._after_frame: list[Callable[[], Any]] = []  # after_next_frame's callbacks
        #: dgym's own warnings while the app ran, each once (:class:`WarningToasts`).
        self.warnings = WarningToasts(self)
        # The imported modules (and a loaded trajectory) live as long as the app: kept out
        # of full passes from now on; a live session freezes its start-up objects again.
        self.freeze_gc()
        for theme in load_themes():
            self.register_theme(theme)
        if theme_name in self.available_themes:
            # Set before the first paint: on_mount would re-parse all CSS and restyle
            # every widget a second time.
            self.theme = theme_name

    def refresh_css(self, animate: bool = True) -> None:
        """Textual's, except before the first screen is installed, when nothing is styled
        yet: the theme set in ``__init__`` queues this refresh, and Textual's re-parsed
        the app's CSS into a new stylesheet and emptied this one's parse cache, so that
        the first styling parsed it again (~7 ms of the first frame). Then the stylesheet
        takes the theme's variables and parses its sources so far in them, into its own
        parse cache, which the first styling reuses."""
        if self.screen_stack:
            super().refresh_css(animate)
            return
        self.stylesheet.set_variables(self.get_css_variables())
        self.stylesheet.parse()

    # -- screens ---------------------------------------------------------------------------
    def get_default_screen(self) -> Screen:
        """The episode's screen (live or replay) with its breakpoint classes for the
        terminal's size, set before the screen is first styled: its first resize would
        otherwise add them and restyle every widget a second time before the first paint."""
        if self.replay_screen is not None:
            return self._sized(self.replay_screen)
        assert self.worker is not None
        return self._sized(LiveScreen(self.worker, self.ask_apply, self.can_apply))

    def _sized(self, screen: Screen) -> Screen:
        width, height = self.size
        screen.add_class(*screen._get_breakpoint_classes(width, self.HORIZONTAL_BREAKPOINTS),
                         *screen._get_breakpoint_classes(height, self.VERTICAL_BREAKPOINTS),
                         update=False)
        return screen

    def go_live(self, worker: SessionWorker, live: Live, can_apply: bool | None = None) -> None:
        """Go on in a session that is already running (a replay's fork, a live branch):
        a live screen replaces the episode's screen."""
        if self.replay_screen is not None:
            self.replay_screen.close()
            self.replay_screen = None
        self.unfreeze_gc()
        if self.worker is not None and self.worker is not worker:
            self.worker.retire()  # a branch's parent: its thread ends after its last call
        self.worker = worker
        allowed = self.can_apply if can_apply is None else can_apply
        screen = self._sized(LiveScreen(worker, self.ask_apply, allowed, live))
        old = self.current_mode
        self._forks += 1
        self.add_mode(f"fork-{self._forks}", lambda: screen)
        self.switch_mode(f"fork-{self._forks}")
        if old != self.DEFAULT_MODE:  # Textual cannot remove its default mode: it stays hidden
            self.remove_mode(old)

    @property
    def episode_screen(self) -> EpisodeScreen:
        """The screen showing the episode (under any dialog)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, EpisodeScreen)
        return screen

    def _get_dom_base(self) -> DOMNode:
        """``app.query_one`` and friends look in the episode's screen (Textual's own look
        in the first screen, which a fork replaced)."""
        return self.episode_screen if self.screen_stack else super()._get_dom_base()

    @property
    def session(self) -> Session | None:
        """The live session (a fork's once forked), or None for a replay."""
        return self.worker.session if self.worker is not None else None

    @property
    def started(self) -> bool:
        return self.worker is not None and self.worker.started

    @property
    def busy(self) -> bool:
        """True while a session call (or a fork) runs."""
        return bool(self.episode_screen.busy) if self.screen_stack else False

    @property
    def source_view(self) -> SourceView:
        return self.episode_screen.source_view

    @property
    def pdb_console(self) -> PdbConsole:
        return self.episode_screen.pdb_console

    @property
    def status(self) -> StatusBar:
        return self.episode_screen.status

    @property
    def transcript(self) -> Transcript:
        return self.episode_screen.transcript

    def notify(self, message: str, *, title: str = "", severity: Any = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Textual's toast, always as plain text: a toast often names a file, a frame or an
        error the sandbox wrote, so it is never read as markup and its terminal controls are
        removed (widgets' ``notify`` comes here too). ``markup`` is accepted and ignored."""
        super().notify(strip_controls(str(message)), title=one_line(str(title)),
                       severity=severity, timeout=timeout, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Built-in commands (themes, quit, ...) plus one per key action available now."""
        yield from super().get_system_commands(screen)
        if self.screen_stack:
            yield from self.episode_screen.key_commands()

    def on_load(self) -> None:
        pause_gc()  # the app runs: until its first frame (on_mount), if dgym-tui did not yet

    def on_mount(self) -> None:
        logging.getLogger(WarningToasts.LOGGER).addHandler(self.warnings)
        self.call_after_refresh(resume_gc)  # after the first frame

    # -- quitting ----------------------------------------------------------------------------
    async def action_quit_app(self) -> None:
        """Finish the episode, close the environment (in a thread), then exit.

        A step still running is cut short: closing the environment ends its
        pdb / terminal processes, so quitting never waits for a step's timeout.
        """
        if self.closed:
            return
        screen = self.episode_screen
        if isinstance(screen, LiveScreen) and not screen.ask_quit():
            return
        screen.busy = "closing"
        await asyncio.to_thread(self.close_session, "quit")
        self.exit(self.return_code or 0)

    async def on_unmount(self) -> None:
        """The app shuts down: close the session if nothing did yet, so the episode's
        processes (terminal, pdb) end whatever way the app was left (``ctrl+q``, the
        palette's Quit, a test's Pilot), and wait for a close still running (``q``
        whose action the shutdown cut short). An app that failed (exit code other
        than 0) leaves the closing, with the reason, to its caller (``dgym-tui``)."""
        if not self.closed and not self.return_code:
            await asyncio.to_thread(self.close_session, "quit")
        elif self.closed and self.worker is not None:
            await asyncio.to_thread(self.worker.wait_closed, 30.0)
        logging.getLogger(WarningToasts.LOGGER).removeHandler(self.warnings)

    def close_session(self, reason: str = "quit", timeout: float = 10.0) -> None:
        """Write the trajectory footer and close the environment / the replay. Idempotent;
        safe from any thread (see :meth:`SessionWorker.close`)."""
        self.closed = True
        if self.worker is not None:
            self.worker.close(reason, timeout)
        if self.replay_screen is not None:
            self.replay_screen.close()
        self.unfreeze_gc()

    def after_next_frame(self, callback: Callable[[], Any]) -> None:
        """Call ``callback()`` once the next frame was handed to the terminal driver
        (Textual's ``call_after_refresh`` runs at the screen's next idle moment, which can
        come before the widgets changed by a step asked for that frame)."""
        self._after_frame.append(callback)

    def _display(self, screen: Screen, renderable: Any) -> None:
        super()._display(screen, renderable)
        if self._after_frame:
            callbacks, self._after_frame = self._after_frame, []
            for callback in callbacks:
                callback()

    def freeze_gc(self) -> None:
        """Keep the objects made so far (imported modules, the app's widgets, a loaded
        trajectory) out of the garbage collector's full passes until the app closes.

        They live as long as the app, and a full pass re-scanning them delayed a stop
        (docs/performance.md). Each call also freezes the objects made since the last
        one. Undone by :meth:`unfreeze_gc`."""
        gc.freeze()
        self._gc_frozen = True

    def unfreeze_gc(self) -> None:
        """Hand the objects frozen by :meth:`freeze_gc` back to the garbage collector
        (and resume it, for an app closed before its first frame: ``dgym_tui.tui.pause_gc``)."""
        resume_gc()
        if self._gc_frozen:
            self._gc_frozen = False
            gc.unfreeze()


class WarningToasts(logging.Handler):
    """The warnings of dgym's own modules (the environment's, the session's) while the app
    runs: a Textual app shows nothing its code prints on stderr, so each distinct warning
    is shown once as a toast (plain text, one line) and kept in :attr:`lines`, which
    ``dgym-tui`` prints on stderr when the app has ended. Thread-safe (logging holds the
    handler's lock around :meth:`emit`).

    Attributes:
        lines: the distinct warnings (one line each), in the order they came.
    """

    #: The logger it listens to (every dgym module's logger is below it).
    LOGGER = "dgym_tui"
    #: Seconds a warning's toast stays.
    TIMEOUT = 15.0

    def __init__(self, app: App) -> None:
        super().__init__(logging.WARNING)
        self.app = app
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = one_line(record.getMessage())
        except Exception:  # noqa: BLE001  a malformed record: logging's own report
            self.handleError(record)
            return
        if text in self.lines:
            return
        self.lines.append(text)
        if self.app.is_running:
            self.app.notify(text, severity="error" if record.levelno >= logging.ERROR
                            else "warning", timeout=self.TIMEOUT)
