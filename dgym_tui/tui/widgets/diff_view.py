"""The working copy's diff against the original repository (``env.patch()``)."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Static

from dgym_tui.core.safetext import strip_controls


class DiffView(VerticalScroll):
    """Shows a unified diff with diff syntax highlighting."""

    DEFAULT_CSS = """
    DiffView { padding: 0 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.patch = ""

    def compose(self):
        yield Static("(no changes)", id="diff-body")

    def set_patch(self, patch: str) -> None:
        """Show ``patch`` (unified diff text; empty means no changes)."""
        self.patch = patch
        body = self.query_one("#diff-body", Static)
        if not patch.strip():
            body.update("(no changes)")
        else:
            from rich.syntax import Syntax  # pygments: not needed before the first change

            dark = self.app.current_theme.dark
            body.update(Syntax(strip_controls(patch, keep_lines=True), "diff",  # files: data
                               theme="monokai" if dark else "default",
                               background_color="default", word_wrap=False))
