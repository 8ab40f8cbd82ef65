"""Find where a failing test's traceback enters the repository's own code.

UI-free helper used by the app to decide which file and line the source view
shows on start. The eval result's ``failures`` (pytest's structured report,
``EvalSummary.failures``) answer it; for results without them (a non-pytest
entrypoint, trajectories recorded before the report) the eval output is read
(pytest or a plain Python traceback) and the paths it names matched against
the working copy's files.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from itertools import groupby

from dgym_tui.core.evaluation.summary import is_test_file, pick_location
from dgym_tui.core.types import EvalSummary

#: pytest's failure section header: ``____ test_name ____``.
_SECTION = re.compile(r"^_{3,} (.+?) _{3,}\s*$", re.MULTILINE)
#: pytest's location lines: ``pkg/mod.py:12: in func`` / ``pkg/mod.py:12: ValueError``.
_PYTEST_LOC = re.compile(r"^(?P<path>[^\s:][^:\n]*?\.py):(?P<line>\d+):", re.MULTILINE)
#: CPython traceback lines: ``File "/abs/pkg/mod.py", line 12, in func``.
_PY_LOC = re.compile(r'^\s*File "(?P<path>[^"]+)", line (?P<line>\d+)', re.MULTILINE)


def match_file(path: str, files: Iterable[str] | set[str]) -> str | None:
    """Map a path printed in a traceback to a working-copy file.

    Args:
        path: the path as printed (relative, absolute on the host, or absolute
            inside a container such as ``/workspace/pkg/mod.py``).
        files: the working copy's visible files, relative POSIX paths.

    Returns:
        The longest trailing part of ``path`` that is one of ``files``, or None.
    """
    fileset = files if isinstance(files, set) else set(files)
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    return next((rel for rel in ("/".join(parts[i:]) for i in range(len(parts)))
                 if rel in fileset), None)


def first_failure_block(eval_output: str) -> str:
    """Return the text of the first failure section of a pytest report.

    Without section headers (a plain traceback) the whole text is returned.
    """
    heads = list(_SECTION.finditer(eval_output))
    # Skip pytest's "FAILURES"/"ERRORS" banners (those use '=' not '_', so any hit is a test).
    if not heads:
        return eval_output
    end = heads[1].start() if len(heads) > 1 else len(eval_output)
    return eval_output[heads[0].end():end]


def traceback_frames(text: str, files: Iterable[str]) -> list[tuple[str, int]]:
    """Return the ``(relative path, line)`` frames of ``text`` that are working-copy files.

    Frames come in the order the text names them (outermost first for both
    pytest and CPython tracebacks); paths outside the working copy are dropped.
    """
    fileset = set(files)
    found: list[tuple[int, str, int]] = []
    for regex in (_PYTEST_LOC, _PY_LOC):
        for m in regex.finditer(text):
            rel = match_file(m.group("path").strip(), fileset)
            if rel is not None:
                found.append((m.start(), rel, int(m.group("line"))))
    return [frame for frame, _ in groupby((rel, line) for _, rel, line in sorted(found))]


def locate_failure(eval_output: str, files: Iterable[str],
                   summary: EvalSummary | None = None) -> tuple[str, int] | None:
    """Pick the source location to show first for an eval output.

    The first failing test's traceback is read; the first frame in the
    repository's own non-test code (where the test enters the code under
    test) wins, else the deepest frame in a working-copy file (usually the
    test's failing line).

    Args:
        eval_output: the entrypoint's output text.
        files: visible working-copy files (relative POSIX paths).
        summary: the eval's summary; its first failure located in a visible
            file wins (``EvalSummary.failures``).

    Returns:
        ``(relative path, 1-based line)`` or None when no frame names a
        working-copy file.
    """
    fileset = set(files)
    for failure in summary.failures if summary else ():
        if failure.path in fileset and failure.line:
            return failure.path, failure.line
    frames = traceback_frames(first_failure_block(eval_output), fileset)
    if not frames:
        frames = traceback_frames(eval_output, fileset)
    return pick_location(frames)


def first_source_file(files: Iterable[str]) -> str | None:
    """Return the first non-test Python file (sorted), else the first file, else None."""
    return min(files, default=None, key=lambda rel: (
        not rel.endswith(".py"), rel.endswith(".py") and is_test_file(rel), rel))


def no_tests_hint(files: Iterable[str], entrypoint: str) -> str:
    """One line saying why an eval counted 0 tests and what to pass instead.

    Args:
        files: the working copy's visible files (relative POSIX paths).
        entrypoint: the command that ran.

    Returns:
        The hint; it names files that look like tests pytest does not collect by
        default (e.g. ``test.py``, ``tests.py``, ``check_x.py``) when there are some.
    """
    candidates = [f for f in files if f.endswith(".py") and "test" in posixpath.basename(f)
                  and not is_test_file(f)][:3]
    if candidates:
        return (f"0 tests: `{entrypoint}` collected none (pytest collects test_*.py and "
                f"*_test.py only); try --entrypoint '{entrypoint} {' '.join(candidates)}'")
    return (f"0 tests: `{entrypoint}` collected none; pass --entrypoint with the command "
            "that runs this repository's tests")
