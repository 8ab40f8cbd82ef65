"""Examples an LLM agent shows, built from the task's real file, line and test.

The tools' descriptions name a placeholder file (``EXAMPLE_FILE`` of
:mod:`dgym_tui.core.tools.base`); :func:`localise` puts the task's own file,
line and folder in its place, and :func:`example_calls` builds one call per
tool that would run on this repository (the file exists, the line holds code,
a rewrite example rewrites that line as it is).
"""

from __future__ import annotations

import copy
from typing import Any

from dgym_tui.core.tools.base import EXAMPLE_FILE, EXAMPLE_FOLDER, EXAMPLE_LINE
from dgym_tui.core.types import ToolCall
from dgym_tui.core.types import example_arguments as placeholder_arguments
from dgym_tui.episode.examples import TaskExamples


def localise(text: str, examples: TaskExamples) -> str:
    """Replace the placeholder file, ``file:line`` and quoted folder in ``text``.

    Args:
        text: a description or instructions text.
        examples: the task's real names; an empty ``file`` leaves ``text`` as is.

    Returns:
        The text naming the task's file, line and folder.
    """
    if not examples.file:
        return text
    text = text.replace(f"{EXAMPLE_FILE}:{EXAMPLE_LINE}", f"{examples.file}:{examples.line}")
    text = text.replace(EXAMPLE_FILE, examples.file)
    return text.replace(f"'{EXAMPLE_FOLDER}'", f"'{examples.folder}'")


def localise_schema(schema: dict[str, Any], examples: TaskExamples) -> dict[str, Any]:
    """A copy of an OpenAI function schema with :func:`localise` applied to its
    description and to its parameters' descriptions."""
    schema = copy.deepcopy(schema)
    function = schema.get("function", schema)
    if isinstance(function.get("description"), str):
        function["description"] = localise(function["description"], examples)
    for prop in ((function.get("parameters") or {}).get("properties") or {}).values():
        if isinstance(prop, dict) and isinstance(prop.get("description"), str):
            prop["description"] = localise(prop["description"], examples)
    return schema


def example_arguments(name: str, function: dict[str, Any],
                      examples: TaskExamples) -> dict[str, Any]:
    """Arguments of one example call of tool ``name`` on this task.

    Args:
        name: the tool name.
        function: its OpenAI function schema (``{"name", "parameters", ...}``).
        examples: the task's real names.

    Returns:
        Real arguments for the built-in tools when the task has a file;
        otherwise the required arguments filled with
        :func:`~dgym_tui.core.types.example_arguments` placeholders.
    """
    ex = examples
    if ex.file:
        real = {
            "listdir": {"path": ex.folder},
            "view": {"path": ex.file},
            "grep": {"pattern": f"def {ex.function}" if ex.function else "def ", "path": ex.file},
            "pdb": {"command": f"b {ex.file}:{ex.line}"},
            "bash": {"command": f"sed -n {max(1, ex.line - 5)},{ex.line + 5}p {ex.file}"},
            "rewrite": {"path": ex.file, "start": ex.line, "end": ex.line,
                        "new_code": ex.code},
        }.get(name)
        if real is not None:
            properties = (function.get("parameters") or {}).get("properties") or {}
            return {k: v for k, v in real.items() if k in properties}
    return placeholder_arguments(function.get("parameters") or {})


def example_calls(schemas: list[dict[str, Any]], examples: TaskExamples) -> dict[str, ToolCall]:
    """One example call per tool on offer.

    Args:
        schemas: OpenAI function schemas, in prompt order.
        examples: the task's real names.

    Returns:
        ``{tool name: ToolCall}`` in the order of ``schemas``.
    """
    calls = {}
    for schema in schemas:
        function = schema.get("function", schema)
        calls[function["name"]] = ToolCall(name=function["name"],
                                           arguments=example_arguments(function["name"],
                                                                       function, examples))
    return calls


def main_example(schemas: list[dict[str, Any]], examples: TaskExamples) -> ToolCall | None:
    """The one example of the prompt and of the format correction: the first tool that
    takes a required argument (else the first tool); None without tools."""
    calls = example_calls(schemas, examples)
    if not calls:
        return None
    functions = [s.get("function", s) for s in schemas]
    chosen = next((f["name"] for f in functions
                   if (f.get("parameters") or {}).get("required")), functions[0]["name"])
    return calls[chosen]
