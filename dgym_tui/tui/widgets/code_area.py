"""A TextArea that highlights code with pygments (no tree-sitter needed).

Textual's TextArea highlights through tree-sitter, an optional extra that is
not installed with dgym-tui; pygments (which the source view already uses) is
always there. The highlight map is rebuilt from pygments tokens after every
edit, which is cheap for the few lines one edits at a time.
"""

from __future__ import annotations

from pygments.lexer import Lexer
from pygments.token import Token, _TokenType
from textual import events
from textual.widgets import TextArea

from dgym_tui.tui.widgets.source_view import lex_lines, lexer_for

#: pygments token type -> TextArea theme highlight name (most specific first).
_NAMES: list[tuple[_TokenType, str]] = [
    (Token.Keyword.Constant, "boolean"),
    (Token.Keyword.Namespace, "include"),
    (Token.Keyword, "keyword"),
    (Token.Name.Builtin.Pseudo, "variable.builtin"),
    (Token.Name.Builtin, "type.builtin"),
    (Token.Name.Function, "function"),
    (Token.Name.Class, "class"),
    (Token.Name.Decorator, "function"),
    (Token.Name.Exception, "exception"),
    (Token.Literal.String.Doc, "string.documentation"),
    (Token.Literal.String, "string"),
    (Token.Literal.Number.Float, "float"),
    (Token.Literal.Number, "number"),
    (Token.Comment, "comment"),
    (Token.Operator.Word, "keyword.operator"),
    (Token.Operator, "operator"),
    (Token.Punctuation, "punctuation.bracket"),
]


def highlight_name(ttype: _TokenType) -> str | None:
    """TextArea theme name for a pygments token type, or None for plain text."""
    for parent, name in _NAMES:
        if ttype in parent:
            return name
    return None


class CodeArea(TextArea):
    """A code-editing TextArea highlighted with the pygments lexer for ``path``.

    Enter auto-indents: the new line starts with the indentation of the line
    above (one more level after a line ending in ``:``).

    Args:
        text: initial content.
        path: file name used to choose the lexer (``.py`` -> Python).
        **kwargs: passed to :class:`textual.widgets.TextArea` (e.g.
            ``line_number_start`` to number the lines as in the file).
    """

    def __init__(self, text: str = "", *, path: str = "", **kwargs: object) -> None:
        self._pyg_lexer: Lexer = lexer_for(path, len(text))
        kwargs.setdefault("show_line_numbers", True)
        kwargs.setdefault("tab_behavior", "indent")
        kwargs.setdefault("soft_wrap", False)
        super().__init__(text, **kwargs)  # type: ignore[arg-type]

    def _build_highlight_map(self) -> None:
        """Fill the highlight map (line -> [(start byte, end byte, name)]) from pygments."""
        self._line_cache.clear()
        highlights = self._highlights
        highlights.clear()
        for row, tokens in enumerate(lex_lines(self._pyg_lexer, self.text)):
            col = 0  # UTF-8 bytes, as the TextArea expects
            for ttype, piece in tokens:
                size = len(piece.encode("utf-8"))
                name = highlight_name(ttype)
                if name is not None:
                    highlights[row].append((col, col + size, name))
                col += size

    def new_line_indent(self) -> str:
        """The whitespace a new line typed at the cursor starts with: the current line's
        indentation, plus one level (``indent_width`` spaces, or a tab) when the text
        before the cursor ends with ``:``."""
        row, column = self.cursor_location
        before = self.document[row][:column]
        indent = before[:len(before) - len(before.lstrip(" \t"))]
        if before.rstrip().endswith(":"):
            indent += "\t" if self.indent_type == "tabs" else " " * self.indent_width
        return indent

    async def _on_key(self, event: events.Key) -> None:
        """Enter inserts a newline plus :meth:`new_line_indent`; other keys as TextArea."""
        if event.key == "enter" and not self.read_only:
            event.stop()
            event.prevent_default()
            self._restart_blink()
            start, end = self.selection
            self._replace_via_keyboard("\n" + self.new_line_indent(), start, end)
            return
        await super()._on_key(event)
