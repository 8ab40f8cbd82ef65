"""Turn what a person types or clicks into tool calls (UI-free).

The console accepts two kinds of lines:

- a tool call in human syntax: ``rewrite path=a.py start=3 end=3 new_code="x = 1"``,
  ``view path=a.py``, ``eval``, ``submit`` (parsed by :func:`dgym_tui.human.parse_action`
  when that module is available, else by :func:`parse_tool_line`);
- anything else is one pdb command (``p x``, ``n``, ``b a.py:12``).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence

from dgym_tui.core.types import ToolCall

#: The pdb tool's argument holding the command.
PDB_ARGUMENT = "command"


def pdb_call(command: str) -> ToolCall:
    """Return the pdb tool call for one pdb ``command`` (e.g. ``"b a.py:3"``)."""
    return ToolCall(name="pdb", arguments={PDB_ARGUMENT: command})


def _value(text: str) -> object:
    """Decode ``42`` / ``null`` / ``"quoted"`` as JSON; anything else stays a string."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return text


def parse_tool_line(line: str) -> ToolCall:
    """Parse ``name key=value key="value with spaces" ...`` into a ToolCall.

    Values are shell-quoted words; numbers, ``true``/``false``/``null`` and
    JSON strings are decoded; ``\\n`` in a value is a newline.

    Raises:
        ValueError: unbalanced quotes or a word without ``=``.
    """
    try:
        words = shlex.split(line, posix=True)
    except ValueError as exc:
        raise ValueError(f"cannot parse {line!r}: {exc}; quote values with spaces") from None
    name, args = words[0], {}
    for word in words[1:]:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise ValueError(f"{word!r} is not key=value; write e.g. {name} path=app.py")
        decoded = _value(value)
        args[key] = decoded.replace("\\n", "\n") if isinstance(decoded, str) else decoded
    return ToolCall(name=name, arguments=args)


def console_action(line: str, tools: Sequence[str]) -> ToolCall:
    """Map a console line to a tool call.

    Args:
        line: what the person typed (stripped).
        tools: names of the environment's tools.

    Returns:
        A tool call of the named tool when the first word is a tool name
        other than ``pdb`` (``pdb ...`` lines are sent to pdb as the rest),
        else a pdb call with the whole line.

    Raises:
        ValueError: a tool line that cannot be parsed (the message says how to fix it).
    """
    first = line.split(None, 1)[0] if line.split() else ""
    if first == "pdb":
        return pdb_call(line[len("pdb"):].strip())
    if first in tools:
        try:
            from dgym_tui.human import parse_action  # the human policy's parser
        except ImportError:
            return parse_tool_line(line)
        action = parse_action(line)
        if isinstance(action, ToolCall):
            return action
        return parse_tool_line(line)
    return pdb_call(line)
