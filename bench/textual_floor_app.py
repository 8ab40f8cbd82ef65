"""The least a Textual debugger screen can do: bench_pudb.py's floor for the app rows.

Run: ``python bench/textual_floor_app.py FILE LINE`` (in a terminal). One ``Static``
widget shows FILE with line numbers in dgym-tui's source format (``│▶  7 │code``), the
marker at LINE; ``n`` moves the marker one line down, ``q`` quits. No debugger, no
process, no sandbox, no syntax colours: what is left of dgym-tui's first screen and of
its ``n`` when everything but Textual itself is taken away (Python's start, Textual's
import, one App, one frame per key). bench_pudb.py times it in the same tmux harness as
dgym-tui and pudb, so the rows say how far a Textual app can go at best on this machine.
"""

from __future__ import annotations

import sys

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import Static


class FloorApp(App[None]):
    """One Static showing a file with a current-line marker that ``n`` moves."""

    BINDINGS = [("n", "next_line", "next"), ("q", "quit", "quit")]

    def __init__(self, lines: list[str], line: int) -> None:
        super().__init__()
        self.lines = lines
        self.line = line

    def compose(self) -> ComposeResult:
        yield Static(self._render(), id="source")

    def _render(self) -> Text:
        text = Text()
        for number, code in enumerate(self.lines, start=1):
            marker = "▶" if number == self.line else " "
            text.append(f"│{marker}{number:3} │{code}\n")
        return text

    def action_next_line(self) -> None:
        self.line = min(self.line + 1, len(self.lines))
        self.query_one("#source", Static).update(self._render())


def main() -> int:
    path, line = sys.argv[1], int(sys.argv[2])
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    FloorApp(lines, line).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
