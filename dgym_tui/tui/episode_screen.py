"""What the live and the replay screen share: the layout, the views of one step, the layout
keys and the key table's help."""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.keys import format_key
from textual.reactive import reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from dgym_tui.core.safetext import one_line, strip_controls
from dgym_tui.core.types import StepResult
from dgym_tui.tui.keys import KeySpec, QuietKeys
from dgym_tui.tui.partial_update import draw_changed_widgets_only
from dgym_tui.tui.widgets.approve_panel import ApprovePanel
from dgym_tui.tui.widgets.console import PdbConsole
from dgym_tui.tui.widgets.debug_panel import DebugPanel
from dgym_tui.tui.widgets.diff_view import DiffView
from dgym_tui.tui.widgets.file_tree import FileTree
from dgym_tui.tui.widgets.footer import KeyFooter
from dgym_tui.tui.widgets.source_view import SourceView
from dgym_tui.tui.widgets.status_bar import StatusBar
from dgym_tui.tui.widgets.transcript import Transcript, format_action

if TYPE_CHECKING:
    from typing import TypeVar

    from dgym_tui.episode.records import Turn
    from dgym_tui.tui.app import DgymApp

    _W = TypeVar("_W", bound=Widget)

#: The help screen's rows for the panes' own keys (their bindings live on the panes).
SOURCE_KEYS = [
    ("n / s / c / r", "pdb next / step / continue / return"),
    ("u / d", "pdb up / down the stack"),
    ("b or gutter click", "toggle a breakpoint at the cursor line"),
    ("E", "edit the selected lines (else the cursor line); ctrl+s rewrites, esc cancels"),
    ("V, then j / k", "select lines (vim visual-line); V or esc ends the selection"),
    ("up / down / j / k / pgup / pgdn / home / end", "move the cursor"),
    ("G", "last line"),
    (":41", "go to line 41 (the console opens with :)"),
    ("/text, then ; / ,", "search; next / previous match (n stays pdb's next)"),
    (".", "back to the current frame"),
    ("left / right", "scroll long lines")]
DEBUG_KEYS = [
    ("enter (variables)", "expand / fold a container; changed values are highlighted"),
    ("v (variables)", "locals / globals of the selected frame"),
    ("enter / click (stack)", "select a frame (pdb u N / d N)"),
    ("enter / del / c (breakpoints)", "on / off, remove, condition")]
LAYOUT_KEYS = [
    ("z", "zoom the focused pane (source, console scroll-back, side column); z: back"),
    ("[ / ]", "show or hide the file tree / the side column (hidden below 100 columns)"),
    ("Z (transcript)", "expand or fold every long observation")]


def breakpoint_marks(result: StepResult, path: str | None) -> dict[int, str | None]:
    """The source view's marks of ``path``'s breakpoints in ``result``: line (1-based) ->
    condition, None for a plain breakpoint."""
    return {int(line): result.conditions.get(f"{bp_path}:{line}")
            for bp_path, line in result.breakpoints if bp_path == path}


class EpisodeScreen(QuietKeys, Screen[None]):
    """One episode on screen: file tree, source view, console, side column (Debug,
    Transcript, Diff), status bar and footer.

    Subclasses say which keys they have (:attr:`SPECS`, from :data:`~dgym_tui.tui.keys.KEYS`),
    when each works (:meth:`key_state`) and how a file's text is found (:meth:`open_file`).
    """

    #: This screen's key actions (its ``BINDINGS`` are built from them).
    SPECS: ClassVar[tuple[KeySpec, ...]] = ()
    #: What the spinner says while something runs ("" when nothing does). Its watcher
    #: updates the status bar, which draws its own row: the screen is not repainted (a
    #: repaint of the screen drew every widget again, twice a step).
    busy: reactive[str] = reactive("", init=False, repaint=False)

    app: DgymApp  # type: ignore[assignment]  # the app of this package

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.QUIET = frozenset(spec.name for spec in cls.SPECS if spec.quiet)
        cls.SPEC_OF = {spec.name: spec for spec in cls.SPECS}

    #: :attr:`SPECS` by action name.
    SPEC_OF: ClassVar[dict[str, KeySpec]] = {}

    def __init__(self, first_tab: str = "tab-transcript") -> None:
        super().__init__()
        # a step's frame draws only the panes it changes, not every pane between them
        draw_changed_widgets_only(self)
        self.first_tab = first_tab  # the side column's tab shown first
        self._current_path: str | None = None
        self._last_result: StepResult | None = None
        self._shown = False  # shown once (on_screen_resume)
        self._panes: dict[type, Any] = {}  # :meth:`pane`'s widgets found
        # The source view has the focus from the compose on (Textual's default focused the
        # first focusable widget, the file tree, and the mount moved it: two more restyles
        # before the first frame); on_mount hands later showings back to the default.
        self.AUTO_FOCUS = "#source"  # type: ignore[misc]  # this screen only, until mounted

    def compose(self) -> ComposeResult:
        with Horizontal(id="body"):
            yield FileTree(id="tree")
            with Vertical(id="center"):
                source = SourceView(id="source")
                # Styled focused from its mount on (:focus): the screen focuses it (AUTO_FOCUS,
                # then on_mount), and that focus, set after the mount had styled it,
                # restyled it again (~2 ms: the view and its 10 component classes).
                source.set_reactive(Widget.has_focus, True)
                yield source
                yield ApprovePanel(id="approve")
                yield PdbConsole(id="console")
            with TabbedContent(id="side", initial=self.first_tab) as side:
                side.ALLOW_MAXIMIZE = True  # type: ignore[misc]  # z zooms the whole column
                with TabPane("Debug", id="tab-debug"):
                    yield DebugPanel(id="debug")
                with TabPane("Transcript", id="tab-transcript"):
                    yield Transcript(id="transcript")
                with TabPane("Diff", id="tab-diff"):
                    yield DiffView(id="diff")
        yield StatusBar(id="status")
        yield KeyFooter(always=("quit_app", "help"))  # at 80 columns too

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown: Textual's own handler (after this one) styles every widget again, which
        the first time only repeats what their mount just did (the app's stylesheet and
        theme are set before the screen is built): ~15-40 ms of the first frame for ~55
        widgets, skipped then (tests/test_tui_first_source.py checks the styles)."""
        if not self._shown:
            event.refresh_styles = False
        self._shown = True

    def on_mount(self) -> None:
        # Focus at once, not after the next refresh (Widget.focus), so that the footer
        # builds the keys of the focused source view into the first frame (the compose
        # focused it already: AUTO_FOCUS).
        self.set_focus(self.source_view)
        del self.AUTO_FOCUS  # the class's (Textual's default) from now on
        self.show_episode()
        self.query_one(KeyFooter).show_keys()

    def show_episode(self) -> None:
        """Fill the views when the screen is mounted."""

    def watch_busy(self, label: str) -> None:
        self.status.set_busy(label or None)

    def pane(self, kind: type[_W]) -> _W:
        """The screen's widget of type ``kind`` (``query_one(kind)``), looked up once while
        it stays mounted: a step asked for ~10 of them, each query a walk of the DOM.

        Raises:
            NoMatches: no such widget (not composed yet)."""
        widget = self._panes.get(kind)
        if widget is None or widget.parent is None:  # first asked, or removed since
            widget = self._panes[kind] = self.query_one(kind)
        return widget  # type: ignore[no-any-return]

    @property
    def source_view(self) -> SourceView:
        return self.pane(SourceView)

    @property
    def pdb_console(self) -> PdbConsole:
        return self.pane(PdbConsole)

    @property
    def status(self) -> StatusBar:
        return self.pane(StatusBar)

    @property
    def transcript(self) -> Transcript:
        return self.pane(Transcript)

    @property
    def debug_panel(self) -> DebugPanel:
        return self.pane(DebugPanel)

    # -- the views of one step ----------------------------------------------------------
    def open_file(self, path: str, line: int | None) -> None:
        """Show ``path`` at ``line`` (subclasses find the text)."""
        raise NotImplementedError

    def show_text(self, path: str, line: int | None, text: str | None, why: str,
                  highlight: bool = True) -> None:
        """Show ``text`` (the file's, read from the sandbox: data) at ``line``; None shows
        ``why`` it cannot be shown instead. ``highlight=False``: without syntax colours
        until ``source_view.highlight()`` (:meth:`SourceView.load`)."""
        view = self.source_view
        if text is None:
            view.placeholder = f"({one_line(path)}: {why})"
            view.load(None, "")
            view.border_title = Text(one_line(path))  # a file name, never markup
            self._current_path = None
            return
        self._current_path = path
        view.load(path, strip_controls(text, keep_lines=True), line, highlight)
        view.border_title = Text(one_line(path))
        self.query_one(FileTree).select_path(path)
        if self._last_result is not None:
            self.refresh_marks(self._last_result, follow=False)

    def refresh_marks(self, result: StepResult, follow: bool = True) -> None:
        """Mark the shown file's breakpoints and pdb's line in the source view."""
        path = self._current_path
        frame = result.frame[1] if result.frame and result.frame[0] == path else None
        self.source_view.set_marks(breakpoint_marks(result, path), frame, follow=follow)

    def show_debug(self, inspection: Any, result: StepResult | None) -> None:
        """Hand one stop to the Debug tab's panes; the console completes its names."""
        self.debug_panel.show(inspection, result)
        if inspection is not None:
            self.pdb_console.input.complete_names([v.name for v in inspection.variables])

    def write_turn(self, turn: Turn, echo_action: bool = True) -> None:
        """Write a turn's action (when ``echo_action``), note and invalid-proposal error
        to the console."""
        if turn.action is not None and echo_action:
            self.pdb_console.write(f"› {format_action(turn.action)}  ({turn.decision})",
                                   style="bold")
        if turn.note:
            self.pdb_console.write(f"note: {turn.note}", style="italic")
        if turn.error:
            self.pdb_console.write(f"invalid proposal: {turn.error}", style="red")

    # -- what the widgets ask for --------------------------------------------------------
    @on(SourceView.SearchPrompt)
    def _search_prompt(self) -> None:
        self.action_focus_console("/")

    @on(FileTree.FileChosen)
    def _file_chosen(self, message: FileTree.FileChosen) -> None:
        self.open_file(message.path, 1)

    def navigate(self, text: str) -> bool:
        """Console lines that move the view, not pdb: ``:N`` (go to line N), ``/text``
        (search). Returns True when ``text`` was one of them."""
        view = self.source_view
        if text.startswith("/") and len(text) > 1:
            if view.search(text[1:]) is None:
                self.notify(f"not found: {text[1:]}", severity="warning")
            else:
                view.focus()
            return True
        number = text[1:].strip() if text.startswith(":") else ""
        if number.isdigit():
            view.go_to(int(number))
            view.focus()
            return True
        return False

    # -- layout keys -----------------------------------------------------------------------
    def action_zoom(self) -> None:
        """Zoom the focused pane (source, console, side column) to the screen, or back."""
        if self.maximized is not None:
            self.minimize()
            return
        focused = self.focused
        if focused is None:
            return
        pane = next((n for n in focused.ancestors_with_self
                     if getattr(n, "id", None) in ("side", "console", "source", "tree")), focused)
        self.maximize(pane, container=False)  # type: ignore[arg-type]  # a widget

    def action_toggle_pane(self, name: str) -> None:
        """Show or hide the file tree (``tree``) or the side column (``side``)."""
        shown = self.query_one(f"#{name}").display
        self.set_class(not shown, f"-show-{name}")
        self.set_class(shown, f"-hide-{name}")

    def action_focus_console(self, prefix: str = "") -> None:
        """Focus the console; ``prefix`` (``":"``) starts its line when it is empty."""
        console_input = self.pdb_console.input
        if prefix and not console_input.value:
            console_input.value = prefix
            console_input.cursor_position = len(prefix)
        console_input.focus()

    def action_focus_source(self) -> None:
        self.source_view.focus()

    def action_show_diff(self) -> None:
        """Show the diff tab (kept current by every step that changes a file) and focus it:
        up / down / pgup / pgdn scroll it, ``z`` zooms the side column to the whole screen
        (a long line is read there), ``o`` / ``esc`` go back to the source."""
        self.query_one(TabbedContent).active = "tab-diff"
        self.query_one(DiffView).focus()

    async def action_quit_app(self) -> None:
        await self.app.action_quit_app()

    # -- when keys work, help, command palette -----------------------------------------------
    def key_state(self) -> dict[str, bool]:
        """The conditions :attr:`KeySpec.when` names, as they stand now."""
        return {}

    def action_available(self, action: str) -> bool:
        """True when the action (name without arguments) makes sense in the current state."""
        spec = self.SPEC_OF.get(action)
        if spec is None or not spec.when:
            return True
        state = self.key_state()
        return all(state.get(condition, False) for condition in spec.when)

    def check_key(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enable only the keys that make sense now (the footer shows those)."""
        return self.action_available(action)

    def help_sections(self) -> list[tuple[str, list[tuple[str, str]]]]:
        """The help screen's sections after the screen's own keys."""
        return [("Source view (focused)", SOURCE_KEYS), ("Debug tab (side column)", DEBUG_KEYS),
                ("Layout", LAYOUT_KEYS)]

    def has_agent(self) -> bool:
        """Whether the agent keys are listed in the help."""
        return False

    def action_help(self) -> None:
        """Show the keys that work now, the source view's keys and the console's syntax."""
        rows: list[tuple[str, str]] = []
        seen: set[str] = set()
        for spec in self.SPECS:
            if spec.action in seen or (spec.agent and not self.has_agent()):
                continue
            seen.add(spec.action)
            keys = " / ".join(s.key_label for s in self.SPECS if s.action == spec.action)
            if spec.name == "quit_app":
                keys += f" / {format_key('ctrl+c')}"  # the app's own binding
            text = spec.help + ("" if self.action_available(spec.name) else "  (not now)")
            rows.append((keys, text))
        from dgym_tui.tui.screens.modals import HelpScreen  # not before the first frame

        self.app.push_screen(HelpScreen([("App", rows), *self.help_sections()]))

    def key_commands(self) -> Iterable[SystemCommand]:
        """The command palette's commands: one per key action available now."""
        seen: set[str] = set()
        for spec in self.SPECS:
            if spec.action in seen or not self.action_available(spec.name):
                continue
            seen.add(spec.action)
            title = f"{spec.label} [{spec.key_label.split(' / ')[0]}]"
            yield SystemCommand(title, spec.help, partial(self._palette_action, spec.action))

    async def _palette_action(self, action: str) -> None:
        """Run a key action chosen in the command palette (the palette is closing, so the
        dialog check of :meth:`check_action` does not apply)."""
        if self.action_available(action.partition("(")[0]):
            await self.action_direct(action)

