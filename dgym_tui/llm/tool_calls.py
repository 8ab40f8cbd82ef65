"""Find tool calls in a model's reply, in every form real models write them.

Models served locally rarely answer the way the OpenAI API does. The forms
accepted, in the order they are looked for (the first form that yields a call
wins, so a call written twice in two forms is not counted twice):

1. native ``tool_calls`` of the response message (``form="native"``);
2. Hermes / Qwen tags: ``<tool_call>{...}</tool_call>`` (the closing tag may
   be missing at the end of the reply) (``"tool_call_tag"``);
3. our text form, a block fenced with ```` ```tool_call ```` (``"tool_call_fence"``),
   or the same without its opening fence: a line ``tool_call`` then the JSON
   (``"tool_call_unfenced"``);
4. a fenced block ```` ```json ```` or a bare ```` ``` ```` fence holding a call
   object (``"fenced_json"``);
5. a bare call object anywhere in the text (``"bare_json"``).

A call object is ``{"name": str, "arguments": {...}}``; ``"parameters"`` is
accepted for ``"arguments"``, arguments may be a JSON-encoded string, and the
OpenAI shape ``{"type": "function", "function": {...}}`` and a list of call
objects are accepted too. In forms 4 and 5, where any JSON could stand, an
object counts as a call only when it has ``"arguments"`` / ``"parameters"``
or its name is one of the known tools. Only well-formed JSON counts: a tag or
``tool_call`` block whose JSON is broken is reported as an error.

This module is pure text processing: no LLM library, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

FORMS = ("native", "tool_call_tag", "tool_call_fence", "tool_call_unfenced", "fenced_json",
         "bare_json")

# openers of the blocks that must hold a call, and what closes each
_TAG = (re.compile(r"<tool_call>"), "</tool_call>")
_TOOL_FENCE = (re.compile(r"```[ \t]*tool_call[ \t]*:?"), "```")
_UNFENCED = (re.compile(r"(?:^|(?<=\n))[ \t]*tool_call[ \t]*:?(?=\s*[\[{])"), "```")
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|json5)?[ \t]*\r?\n(.*?)```", re.DOTALL)
_ARGUMENT_KEYS = ("arguments", "parameters")


@dataclass
class ParsedCall:
    """One call found in a reply.

    Attributes:
        name: the tool name as written.
        arguments: a dict, or the raw value when it is not one (a string of
            JSON, a list, ...): validation reports what is wrong with it.
        id: the provider's call id (native calls), else None.
    """

    name: str
    arguments: Any
    id: str | None = None


@dataclass
class ParsedReply:
    """What :func:`parse_reply` found.

    Attributes:
        calls: the calls, in reply order (empty when none).
        reasoning: the reply's text without the call(s), stripped.
        form: one of :data:`FORMS` for the form the calls were found in, or None.
        error: why a call-looking block could not be read (broken JSON, no
            name), else None.
        recovered: True when native tool calling was expected but the calls
            were read from the text content instead.
    """

    calls: list[ParsedCall] = field(default_factory=list)
    reasoning: str = ""
    form: str | None = None
    error: str | None = None
    recovered: bool = False


class _BadBlock(ValueError):
    """A block that must hold a call does not."""


def _call_from(data: Any, known: frozenset[str], strict: bool) -> list[ParsedCall] | None:
    """Read call object(s) from decoded JSON.

    Returns the calls, or None when ``data`` is not a call (only when not ``strict``).

    Raises:
        _BadBlock: ``strict`` and ``data`` is not a call object.
    """
    if isinstance(data, list) and data:
        calls = [_call_from(item, known, strict) for item in data]
        if all(calls):
            return [c for group in calls for c in group]
    elif isinstance(data, dict):
        if isinstance(data.get("function"), dict) and "name" not in data:
            data = data["function"]
        name = data.get("name")
        has_args = any(key in data for key in _ARGUMENT_KEYS)
        if isinstance(name, str) and name.strip() and (strict or has_args or name in known):
            args = next((data[key] for key in _ARGUMENT_KEYS if key in data), {})
            return [ParsedCall(name=name.strip(), arguments={} if args in (None, "") else args)]
    if strict:
        raise _BadBlock('it must be a JSON object with "name" and "arguments"')
    return None


def _opened_blocks(opener: re.Pattern[str], closer: str, text: str, known: frozenset[str],
                   label: str) -> tuple[list[ParsedCall], list[tuple[int, int]]]:
    """Calls in blocks that start with ``opener``: the first JSON value after it
    (a closing ``closer`` right after the value is cut with it; a missing one is
    forgiven). Returns ``(calls, spans to cut)``.

    Raises:
        _BadBlock: a block's JSON is broken or is not a call object.
    """
    decoder = json.JSONDecoder()
    calls, spans = [], []
    for match in opener.finditer(text):
        start = match.end()
        while start < len(text) and text[start].isspace():
            start += 1
        try:
            data, end = decoder.raw_decode(text, start)
            found = _call_from(data, known, strict=True)
        except json.JSONDecodeError as exc:
            line = text.count("\n", start, exc.pos) + 1
            raise _BadBlock(f"the {label} is not valid JSON "
                            f"({exc.msg} at line {line} of the block)") from None
        except _BadBlock as exc:
            raise _BadBlock(f"the {label} could not be read: {exc}") from None
        rest = text[end:]
        if rest.lstrip().startswith(closer):
            end += len(rest) - len(rest.lstrip()) + len(closer)
        calls.extend(found or [])
        spans.append((match.start(), end))
    return calls, spans


def _fenced_blocks(text: str, known: frozenset[str]) -> tuple[list[ParsedCall], list[tuple[int, int]]]:
    """Calls in ```json / bare ``` fences whose whole content is a call object."""
    calls, spans = [], []
    for match in _FENCE.finditer(text):
        try:
            found = _call_from(json.loads(match.group(1)), known, strict=False)
        except json.JSONDecodeError:
            continue
        if found:
            calls.extend(found)
            spans.append(match.span())
    return calls, spans


def _bare_objects(text: str, known: frozenset[str]) -> tuple[list[ParsedCall], list[tuple[int, int]]]:
    """Call objects written anywhere in ``text`` (outermost JSON values that parse)."""
    decoder = json.JSONDecoder()
    calls, spans, pos = [], [], 0
    while True:
        start = min((i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0),
                    default=-1)
        if start < 0:
            return calls, spans
        try:
            data, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found = _call_from(data, known, strict=False)
        if found:
            calls.extend(found)
            spans.append((start, end))
        pos = end


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    for start, end in sorted(spans, reverse=True):
        text = text[:start] + "\n" + text[end:]
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def parse_text(content: str, known_tools: Iterable[str] = ()) -> ParsedReply:
    """Find tool calls written in a reply's text (forms 2-5 of the module docstring).

    Args:
        content: the reply text (None is taken as "").
        known_tools: the tool names on offer; a bare or ```json object with a
            "name" but no "arguments" counts as a call only for these.

    Returns:
        A :class:`ParsedReply` (``recovered`` False); ``calls`` empty and
        ``error`` None when the text holds no call at all.
    """
    text = content or ""
    known = frozenset(known_tools)
    for form, (opener, closer), label in (("tool_call_tag", _TAG, "<tool_call> block"),
                                          ("tool_call_fence", _TOOL_FENCE, "tool_call block"),
                                          ("tool_call_unfenced", _UNFENCED, "tool_call block")):
        try:
            calls, spans = _opened_blocks(opener, closer, text, known, label)
        except _BadBlock as exc:
            return ParsedReply(reasoning=text.strip(), form=form, error=str(exc))
        if calls:
            return ParsedReply(calls=calls, reasoning=_cut(text, spans), form=form)
    calls, spans = _fenced_blocks(text, known)
    if calls:
        return ParsedReply(calls=calls, reasoning=_cut(text, spans), form="fenced_json")
    calls, spans = _bare_objects(text, known)
    if calls:
        return ParsedReply(calls=calls, reasoning=_cut(text, spans), form="bare_json")
    return ParsedReply(reasoning=text.strip())


def parse_reply(content: str | None, tool_calls: list[dict[str, Any]] | None = None,
                known_tools: Iterable[str] = (), native: bool = True) -> ParsedReply:
    """Find the tool calls of one assistant reply.

    Native ``tool_calls`` win; without them the text content is searched
    (:func:`parse_text`), in native and text mode alike.

    Args:
        content: the reply text.
        tool_calls: OpenAI-shaped native calls ``[{"id", "function": {"name",
            "arguments"}}]`` (arguments usually a JSON string), or None.
        known_tools: the tool names on offer (see :func:`parse_text`).
        native: True when the tools were offered as native function calling;
            then calls found in the text are marked ``recovered``.

    Returns:
        A :class:`ParsedReply`.
    """
    if tool_calls:
        calls = [ParsedCall(name=str((c.get("function") or {}).get("name") or ""),
                            arguments=(c.get("function") or {}).get("arguments"),
                            id=c.get("id"))
                 for c in tool_calls]
        return ParsedReply(calls=calls, reasoning=(content or "").strip(), form="native")
    parsed = parse_text(content or "", known_tools)
    parsed.recovered = native and bool(parsed.calls)
    return parsed


def drop_unknown_arguments(schema: dict[str, Any], arguments: dict[str, Any]
                           ) -> tuple[dict[str, Any], list[str]]:
    """Drop the argument names a tool's schema does not know, when that is all that is wrong.

    Small models copy schema keys (``"type": "string"``) into their arguments.
    Keys are dropped only when the schema forbids unknown ones
    (``additionalProperties: false``) and the remaining arguments are valid
    against it; otherwise the arguments are returned as they are, for the
    environment to refuse with its own message.

    Args:
        schema: the tool's OpenAI function schema (``{"function": {"parameters"}}``
            or the function object itself).
        arguments: the decoded arguments.

    Returns:
        ``(arguments, dropped names in the reply's order)``.
    """
    import jsonschema

    parameters = (schema.get("function", schema).get("parameters") or {})
    properties = parameters.get("properties") or {}
    dropped = [key for key in arguments if key not in properties]
    if not dropped or parameters.get("additionalProperties", True) is not False:
        return arguments, []
    kept = {k: v for k, v in arguments.items() if k in properties}
    try:
        if next(jsonschema.Draft202012Validator(parameters).iter_errors(kept), None) is not None:
            return arguments, []
    except jsonschema.SchemaError:
        return arguments, []
    return kept, dropped
