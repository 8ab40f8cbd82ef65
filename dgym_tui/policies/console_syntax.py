"""The console syntax: one typed line -> a tool call (``dgym play`` and the app's console).

Line syntax (:func:`parse_action`):

- ``TOOL key=value ...`` — a tool call. Values are decoded as JSON when they
  can be (``start=3`` is the number 3, ``'new_code="x = 1\\n"'`` a string
  with a newline), otherwise taken as text; quote with shell rules to keep
  spaces (``grep pattern="def main"``). One bare value fills the tool's first
  required parameter (``view src/app.py``). ``TOOL {json object}`` passes
  the arguments as one JSON object.
- ``$ COMMAND`` — a shell command for the ``bash`` tool (``$ ls src``).
- anything else — a pdb command, sent as it is: ``b app.py:12``, ``p x``,
  ``n``. (Use ``pdb command="..."`` for a pdb command that starts with a tool name.)
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from typing import Any

from dgym_tui.core.types import ToolCall

USAGE_HINT = "type `TOOL key=value ...` (e.g. `view path=app.py`) or a pdb command (e.g. `b app.py:3`)"


def _decode(value: str, schema: dict[str, Any] | None) -> Any:
    """Decode one typed value: JSON when possible, text otherwise (or when the
    parameter's schema says it is a string)."""
    try:
        decoded = json.loads(value)
    except json.JSONDecodeError:
        return value
    if schema and schema.get("type") == "string" and not isinstance(decoded, str):
        return value
    return decoded


def parse_action(line: str, tool_names: Iterable[str],
                 schemas: dict[str, dict[str, Any]] | None = None) -> ToolCall:
    """Turn a typed line into a tool call.

    Args:
        line: what the person typed.
        tool_names: names of the tools the environment offers.
        schemas: optional ``{tool name: JSON-schema "parameters"}``; enables
            one bare value for the first required parameter and the
            required-argument check, and keeps string parameters as text.

    Returns:
        A :class:`ToolCall`.

    Raises:
        ValueError: empty line, unbalanced quotes, a token that is not
            ``key=value``, a repeated key, too many bare values, a missing
            required argument (when ``schemas`` are given), invalid JSON
            after ``TOOL {``, or a pdb command when no pdb tool exists. The
            message says what to type instead.
    """
    names = list(tool_names)
    text = line.strip()
    if not text:
        raise ValueError(f"empty line: {USAGE_HINT}")
    if text.startswith("$") and "bash" in names:
        command = text[1:].strip()
        if not command:
            raise ValueError("type a shell command after $, e.g. `$ ls`")
        return ToolCall(name="bash", arguments={"command": command})
    first, _, rest = text.partition(" ")
    rest = rest.strip()
    if first not in names:
        if "pdb" not in names:
            raise ValueError(f"unknown tool {first!r}; tools: {', '.join(names)}")
        return ToolCall(name="pdb", arguments={"command": text})
    params = (schemas or {}).get(first) or {}
    properties = params.get("properties") or {}
    if rest.startswith("{"):
        try:
            arguments = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{first}: the arguments are not valid JSON ({exc.msg}); "
                             f"type a JSON object or key=value pairs") from None
        if not isinstance(arguments, dict):
            raise ValueError(f"{first}: the arguments must be a JSON object")
        return ToolCall(name=first, arguments=arguments)
    try:
        tokens = shlex.split(rest)
    except ValueError as exc:
        raise ValueError(f"{first}: {exc} (check your quotes)") from None
    arguments: dict[str, Any] = {}
    # one bare value may fill the first required parameter (`view app.py`)
    positional = [p for p in params.get("required", []) if p in properties][:1]
    for token in tokens:
        key, sep, value = token.partition("=")
        if sep and key.isidentifier():
            if key in arguments:
                raise ValueError(f"{first}: argument {key!r} given twice")
            arguments[key] = _decode(value, properties.get(key))
            continue
        remaining = [p for p in positional if p not in arguments]
        if not remaining:
            expected = ", ".join(properties) or "none"
            raise ValueError(f"{first}: expected key=value, got {token!r} "
                             f"(arguments: {expected})")
        arguments[remaining[0]] = _decode(token, properties.get(remaining[0]))
    missing = [p for p in params.get("required", []) if p not in arguments]
    if missing:
        raise ValueError(f"{first}: missing {', '.join(missing)} "
                         f"(e.g. `{first} {' '.join(f'{p}=...' for p in missing)}`)")
    return ToolCall(name=first, arguments=arguments)
