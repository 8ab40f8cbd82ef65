"""A line-virtualised source view with a breakpoint / frame gutter.

Only the lines on screen are turned into segments (Textual's Line API), so a
10,000-line file scrolls as smoothly as a 10-line one. The file is lexed once
with pygments when it is loaded; segments are built lazily per line and cached.
Pygments (~20 ms to import) is imported with the first file shown, or before it by
:func:`warm_up` while the episode starts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from dgym_tui.tui.keys import BindingsWhereFocused, QuietKeys, with_quiet_twins

if TYPE_CHECKING:
    from pygments.lexer import Lexer
    from rich.syntax import PygmentsSyntaxTheme

    from dgym_tui.tui.proposal_preview import Preview, RewritePreview

#: Files larger than this (characters) are shown without highlighting.
MAX_HIGHLIGHT_CHARS = 2_000_000
#: Highlighted lines kept in the per-line segment cache.
CACHE_LINES = 2_000
#: Lines lexed together, on demand: only chunks that come on screen are lexed, so
#: opening a 10,000-line file costs one chunk. (A string or comment spanning a
#: chunk boundary may be coloured as code after the boundary: a display-only
#: trade-off.)
LEX_CHUNK = 250

#: Files whose lexed lines are kept after another file is shown (u / d between two files
#: draws the one shown before without lexing it again: ~half of its redraw).
RECENT_FILES = 4


def lexer_for(path: str, size: int = 0) -> Lexer:
    """Return the pygments lexer for ``path`` (plain text when unknown or ``size`` too big)."""
    # TextLexer from its own module: ``pygments.lexers`` finds its lexers through a module
    # it puts in its own place at the end of its first import, and a thread that imports it
    # meanwhile (warm_up's) hands another thread the first module, which has none of them
    from pygments.lexers import get_lexer_for_filename
    from pygments.lexers.special import TextLexer
    from pygments.util import ClassNotFound

    if size <= MAX_HIGHLIGHT_CHARS:
        if path.endswith((".py", ".pyi")):  # most files: no first-time scan of every
            # installed package's plugins; imported with the first file shown (~25 ms)
            from pygments.lexers.python import PythonLexer

            return PythonLexer(stripnl=False, ensurenl=False)
        try:
            return get_lexer_for_filename(path, stripnl=False, ensurenl=False)
        except ClassNotFound:
            pass
    return TextLexer(stripnl=False, ensurenl=False)


def warm_up() -> None:
    """Import pygments and rich's syntax themes and build the Python lexer's rules once, so
    that the first file shown does not wait for them (~0.1 s, more on a loaded machine).

    Safe in any thread (imports and the lexer class's rules are shared); the app runs it in
    a thread of its own while the episode starts (the initial eval runs in a subprocess)."""
    from rich.syntax import PygmentsSyntaxTheme

    lex_lines(lexer_for("warm_up.py"), "def f(x):\n    return x  # warm\n")
    for name in ("monokai", "default"):
        PygmentsSyntaxTheme(name)


def warm_up_in_background() -> threading.Thread:
    """Run :func:`warm_up` in a thread of its own (started); returns the thread."""
    thread = threading.Thread(target=warm_up, name="source-view-warm-up")
    thread.start()
    return thread


def lex_lines(lexer: Lexer, text: str) -> list[list[tuple[object, str]]]:
    """Lex ``text`` and split the tokens per line.

    Args:
        lexer: a pygments lexer (see :func:`lexer_for`).
        text: lines joined by newlines, tabs already expanded.

    Returns:
        One list of ``(pygments token type, text)`` per line, newlines removed.
    """
    lines: list[list[tuple[object, str]]] = [[]]
    for ttype, value in lexer.get_tokens(text):
        if "\n" not in value:
            if value:
                lines[-1].append((ttype, value))
            continue
        pieces = value.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                lines.append([])
            if piece:
                lines[-1].append((ttype, piece))
    return lines


def file_lines(text: str) -> list[str]:
    """The rows :class:`SourceView` shows of ``text``: tabs expanded to 4 columns, split at
    newlines, without the empty piece after a last newline."""
    lines = text.expandtabs(4).split("\n")
    if lines[-1] == "" and len(lines) > 1:
        lines.pop()
    return lines


def lex_chunk(lexer: Lexer, lines: list[str], chunk: int) -> list[list[tuple[object, str]]]:
    """Lex chunk ``chunk`` of ``lines`` (:data:`LEX_CHUNK` lines from ``chunk *
    LEX_CHUNK``); returns :func:`lex_lines`' answer for them."""
    first = chunk * LEX_CHUNK
    return lex_lines(lexer, "\n".join(lines[first:first + LEX_CHUNK]))


@dataclass
class LexedAhead:
    """A file lexed before it is shown (:func:`lex_ahead`), for :meth:`SourceView.draw_ahead`.

    Attributes:
        path: the file's path as :meth:`SourceView.load` gets it.
        text: its text as :meth:`SourceView.load` gets it.
        lines: :func:`file_lines` of ``text``.
        lexer: the lexer :meth:`SourceView.load` picks for it.
        chunks: chunk number -> :func:`lex_chunk` of it, for the chunks asked for.
    """

    path: str
    text: str
    lines: list[str]
    lexer: Lexer
    chunks: dict[int, list[list[tuple[object, str]]]]


def lex_ahead(path: str, text: str, lines: list[int]) -> LexedAhead:
    """Lex the chunks of ``text`` (the content of ``path``) that hold ``lines`` (1-based).
    Pure: safe in any thread (a worker's, while the app is idle)."""
    rows = file_lines(text)
    lexer = lexer_for(path, len(text.expandtabs(4)))
    chunks = {chunk: lex_chunk(lexer, rows, chunk)
              for chunk in sorted({(n - 1) // LEX_CHUNK for n in lines if 0 < n <= len(rows)})}
    return LexedAhead(path, text, rows, lexer, chunks)


class SourceView(BindingsWhereFocused, QuietKeys, ScrollView, can_focus=True):
    """Shows one working-copy file with line numbers, breakpoints and the frame.

    Messages:
        SourceView.PdbCommand: a pdb key (n, s, c, r, u, d) was pressed.
        SourceView.BreakpointToggle: the gutter was clicked or ``b`` pressed.
        SourceView.EditCode: ``E`` asks to edit the selected lines.

    ``V`` starts a line selection (like vim's visual-line mode): the lines
    from where ``V`` was pressed to the cursor are selected and marked in the
    gutter; ``V`` again or ``escape`` ends it. Without a selection the cursor
    line is the selection.

    While an agent drives (the screen's ``keys_quiet``), the pdb, breakpoint and
    edit keys still work but leave the footer to the decision keys.

    A proposal waiting for approval is previewed (:meth:`set_preview`): a
    ``rewrite`` as a diff in place (old lines marked ``-``, the new ones ``+``
    below them, without line numbers), a breakpoint as ``○`` in the gutter.
    Line numbers, the cursor and search keep meaning the file's own lines.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "source-view--gutter",
        "source-view--breakpoint",
        "source-view--condition",
        "source-view--frame",
        "source-view--frame-arrow",
        "source-view--cursor",
        "source-view--selection",
        "source-view--removed",
        "source-view--added",
        "source-view--proposed-breakpoint",
    }

    DEFAULT_CSS = """
    SourceView { background: $surface; }
    SourceView > .source-view--gutter { color: $text-muted; }
    SourceView > .source-view--breakpoint { color: $error; text-style: bold; }
    SourceView > .source-view--condition { color: $warning; text-style: bold; }
    SourceView > .source-view--frame { background: $warning 25%; }
    SourceView > .source-view--frame-arrow { color: $warning; text-style: bold; }
    SourceView > .source-view--cursor { background: $accent 20%; }
    SourceView > .source-view--selection { background: $accent; color: $text; }
    SourceView > .source-view--removed { background: $error 30%; }
    SourceView > .source-view--added { background: $success 30%; }
    SourceView > .source-view--proposed-breakpoint { color: $error; text-style: bold; }
    """

    QUIET: ClassVar[frozenset[str]] = frozenset({"pdb", "toggle_breakpoint", "edit_code"})

    BINDINGS: ClassVar[list[BindingType]] = with_quiet_twins([
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("left", "scroll_columns(-4)", "Scroll left", show=False),
        Binding("right", "scroll_columns(4)", "Scroll right", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "goto_top", "Top", show=False),
        Binding("end,G,shift+g", "goto_bottom", "Bottom", show=False),
        Binding("slash", "search_prompt", "Search", show=False),
        Binding("semicolon", "search(1)", "Next match", show=False),
        Binding("comma", "search(-1)", "Previous match", show=False),
        Binding("full_stop", "goto_frame", "Current frame", show=False),
        Binding("b", "toggle_breakpoint", "Breakpoint"),
        Binding("n", "pdb('n')", "next"),
        Binding("s", "pdb('s')", "step"),
        Binding("c", "pdb('c')", "continue"),
        Binding("r", "pdb('r')", "return"),
        Binding("u", "pdb('u')", "up"),
        Binding("d", "pdb('d')", "down"),
        Binding("E,shift+e", "edit_code", "Edit code"),
        Binding("V,shift+v", "select_lines", "Select lines", show=False),
        Binding("escape", "clear_selection", "End selection", show=False),
    ], QUIET)

    @dataclass
    class PdbCommand(Message):
        """A pdb command chosen with a key while the source view is focused."""

        command: str

    @dataclass
    class BreakpointToggle(Message):
        """Toggle the breakpoint at ``path:line`` (1-based)."""

        path: str
        line: int
        present: bool  # True: a breakpoint is there now (so remove it)

    class SearchPrompt(Message):
        """``/`` asks the app for a search pattern (the console opens with ``/``)."""

    class GotoFrame(Message):
        """``.`` asks for the current frame while another file is shown."""

    @dataclass
    class EditCode(Message):
        """Edit lines ``start``..``end`` (1-based, inclusive) of ``path``."""

        path: str
        start: int
        end: int

    #: False in replay: pdb keys and breakpoint clicks do nothing (the footer follows).
    interactive: reactive[bool] = reactive(True, bindings=True)

    def __init__(self, *, name: str | None = None, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.path: str | None = None
        self.cursor_line = 1  # 1-based; moved by go_to
        self._text: str | None = None
        self.lines: list[str] = []
        self._chunks: dict[int, list[list[tuple[object, str]]]] = {}
        self._lexer: Lexer | None = None  # set by load (no lines before)
        self._cache: dict[int, list[Segment]] = {}
        self._strips: dict[tuple, Strip] = {}  # drawn rows, see _line_row
        #: (path, text) -> (lexed chunks, line segments, drawn rows) of files shown before,
        #: newest last.
        self._recent: dict[tuple[str, str], tuple[dict, dict, dict]] = {}
        #: Lines of the current file with a breakpoint -> condition or None (see set_marks).
        self.breakpoints: dict[int, str | None] = {}
        #: The current frame's line in this file, or None.
        self.frame_line: int | None = None
        self._dark = True
        self._theme: PygmentsSyntaxTheme | None = None  # built with the first styled token
        self._token_styles: dict[object, Style] = {}
        self.placeholder = "(no file)"
        self._anchor: int | None = None  # line where ``V`` started a selection
        self.pattern = ""  # the last search (``/``); ``;`` / ``,`` repeat it
        #: The proposal previewed (whichever file it is for), or None (see set_preview).
        self.preview: Preview | None = None
        self._added: list[list[Segment]] = []  # highlighted new lines of a rewrite preview
        self._pass: tuple | None = None  # what every row needs, while render_lines runs

    # -- content -----------------------------------------------------------------
    def load(self, path: str | None, text: str, line: int | None = None,
             highlight: bool = True) -> None:
        """Show ``text`` as the content of ``path`` and move the cursor to ``line``.

        Args:
            path: relative path of the file (used for the lexer and messages);
                None shows the placeholder.
            text: file content.
            line: 1-based line to put the cursor on and scroll to (None keeps
                the cursor when the same file is reloaded, else line 1).
            highlight: False shows the text without syntax colours until
                :meth:`highlight` (the app's first frame: pygments and the lexer's rules
                cost ~50 ms, paid right after it).
        """
        same = path == self.path
        if same and path is not None and text == self._text:
            # Same content (e.g. replay moving between steps): keep the lexed
            # lines and caches, only move the cursor.
            if line is not None:
                self.go_to(line)
            return
        if self.path is not None and self._text is not None and self._lexer is not None:
            self._recent[(self.path, self._text)] = (self._chunks, self._cache, self._strips)
            while len(self._recent) > RECENT_FILES:
                del self._recent[next(iter(self._recent))]
        recent = self._recent.pop((path, text), None) if path is not None else None
        self._chunks, self._cache, self._strips = recent or ({}, {}, {})
        self.path = path
        self._text = text
        self._anchor = None
        self.lines = file_lines(text) if path is not None else []
        self._lexer = lexer_for(path or "", len(text.expandtabs(4))) if highlight else None
        self._added = self._lex_added()
        self._resize()
        if line is None:
            line = self.cursor_line if same else 1
        self.go_to(line)
        self.refresh()

    def highlight(self) -> None:
        """Colour the file shown without syntax colours (``load(..., highlight=False)``);
        nothing when it has them already."""
        if self._lexer is not None or self._text is None:
            return
        self._lexer = lexer_for(self.path or "", len(self._text))
        self._cache.clear()
        self._added = self._lex_added()
        self._forget_rows()
        self.refresh()

    def set_marks(self, breakpoints: dict[int, str | None], frame: int | None,
                  follow: bool = True) -> None:
        """Set the gutter marks for the current file.

        Args:
            breakpoints: line -> condition (None for a plain breakpoint).
            frame: the current frame's line in this file, or None.
            follow: scroll so the frame line is visible when it is set.
        """
        changed_frame = frame != self.frame_line
        rows = {self.frame_line, frame} | {
            n for n, _ in set(self.breakpoints.items()) ^ set(breakpoints.items())}
        self.breakpoints, self.frame_line = dict(breakpoints), frame
        if follow and frame is not None and changed_frame:
            self.go_to(frame)
        self._redraw(*rows)

    def keep_ahead(self, ahead: LexedAhead) -> None:
        """Keep ``ahead``'s lexed chunks with its file (the shown file's own, or as a file
        shown before: :data:`RECENT_FILES`), so that :meth:`load` of the same path and text
        does not lex them again."""
        self._ahead_state(ahead)

    def _ahead_state(self, ahead: LexedAhead) -> tuple[dict, dict, dict] | None:
        """The kept (chunks, segments, drawn rows) of ``ahead``'s file with its chunks in
        them; None when it is the shown file shown without colours (``highlight=False``)."""
        key = (ahead.path, ahead.text)
        if key == (self.path, self._text):
            if self._lexer is None:  # shown without colours until highlight()
                return None
            state = (self._chunks, self._cache, self._strips)
        else:
            state = self._recent.pop(key) if key in self._recent else ({}, {}, {})
            self._recent[key] = state  # the newest kept
            while len(self._recent) > RECENT_FILES:
                del self._recent[next(iter(self._recent))]
        for number, lexed in ahead.chunks.items():
            state[0].setdefault(number, lexed)
        return state

    def draw_ahead(self, ahead: LexedAhead, breakpoints: dict[int, str | None],
                   stops: list[int]) -> None:
        """Draw the rows a stop at one of ``stops`` (lines of ``ahead.path``) would show,
        before it comes (e.g. while pdb continues): ``breakpoints`` marked as by
        :meth:`set_marks`, the frame and the cursor on the stop's line, scrolled as
        :meth:`go_to` would, at this view's size, focus, theme and horizontal scroll. They
        are kept with the file (:meth:`keep_ahead`), so the stop's :meth:`load` and frame
        find them drawn. Nothing on screen changes; a row the stop shows otherwise is drawn
        then, as before. Nothing is drawn while a proposal is previewed or before the view
        has a size."""
        height = self.scrollable_content_region.height
        if self.preview is not None or not self.is_attached or height <= 0:
            return
        state = self._ahead_state(ahead)
        if state is None:
            return
        base, width, _selection, focused = self._row_context()
        bar = self.styles.scrollbar_size_vertical  # shown when the file is taller than the view
        width += (bar if self.show_vertical_scrollbar else 0) - (
            bar if len(ahead.lines) > height else 0)
        scroll_x, scroll_y = (int(n) for n in self.scroll_offset)
        shown = (self.path, self._text, self.lines, self._chunks, self._cache, self._strips,
                 self._lexer, self.breakpoints, self.frame_line, self.cursor_line, self._anchor)
        try:  # the rows drawn as the file would have them, then the shown file back
            self.path, self._text, self.lines = ahead.path, ahead.text, ahead.lines
            self._chunks, self._cache, self._strips = state
            self._lexer, self.breakpoints, self._anchor = ahead.lexer, breakpoints, None
            for stop in stops:
                self.frame_line = self.cursor_line = stop
                top = scroll_y  # _ensure_visible's scroll
                if not top <= stop - 1 < top + height:
                    top = max(0, stop - 1 - height // 2)
                for index in range(top, min(top + height, len(ahead.lines))):
                    self._file_row(index, base, width, (stop, stop), focused, scroll_x)
        finally:
            (self.path, self._text, self.lines, self._chunks, self._cache, self._strips,
             self._lexer, self.breakpoints, self.frame_line, self.cursor_line,
             self._anchor) = shown

    def set_preview(self, preview: Preview | None) -> None:
        """Preview a proposed rewrite or breakpoint (None: end the preview).

        The preview is kept when another file is loaded and shows whenever the
        loaded file is ``preview.path``; the cursor goes to its line then.
        """
        self.preview = preview
        self._added = self._lex_added()
        self._resize()
        if preview is not None and preview.path == self.path:
            self.go_to(preview.line)
            rewrite = self._rewrite()
            if rewrite is not None:  # the whole diff on screen when it fits
                self.call_after_refresh(self._show_rewrite, rewrite)
        self.refresh()

    def _show_rewrite(self, rewrite: RewritePreview) -> None:
        """Scroll so the previewed rewrite's rows are visible (with the line above when
        there is room; from its first row when it is taller than the view)."""
        if rewrite is not self.preview:
            return
        last = max(rewrite.last(len(self.lines)), rewrite.start - 1) + len(self._added)
        top, height = int(self.scroll_offset.y), self.scrollable_content_region.height
        first = max(rewrite.start - 2, 0)
        if last - first > height:  # no room for the context line
            first = rewrite.start - 1
        if height and not (top <= first and last <= top + height):
            self.scroll_to(y=first, animate=False, immediate=True)

    def _rewrite(self) -> RewritePreview | None:
        """The rewrite preview when it is for the loaded file, else None."""
        p = self.preview
        if p is None:  # proposal_preview is imported by the first proposal, not before
            return None
        from dgym_tui.tui.proposal_preview import RewritePreview

        return p if isinstance(p, RewritePreview) and p.path == self.path and self.lines \
            else None

    @staticmethod
    def _proposes_breakpoint(preview: Preview) -> bool:
        """True when ``preview`` is a proposed breakpoint (not a rewrite)."""
        from dgym_tui.tui.proposal_preview import BreakpointPreview

        return isinstance(preview, BreakpointPreview)

    def _lex_added(self) -> list[list[Segment]]:
        rewrite = self._rewrite()
        if rewrite is None:
            return []
        if self._lexer is None:  # not highlighted yet
            return [[Segment(line.expandtabs(4))] for line in rewrite.new_lines]
        lexed = lex_lines(self._lexer, "\n".join(line.expandtabs(4)
                                                 for line in rewrite.new_lines))
        return [[Segment(text, self._style_for(ttype)) for ttype, text in tokens]
                for tokens in lexed[:len(rewrite.new_lines)]]

    def _resize(self) -> None:
        rows = len(self.lines) + len(self._added)
        longest = max((len(s) for s in self.lines), default=0)
        if self._added:
            longest = max(longest, *(sum(len(seg.text) for seg in line) for line in self._added))
        self.virtual_size = Size(longest + self.gutter_width + 1, max(rows, 1))

    def _row(self, row: int) -> tuple[str, int]:
        """What screen-independent row ``row`` (0-based) shows: ``("line", n)``, a line the
        rewrite preview removes ``("removed", n)`` or its new line ``("added", i)``."""
        rewrite = self._rewrite()
        if rewrite is None:
            return "line", row + 1
        last = rewrite.last(len(self.lines))
        if row < rewrite.start - 1:
            return "line", row + 1
        if row < last:
            return "removed", row + 1
        added = len(self._added)
        if row < max(last, rewrite.start - 1) + added:
            return "added", row - max(last, rewrite.start - 1)
        return "line", row + 1 - added

    def _row_of(self, line: int) -> int:
        """The 0-based row showing file line ``line`` (lines after a previewed rewrite
        move down by its new lines)."""
        rewrite = self._rewrite()
        if rewrite is not None and line > rewrite.last(len(self.lines)):
            return line - 1 + len(self._added)
        return line - 1

    @property
    def text(self) -> str | None:
        """The loaded file's text as given to :meth:`load` (None: no file)."""
        return self._text if self.path is not None else None

    @property
    def selection(self) -> tuple[int, int]:
        """Selected lines ``(first, last)``, 1-based and inclusive (the cursor line
        when no ``V`` selection is active)."""
        anchor = self.cursor_line if self._anchor is None else self._anchor
        return min(anchor, self.cursor_line), max(anchor, self.cursor_line)

    @property
    def selecting(self) -> bool:
        """True while a ``V`` line selection is active."""
        return self._anchor is not None

    @property
    def gutter_width(self) -> int:
        """Cells used by the gutter: mark, arrow, line number, separator."""
        return len(str(max(len(self.lines), 1))) + 4

    def go_to(self, line: int) -> None:
        """Move the cursor to ``line`` (1-based, clamped) and centre it if off screen."""
        line = max(1, min(line, max(len(self.lines), 1)))
        before, top = self.cursor_line, self.scroll_offset.y
        self.cursor_line = line
        self._ensure_visible(line)
        # A new virtual size is applied at the next layout: scroll again after it.
        self.call_after_refresh(self._ensure_visible, line)
        self._redraw(before, line, whole=self._anchor is not None or self.scroll_offset.y != top)

    def _redraw(self, *lines: int | None, whole: bool = False) -> None:
        """Redraw the rows of file ``lines`` only (a step moves the frame arrow and the
        cursor: redrawing every row cost a stop ~5 ms), or every row when ``whole``."""
        if whole:
            self.refresh()
            return
        for line in {n for n in lines if n}:
            self.refresh_line(self._row_of(line))

    def _ensure_visible(self, line: int) -> None:
        if line != self.cursor_line:
            return
        height = self.scrollable_content_region.height or self.size.height or 20
        top = int(self.scroll_offset.y)
        row = self._row_of(line)
        if not (top <= row < top + height):
            self.scroll_to(y=max(0, row - height // 2), animate=False, immediate=True)

    # -- rendering ---------------------------------------------------------------
    def _style_for(self, ttype: object) -> Style:
        style = self._token_styles.get(ttype)
        if style is None:
            if self._theme is None:
                from rich.syntax import PygmentsSyntaxTheme

                self._theme = PygmentsSyntaxTheme("monokai" if self._dark else "default")
            style = self._theme.get_style_for_token(ttype)  # type: ignore[arg-type]
            style = Style(color=style.color, bold=style.bold, italic=style.italic)
            self._token_styles[ttype] = style
        return style

    def _check_theme(self) -> None:
        dark = self.app.current_theme.dark if self.is_attached else True
        if dark != self._dark:
            self._dark = dark
            self._theme = None  # rebuilt for the new theme by _style_for
            self._token_styles.clear()
            self._cache.clear()
            for _chunks, segments, _rows in self._recent.values():
                segments.clear()  # the old theme's colours (the lexed lines stay right)
            self._forget_rows()

    def notify_style_update(self) -> None:
        self._forget_rows()  # the gutter's and highlights' colours may have changed
        super().notify_style_update()

    def _forget_rows(self) -> None:
        """Drop the drawn rows of every file kept (a style or theme changed)."""
        self._strips.clear()
        for _chunks, _segments, rows in self._recent.values():
            rows.clear()

    def _code_segments(self, index: int) -> list[Segment]:
        segments = self._cache.get(index)
        if segments is None and self._lexer is None:  # not highlighted yet (load)
            return [Segment(self.lines[index])]
        if segments is None:
            chunk = index // LEX_CHUNK
            lexed = self._chunks.get(chunk)
            if lexed is None:
                lexed = lex_chunk(self._lexer, self.lines, chunk)
                self._chunks[chunk] = lexed
            offset = index % LEX_CHUNK
            tokens = lexed[offset] if offset < len(lexed) else [(None, self.lines[index])]
            segments = [Segment(text, self._style_for(ttype) if ttype else Style())
                        for ttype, text in tokens]
            if len(self._cache) >= CACHE_LINES:  # keep memory flat while scrolling far
                self._cache.clear()
            self._cache[index] = segments
        return segments

    def render_lines(self, crop: Region) -> list[Strip]:
        """Render the rows in ``crop``, with what every row needs (the theme check, the
        view's style: a walk up every ancestor's styles, its width, the rewrite preview)
        read once for all of them: most rows then come from the drawn-row cache."""
        self._pass = self._row_context()
        try:
            return super().render_lines(crop)
        finally:
            self._pass = None

    def _row_context(self) -> tuple[Style, int, tuple[int, int], bool]:
        """Check the theme; return the view's style, width, selection and focus."""
        self._check_theme()
        return (self.rich_style, self.scrollable_content_region.width, self.selection,
                self.has_focus)

    def render_line(self, y: int) -> Strip:
        """Render screen row ``y`` (Line API)."""
        # called on its own (not from render_lines), it reads what every row needs itself
        base, width, selection, focused = self._pass or self._row_context()
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        if not self.lines:
            if y == 0:
                return Strip([Segment(self.placeholder, base)]).adjust_cell_length(width, base)
            return Strip.blank(width, base)
        if index >= len(self.lines) + len(self._added):
            return Strip.blank(width, base)
        return self._file_row(index, base, width, selection, focused, scroll_x)

    def _file_row(self, index: int, base: Style, width: int, selection: tuple[int, int],
                  focused: bool, scroll_x: int) -> Strip:
        """Row ``index`` (0-based, below the file's top) of the loaded file, drawn or from
        the drawn-row cache."""
        kind, lineno = self._row(index)
        if kind == "added":  # a new line of the previewed rewrite: ``+``, no number
            strip = self._code_row([Segment("+", self._style("added")),
                                    Segment(" " * (self.gutter_width - 3) + " │",
                                            self._style("gutter"))],
                                   self._added[lineno], scroll_x, width)
            return strip.apply_style(self._style("added")).apply_style(base)
        proposed = self.preview
        if kind == "removed":
            mark = "-"
        elif lineno in self.breakpoints:
            mark = "◆" if self.breakpoints[lineno] else "●"
        elif (proposed is not None and proposed.line == lineno and proposed.path == self.path
              and self._proposes_breakpoint(proposed)):
            mark = "○"
        else:
            mark = " "
        first, last = selection
        key = (kind, lineno, mark, self.frame_line == lineno,
               self._anchor is not None and first <= lineno <= last,
               lineno == self.cursor_line and focused, scroll_x, width, base)
        cached = self._strips.get(key)
        if cached is None:
            cached = self._line_row(*key)
            if len(self._strips) >= CACHE_LINES:
                self._strips.clear()
            self._strips[key] = cached
        return cached

    def _line_row(self, kind: str, lineno: int, mark: str, frame: bool, selected: bool,
                  cursor: bool, scroll_x: int, width: int, base: Style) -> Strip:
        """Draw file line ``lineno``: ``mark`` in the gutter ("●" breakpoint, "◆" with a
        condition, "○" proposed, "-" removed by the previewed rewrite, " " none), the
        frame arrow, the number (marked when ``selected``), the code scrolled ``scroll_x``
        cells; the row highlighted for the frame or the ``cursor``. ``render_line`` keeps
        what this returns, keyed by all these arguments: a row is drawn again only when
        one changes (u / d back to a file shown before redraws two rows, not 32)."""
        gutter = self._style("gutter")
        style = {"-": "removed", "●": "breakpoint", "◆": "condition",
                 "○": "proposed-breakpoint"}.get(mark)
        marks = [Segment(mark, self._style(style) if style else gutter),
                 Segment("▶", self._style("frame-arrow")) if frame else Segment(" ", gutter)]
        digits = self.gutter_width - 4
        number = [Segment(f"{lineno:>{digits}} │", gutter)]
        if selected:  # the selection is marked on the line numbers
            number = [Segment(f"{lineno:>{digits}}", self._style("selection")),
                      Segment(" │", gutter)]
        strip = self._code_row([*marks, *number], self._code_segments(lineno - 1),
                               scroll_x, width)
        if kind == "removed":
            strip = strip.apply_style(self._style("removed"))
        elif frame:
            strip = strip.apply_style(self._style("frame"))
        elif cursor:
            strip = strip.apply_style(self._style("cursor"))
        return strip.apply_style(base)

    def _style(self, name: str) -> Style:
        """The Rich style of the component class ``source-view--{name}``."""
        return self.get_component_rich_style(f"source-view--{name}")

    @staticmethod
    def _code_row(gutter: list[Segment], code: list[Segment], scroll_x: int,
                  width: int) -> Strip:
        """``gutter``, then ``code`` scrolled ``scroll_x`` cells: ``width`` cells in all."""
        left = Strip(gutter)
        return Strip.join([left, Strip(code).crop_extend(
            scroll_x, scroll_x + max(width - left.cell_length, 0), None)])

    # -- input -------------------------------------------------------------------
    @property
    def keys_quiet(self) -> bool:
        """The screen's ``keys_quiet`` (True while an agent drives), else False."""
        return bool(getattr(self.screen, "keys_quiet", False) if self.is_attached else False)

    def check_key(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """pdb keys, breakpoint toggles and editing only when ``interactive`` (not in
        replay); ``escape`` is the source view's only while a selection is active."""
        if action == "clear_selection":
            return self._anchor is not None
        return self.interactive or action not in ("pdb", "toggle_breakpoint", "edit_code",
                                                  "select_lines")

    def on_resize(self, event: events.Resize) -> None:
        """Keep the cursor line in view when the view's size changes (a terminal resize, a
        proposal panel shown under it): at 80x24 the view is a few rows high."""
        self.call_after_refresh(self._ensure_visible, self.cursor_line)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or not self.lines:
            return
        row = int(self.scroll_offset.y) + offset.y
        if row >= len(self.lines) + len(self._added):
            return
        kind, line = self._row(row)
        if kind == "added":
            return  # a proposed line: not in the file yet
        self.go_to(line)
        if offset.x < self.gutter_width - 1 and self.interactive:
            self._toggle(line)

    def _toggle(self, line: int) -> None:
        if self.path is None:  # nothing shown, or a file that cannot be (binary): say so
            self.notify(f"no breakpoint: {self.placeholder or 'no file shown'}",
                        severity="warning")
            return
        self.post_message(self.BreakpointToggle(self.path, line, line in self.breakpoints))

    def action_cursor(self, delta: int) -> None:
        self.go_to(self.cursor_line + delta)

    def action_page(self, direction: int) -> None:
        height = max(self.scrollable_content_region.height - 1, 1)
        self.scroll_to(y=self.scroll_offset.y + direction * height, animate=False, immediate=True)
        self.go_to(self.cursor_line + direction * height)

    def action_scroll_columns(self, delta: int) -> None:
        self.scroll_to(x=max(0, self.scroll_offset.x + delta), animate=False, immediate=True)

    def action_goto_top(self) -> None:
        self.go_to(1)

    def action_goto_bottom(self) -> None:
        self.go_to(len(self.lines))

    def search(self, pattern: str, direction: int = 1) -> int | None:
        """Move the cursor to the next (``direction`` 1) or previous (-1) line containing
        ``pattern`` (case-insensitive when it is all lower case), wrapping around.

        Returns:
            The 1-based line found, or None (the cursor stays).
        """
        self.pattern = pattern
        if not pattern or not self.lines:
            return None
        fold = pattern == pattern.lower()
        needle = pattern.lower() if fold else pattern
        count = len(self.lines)
        for step in range(1, count + 1):
            index = (self.cursor_line - 1 + direction * step) % count
            line = self.lines[index].lower() if fold else self.lines[index]
            if needle in line:
                self.go_to(index + 1)
                return index + 1
        return None

    def action_search(self, direction: int) -> None:
        if not self.pattern:
            self.post_message(self.SearchPrompt())
        elif self.search(self.pattern, direction) is None:
            self.notify(f"not found: {self.pattern}", severity="warning")

    def action_search_prompt(self) -> None:
        self.post_message(self.SearchPrompt())

    def action_goto_frame(self) -> None:
        """Put the cursor on the current frame's line (when it is in this file)."""
        if self.frame_line is not None:
            self.go_to(self.frame_line)
        else:
            self.post_message(self.GotoFrame())  # the app opens the frame's file

    def action_toggle_breakpoint(self) -> None:
        self._toggle(self.cursor_line)

    def action_pdb(self, command: str) -> None:
        # Posted to the screen, which acts on it: bubbled up through the two containers
        # in between (neither handles it), it took one turn of the event loop each between
        # the key and the step (docs/performance.md).
        self.screen.post_message(self.PdbCommand(command))

    def action_select_lines(self) -> None:
        """Start a line selection at the cursor, or end the one in progress."""
        self._anchor = self.cursor_line if self._anchor is None and self.lines else None
        self.refresh()

    def action_clear_selection(self) -> None:
        """End the ``V`` selection (if any)."""
        if self._anchor is not None:
            self._anchor = None
            self.refresh()

    def action_edit_code(self) -> None:
        """Ask the app to edit the selected lines (``EditCode``)."""
        if self.path is None:  # nothing shown, or a file that cannot be (binary): say so
            self.notify(f"nothing to edit: {self.placeholder}", severity="warning")
            return
        if not self.lines:
            return
        first, last = self.selection
        self.post_message(self.EditCode(self.path, first, last))
