"""Render rows as a plain-text table that fits in a terminal.

Columns are padded to their widest cell; a line longer than the requested
``width`` is cut and ends with an ellipsis.
"""

from __future__ import annotations

ELLIPSIS = "…"


def clip(text: str, width: int) -> str:
    """Cut ``text`` to at most ``width`` characters, marking the cut."""
    if len(text) <= width:
        return text
    if width <= 0:
        return ""
    return text[: width - 1] + ELLIPSIS


def column_widths(rows: list[list[str]]) -> list[int]:
    widths: list[int] = []
    for row in rows:
        for index, cell in enumerate(row):
            if index == len(widths):
                widths.append(0)
            widths[index] = max(widths[index], len(cell))
    return widths


def render(header: list[str], rows: list[list[object]], width: int = 80,
           separator: str = " | ") -> str:
    """Return the table as text: header, a rule, then one line per row.

    Args:
        header: column titles.
        rows: cell values; converted with ``str``.
        width: maximum characters per line (longer lines are clipped).
        separator: text between columns.
    """
    cells = [list(header)] + [[str(value) for value in row] for row in rows]
    widths = column_widths(cells)
    lines = []
    for row in cells:
        padded = []
        for index, cell in enumerate(row):
            width = widths[index]
            padded.append(cell.ljust(width))
        line = separator.join(padded).rstrip()
        lines.append(clip(line, width))
        if len(lines) == 1:
            lines.append("-" * len(lines[0]))
    return "\n".join(lines)


def render_records(records: list[dict], columns: list[str], width: int = 80) -> str:
    """Render dicts, one per row; a missing key gives an empty cell."""
    rows = [[record.get(column, "") for column in columns] for record in records]
    return render(columns, rows, width)
