"""Error text for one-line messages (status bars, ``PROG: error: ...`` lines, status files)."""

from __future__ import annotations


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """Return the first non-blank line of an exception's message.

    Args:
        exc: any exception. A ``KeyError``'s message is its argument without
            the quotes ``str()`` adds.
        limit: cut the line to at most this many characters (None: no cut).

    Returns:
        The line, or the exception's type name when the message is empty.
    """
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[0] if lines else type(exc).__name__
    return line[:limit] if limit is not None else line
