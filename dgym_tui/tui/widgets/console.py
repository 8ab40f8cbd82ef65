"""The pdb console: an input line with history and completion, and a scroll-back log."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.keys import _character_to_key
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Input

from dgym_tui.core.safetext import strip_controls

if TYPE_CHECKING:
    from dgym_tui.tui.widgets.console_log import ConsoleLog

#: What the console completes: pdb commands, then tool calls in human syntax.
COMPLETIONS = [
    "break ", "b ", "tbreak ", "clear ", "cl ", "condition ", "continue", "c", "next", "n",
    "step", "s", "return", "r", "until", "where", "w", "up", "u", "down", "d", "list", "l",
    "longlist", "ll", "args", "a", "p ", "pp ", "display ", "undisplay ", "whatis ",
    "retval", "jump ", "enable ", "disable ", "restart",
    "eval", "view path=", "listdir path=", "grep pattern=", "submit",
    "rewrite path= start= end= new_code=",
]


#: The console's empty-line hint: the two kinds of lines, most important first.
PLACEHOLDER = ('p x, n, b f.py:3 (pdb) · rewrite path=f.py start=3 end=3 new_code=".." · '
               ':41 go to line · /text search')


class ConsoleSuggester(SuggestFromList):
    """Completion from a list, also after the ``:`` that the console key puts first."""

    async def get_suggestion(self, value: str) -> str | None:
        if value.startswith(":") and len(value) > 1:
            found = await super().get_suggestion(value[1:])
            return f":{found}" if found else None
        return await super().get_suggestion(value)


class HistoryInput(Input):
    """An Input that remembers submitted lines (Up / Down) and accepts completions with Tab."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "screen.focus_source", "Back to source"),
        Binding("up", "history(-1)", "Previous", show=False),
        Binding("down", "history(1)", "Next", show=False),
        Binding("tab", "complete", "Complete", show=False),
    ]

    def __init__(self, **kwargs) -> None:
        kwargs.setdefault("select_on_focus", False)  # a ":" or "/" put there stays
        super().__init__(suggester=ConsoleSuggester(COMPLETIONS, case_sensitive=False), **kwargs)
        self.history: list[str] = []
        self._pos = 0
        self._draft = ""

    async def _on_key(self, event: events.Key) -> None:
        """Escape then a key typed quickly after it reach the app as one ``alt+KEY`` (a
        terminal sends Escape as the byte that starts such a key; tmux holds it up to
        half a second to see what follows): it typed the key into the console, and the
        console kept the focus. Here it is what was meant: Escape, then the key (both
        go back through the app, in this order, before the keys typed after them:
        :meth:`~dgym_tui.tui.key_order.OrderedKeys.type_next`). Textual reads Escape then
        a digit or a sign as another key (``:`` alone): those cannot be told apart."""
        if event.key.startswith("alt+") and event.character and len(event.character) == 1 \
                and event.character.isprintable():
            event.stop()
            event.prevent_default()
            character = event.character
            keys = (events.Key("escape", "\x1b"), events.Key(_character_to_key(character), character))
            type_next = getattr(self.app, "type_next", None)
            if type_next is not None:
                type_next(*keys)
            else:
                for key in keys:
                    self.app.post_message(key)
            return
        await super()._on_key(event)

    _names: list[str] | None = None  # the names the suggester completes

    def complete_names(self, names: list[str]) -> None:
        """Also complete ``p NAME`` / ``pp NAME`` / ``NAME`` for the current frame's names
        (the same names as the last stop's, most steps: the suggester is kept)."""
        if names == self._names:
            return
        self._names = names
        extra = [f"{verb}{name}" for name in names for verb in ("p ", "pp ", "")]
        self.suggester = ConsoleSuggester(COMPLETIONS + extra, case_sensitive=True)

    def remember(self, line: str) -> None:
        """Add ``line`` to the history (consecutive duplicates are kept once)."""
        if line and (not self.history or self.history[-1] != line):
            self.history.append(line)
        self._pos = len(self.history)
        self._draft = ""

    def action_history(self, delta: int) -> None:
        if not self.history:
            return
        if self._pos == len(self.history):
            self._draft = self.value
        self._pos = max(0, min(len(self.history), self._pos + delta))
        self.value = self.history[self._pos] if self._pos < len(self.history) else self._draft
        self.cursor_position = len(self.value)

    def action_complete(self) -> None:
        if self._suggestion and self._suggestion != self.value:
            self.value = self._suggestion
            self.cursor_position = len(self.value)
        else:
            self.screen.focus_next()


def _line(text: str | Text, style: str) -> Text:
    """A console line: plain ``text`` with ``style``, its terminal controls removed (never
    read as markup); a ``Text`` as it is."""
    return Text(strip_controls(text), style=style) if isinstance(text, str) else text


class PdbConsole(Vertical):
    """pdb console. Posts :class:`PdbConsole.Submitted` with the typed line."""

    ALLOW_MAXIMIZE = True  # the app's zoom key maximizes the whole console

    DEFAULT_CSS = """
    PdbConsole { height: 14; border-top: solid $panel-lighten-2; align-vertical: bottom; }
    PdbConsole RichLog { height: 1fr; background: $surface; scrollbar-gutter: stable; }
    PdbConsole HistoryInput { height: 3; }
    """

    _log: ConsoleLog | None = None
    #: lines kept by :meth:`write_with_next`, written before the next line
    _waiting: list[Text] | None = None

    class Submitted(Message):
        """A console line: a pdb command or a tool call in human syntax."""

        def __init__(self, text: str) -> None:
            self.text = text
            super().__init__()

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._input = HistoryInput(placeholder=PLACEHOLDER, id="console-input")

    def compose(self) -> ComposeResult:
        yield self._input

    def on_mount(self) -> None:
        # The scroll-back joins after the first frame (it is empty until the episode
        # starts): Textual's RichLog imports rich.pretty and attrs, ~25 ms of the first paint.
        self.call_after_refresh(self._ensure_log)

    def _ensure_log(self) -> ConsoleLog:
        """The scroll-back, mounted above the input on first use."""
        if self._log is None:
            from dgym_tui.tui.widgets.console_log import ConsoleLog

            # min_width: RichLog renders at least 78 cells wide by default, cutting the end
            # of wrapped lines off in a narrower console
            self._log = ConsoleLog(id="console-log", wrap=True, max_lines=5000, markup=False,
                                   min_width=20)
            self.mount(self._log, before=0)
        return self._log

    @property
    def log_widget(self) -> ConsoleLog:
        """The scroll-back (a :class:`~dgym_tui.tui.widgets.console_log.ConsoleLog`)."""
        return self._ensure_log()

    @property
    def input(self) -> HistoryInput:
        """The input line (made with the console: each step completes its names)."""
        return self._input

    def write(self, text: str | Text, style: str = "") -> None:
        """Append ``text`` to the scroll-back (plain text is never read as markup, and its
        terminal controls are removed: :mod:`dgym_tui.core.safetext`) and
        scroll to it in the same screen refresh: RichLog's own scroll waits for the next
        refresh, which drew the console (and its scroll bar) two more times per step.
        The lines kept by :meth:`write_with_next` come first."""
        self._write_all(_line(text, style))

    def write_with_next(self, text: str | Text, style: str = "") -> None:
        """Keep ``text`` (as :meth:`write` takes it) to be written just before the next
        line written, or at :meth:`flush`: one scroll of the log for both (a step's echo
        waits for its answer, which the screen shows in the same frame anyway)."""
        if self._waiting is None:
            self._waiting = []
        self._waiting.append(_line(text, style))

    def flush(self) -> None:
        """Write the lines kept by :meth:`write_with_next`, if any."""
        if self._waiting:
            self._write_all()

    def _write_all(self, last: Text | None = None) -> None:
        texts, self._waiting = self._waiting or [], None
        if last is not None:
            texts.append(last)
        log = self.log_widget
        log.add_all(texts)
        if log.auto_scroll:
            log.scroll_end(animate=False, immediate=True, x_axis=False)

    def set_notice(self, text: str | None) -> None:
        """Show ``text`` in the empty input line instead of the usual hint (None: the hint
        again): what happens while nothing can be typed yet (the first eval runs)."""
        self.input.placeholder = strip_controls(text) if text else PLACEHOLDER

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        self.input.remember(text)
        self.input.value = ""
        if text:
            self.post_message(self.Submitted(text))
