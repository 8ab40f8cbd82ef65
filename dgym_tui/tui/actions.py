"""Turn what a person types or clicks into tool calls (UI-free).

The console accepts two kinds of lines:

- a tool call in human syntax: ``rewrite path=a.py start=3 end=3 new_code="x = 1"``,
  ``view path=a.py``, ``eval``, ``submit`` (parsed by :func:`dgym_tui.policies.console_syntax.parse_action`
  with the tools' JSON schemas);
- anything else is one pdb command (``p x``, ``n``, ``b a.py:12``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dgym_tui.core.types import ToolCall


def pdb_call(command: str) -> ToolCall:
    """Return the pdb tool call for one pdb ``command`` (e.g. ``"b a.py:3"``)."""
    return ToolCall(name="pdb", arguments={"command": command})


def console_action(line: str, tools: Sequence[str],
                   schemas: Mapping[str, dict[str, Any]] | None = None) -> ToolCall:
    """Map a console line to a tool call.

    Args:
        line: what the person typed (stripped).
        tools: names of the environment's tools.
        schemas: ``{tool name: JSON-schema parameters}`` (lets values be typed
            without quotes and bare values fill required arguments).

    Returns:
        A tool call of the named tool when the first word is a tool name
        (``pdb ...`` sends the rest to pdb), else a pdb call with the whole line.

    Raises:
        ValueError: a tool line that cannot be parsed (the message says how to fix it).
    """
    from dgym_tui.policies.console_syntax import parse_action

    words = line.split(None, 1)
    if words and words[0] == "pdb":
        return pdb_call(words[1].strip() if len(words) > 1 else "")
    return parse_action(line, list(tools), dict(schemas or {}))
