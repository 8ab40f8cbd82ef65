"""Real names of the task an agent is told about, for the examples in its prompts.

Small models copy the examples they are shown: an example naming a file that
does not exist (``src/app.py``) becomes an action that fails. The examples
an agent sees are therefore built from the episode's own files:
:func:`task_examples` picks the first source file, a line of it that holds
code (where a failing test enters the code under test when the eval says so,
else the first statement of its first function), and the first failing test.
"""

from __future__ import annotations

import ast
import logging
import posixpath
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dgym_tui.core.fs.workspace import Workspace
    from dgym_tui.core.types import EvalSummary

log = logging.getLogger(__name__)

MAX_SOURCE_BYTES = 200_000  # larger files are not parsed for a line (the line is then 1)
MAX_CANDIDATES = 20  # source files read to find one with a function


@dataclass
class TaskExamples:
    """File, line and test of one task, all real.

    Attributes:
        file: a source file relative to the repository root ("" when the task has none).
        line: a 1-based line of ``file`` that holds code.
        code: that line's text with its indentation ("" when unknown).
        folder: the folder of ``file`` (``"."`` at the root).
        function: the function around ``line`` ("" when none).
        test: a test's node id, e.g. ``"test_cart.py::test_total"`` ("" when none).
    """

    file: str = ""
    line: int = 1
    code: str = ""
    folder: str = "."
    function: str = ""
    test: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> TaskExamples:
        """Build from :meth:`to_dict` output; unknown keys are ignored, None gives defaults."""
        data = data or {}
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def is_test_file(rel: str) -> bool:
    """True for pytest's test files and conftest: ``test_*.py``, ``*_test.py``, ``tests/...``."""
    name = posixpath.basename(rel)
    parts = rel.split("/")[:-1]
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(p in ("tests", "test", "testing") for p in parts))


def _first_body_line(text: str) -> tuple[int, str]:
    """``(line, function name)`` of the first statement in the first function of ``text``
    (a docstring skipped); ``(1, "")`` when the text has no function or does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return 1, ""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (len(body) > 1 and isinstance(body[0], ast.Expr)
                    and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                body = body[1:]
            return body[0].lineno, node.name
    return 1, ""


def _enclosing_function(text: str, line: int) -> str:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ""
    best = ""
    for node in ast.walk(tree):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.lineno <= line <= (node.end_lineno or node.lineno)):
            best = node.name  # walk is breadth first: the innermost comes last
    return best


def task_examples(workspace: Workspace, summary: EvalSummary | None = None) -> TaskExamples:
    """Pick the examples of one episode from its working copy and first eval.

    Args:
        workspace: the episode's working copy (its visible files at the start).
        summary: the initial eval's summary (its failures name the test and,
            when the traceback enters the code under test, a file and line), or None.

    Returns:
        A :class:`TaskExamples`: the file the failing test enters, else the first
        source file with a function (modules before ``__init__.py``), else the
        first Python file; empty fields when the repository has no Python file.
        Never raises: files that cannot be read are skipped.
    """
    files = sorted(workspace.start_ids())
    sources = [f for f in files if f.endswith(".py") and not is_test_file(f)]
    tests = [f for f in files if f.endswith(".py") and is_test_file(f)
             and posixpath.basename(f) != "conftest.py"]
    failures = list(summary.failures) if summary is not None else []
    examples = TaskExamples(test=failures[0].test_id if failures else (tests[0] if tests else ""))
    entered = next(((f.path, f.line) for f in failures if f.path in sources and f.line), None)
    if entered:
        candidates = [entered[0]]
    else:  # modules before packages' __init__.py, which are often empty
        candidates = sorted(sources or tests,
                            key=lambda f: posixpath.basename(f) == "__init__.py")
    for rel in candidates[:MAX_CANDIDATES]:
        text = _read(workspace, rel)
        if text is None:
            continue
        if entered:
            line, function = entered[1], _enclosing_function(text, entered[1])
        else:
            line, function = _first_body_line(text)
        if function or not examples.file:
            lines = text.splitlines()
            examples.file, examples.folder = rel, posixpath.dirname(rel) or "."
            examples.line, examples.function = (line, function) if line <= len(lines) else (1, "")
            examples.code = lines[examples.line - 1].rstrip()[:200] if lines else ""
        if function:
            break
    return examples


def _read(workspace: Workspace, rel: str) -> str | None:
    try:
        return workspace.read_bytes(rel, limit=MAX_SOURCE_BYTES).decode("utf-8", "replace")
    except Exception as exc:  # noqa: BLE001  refused or gone: the next candidate
        log.debug("cannot read %s for examples: %s", rel, exc)
        return None
