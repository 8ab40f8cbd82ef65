"""``dgym llm-check ENTRY``: does an llm.yaml entry answer, and which tool_calling suits it?

Two calls: one without tools, whose prompt documents the text format (a
fenced ``tool_call`` block), and one with a tool schema (native function
calling). Each reports its latency and whether a tool call came back (natively,
or written in the reply's text); from that follows the ``tool_calling`` mode
to put in llm.yaml: ``native`` when the server returns real ``tool_calls`` to
the call with tools (even when the model's call was not exactly the one asked
for: that is the model, not the server), else ``text``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dgym_tui.llm.tool_calls import parse_reply

if TYPE_CHECKING:
    from dgym_tui.llm.client import LLM

VIEW_SCHEMA = {"type": "function", "function": {
    "name": "view", "description": "Show a file of the repository with line numbers.",
    "parameters": {"type": "object", "properties": {
        "path": {"type": "string", "description": "file path relative to the repository root"}},
        "required": ["path"]}}}
_TASK = "Read the file cart.py: call the view tool once with its path."
_TEXT_SYSTEM = ("You are a debugging agent. You act through tools, one tool call per reply.\n"
                "Tool `view`: show a file. Arguments (JSON schema): "
                '{"type": "object", "properties": {"path": {"type": "string"}}, '
                '"required": ["path"]}\n'
                "End your reply with exactly one fenced block tagged tool_call that holds a JSON "
                'object with the tool\'s "name" and "arguments", for example:\n'
                '```tool_call\n{"name": "view", "arguments": {"path": "src/main.py"}}\n```')
_NATIVE_SYSTEM = "You are a debugging agent. You act through tools, one tool call per reply."


@dataclass
class CallCheck:
    """The outcome of one check call.

    Attributes:
        latency: seconds the call took (retries included).
        error: the one-line error when the call failed, else None.
        native: True when the reply held native ``tool_calls``.
        form: how the view call was written (a :data:`~dgym_tui.llm.tool_calls.FORMS`
            value), or None when no call came back.
        call_ok: True when exactly one call of ``view`` with a ``path`` came back.
        reply: the start of the reply text (for the report).
        prompt_tokens / completion_tokens: the server's usage figures.
    """

    latency: float = 0.0
    error: str | None = None
    native: bool = False
    form: str | None = None
    call_ok: bool = False
    reply: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class LLMCheck:
    """Both calls and the advice. ``mode``: the tool_calling to use (``"native"`` /
    ``"text"``), or None when the endpoint did not answer at all."""

    text: CallCheck = field(default_factory=CallCheck)
    tools: CallCheck = field(default_factory=CallCheck)
    mode: str | None = None
    advice: str = ""


def _one_call(llm: LLM, messages: list[dict[str, Any]],
              tools: list[dict[str, Any]] | None) -> CallCheck:
    from dgym_tui.llm.client import LLMError

    result = CallCheck()
    t0 = time.monotonic()
    try:
        response = llm.complete(messages, tools=tools)
    except LLMError as exc:
        result.latency, result.error = time.monotonic() - t0, str(exc)
        return result
    result.latency = time.monotonic() - t0
    result.prompt_tokens = response.usage.prompt_tokens
    result.completion_tokens = response.usage.completion_tokens
    parsed = parse_reply(response.content, response.tool_calls, known_tools=["view"],
                         native=tools is not None)
    result.native = bool(response.tool_calls)
    result.form = parsed.form if parsed.calls else None
    arguments = parsed.calls[0].arguments if len(parsed.calls) == 1 else None
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = None
    result.call_ok = (len(parsed.calls) == 1 and parsed.calls[0].name == "view"
                      and isinstance(arguments, dict) and isinstance(arguments.get("path"), str))
    result.reply = " ".join((response.content or "").split())[:120]
    return result


def check_llm(llm: LLM) -> LLMCheck:
    """Run the two check calls against ``llm`` and advise a tool_calling mode.

    Retries are limited to one per call so that a dead endpoint is reported fast.

    Args:
        llm: the model to check (its llm.yaml entry is used as is, except retries).

    Returns:
        An :class:`LLMCheck`.

    Raises:
        LLMConfigError: the API key was rejected.
    """
    from dgym_tui.llm.client import LLM

    quick = LLM(dataclasses.replace(llm.config, retries=min(llm.config.retries, 1)),
                sleep=llm._sleep)
    check = LLMCheck()
    check.text = _one_call(quick, [{"role": "system", "content": _TEXT_SYSTEM},
                                   {"role": "user", "content": _TASK}], None)
    check.tools = _one_call(quick, [{"role": "system", "content": _NATIVE_SYSTEM},
                                    {"role": "user", "content": _TASK}], [VIEW_SCHEMA])
    if check.text.error and check.tools.error:
        check.advice = "the endpoint did not answer; check model, api_base and the server"
    elif check.tools.native:
        check.mode = "native"
        check.advice = "the server returns native tool calls: use tool_calling: native"
        if not check.tools.call_ok:
            check.advice += (" (the model's call was not one view call with a path: "
                             "agent spec keys like several_calls help a small model)")
    elif check.text.call_ok or check.tools.call_ok:
        check.mode = "text"
        check.advice = ("no native tool calls, but the model writes calls in its text: "
                        "use tool_calling: text")
    else:
        check.mode = "text"
        check.advice = ("no valid tool call came back in either form; text mode is the better "
                        "bet, but this model may be too small to follow a tool format")
    return check


def _line(label: str, call: CallCheck, native_question: bool) -> str:
    if call.error:
        return f"{label}: failed after {call.latency:.2f} s: {call.error}"
    if native_question:
        found = ("native tool_calls: yes" if call.native else
                 f"native tool_calls: no; call in the text: {call.form or 'none'}")
    else:
        found = f"tool call in the text: {call.form or 'none'}"
    valid = "valid" if call.call_ok else "not a valid view call"
    return (f"{label}: {call.latency:.2f} s, {call.prompt_tokens} prompt + "
            f"{call.completion_tokens} completion tokens, {found} ({valid})")


def format_check(llm: LLM, check: LLMCheck) -> str:
    """The report ``dgym llm-check`` prints (several lines, no trailing newline)."""
    where = f" at {llm.config.api_base}" if llm.config.api_base else ""
    lines = [f"LLM {llm.config.name!r}: {llm.config.model}{where}",
             _line("without tools (text format)", check.text, native_question=False),
             _line("with tools (native)", check.tools, native_question=True)]
    for call in (check.text, check.tools):
        if call.reply and not call.call_ok:
            lines.append(f"  reply was: {call.reply}")
    lines.append(f"tool_calling to use: {check.mode or '-'} ({check.advice})")
    return "\n".join(lines)
