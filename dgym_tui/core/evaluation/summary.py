"""Turn one run of the entrypoint into an :class:`EvalSummary`; describe it.

:func:`summarize` prefers pytest's structured report (our plugin, see
:mod:`dgym_tui.core.evaluation.pytest_plugin`): counts, failed tests with their location,
and whether pytest finished at all. Without a report (the entrypoint is not
pytest), pytest's closing summary line is read: ``3 failed, 2 passed, 1
skipped in 0.12s`` (framed by ``=`` signs unless ``-q`` is given) or ``no
tests ran in 0.01s``; the last such line counts. Without either, the exit
status counts as one test.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from dgym_tui.core.types import EvalSummary, FailedTest

if TYPE_CHECKING:  # the report's module is the eval's (the reset's), not an app's first frame
    from dgym_tui.core.evaluation.pytest_plugin import PytestReport

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LINE = re.compile(
    r"^=*\s*(?P<counts>(?:\d+ [a-z]+(?:, )?)+|no tests ran)"
    r"\s+in\s+[\d.]+\s*s(?:econds)?\b.*?=*\s*$")
_COUNT = re.compile(r"(\d+) ([a-z]+)")

# pytest's words -> EvalSummary field. Expected failures count as skipped
# (they do not count towards the score), unexpected passes as passed.
_FIELDS = {"passed": "passed", "xpassed": "passed", "failed": "failed",
           "error": "errors", "errors": "errors", "skipped": "skipped",
           "xfailed": "skipped"}


def parse_pytest_summary(output: str, exit_code: int | None = None,
                         timed_out: bool = False) -> EvalSummary | None:
    """Return the counts of pytest's last summary line in ``output``.

    Args:
        output: the entrypoint's combined stdout/stderr text.
        exit_code: the entrypoint's exit status (None on timeout), copied into
            the result.
        timed_out: whether the run was killed for taking too long, copied too.

    Returns:
        An ``EvalSummary`` with passed / failed / errors / skipped filled, or
        None when the output holds no pytest summary line.
    """
    for raw in reversed(output.splitlines()):
        line = _ANSI.sub("", raw).strip()
        match = _LINE.match(line)
        if not match:
            continue
        summary = EvalSummary(exit_code=exit_code, timed_out=timed_out)
        for number, word in _COUNT.findall(match.group("counts")):
            field = _FIELDS.get(word)
            if field:
                setattr(summary, field, getattr(summary, field) + int(number))
        return summary
    return None


def summarize(output: str, exit_code: int | None, timed_out: bool, report: PytestReport | None,
              to_relative: Callable[[str], str | None]) -> EvalSummary:
    """The :class:`EvalSummary` of one run of the entrypoint.

    Args:
        output: the entrypoint's combined output text.
        exit_code: its exit status (None on timeout).
        timed_out: whether it was killed for taking too long.
        report: what our pytest plugin wrote (None when pytest never loaded it).
        to_relative: maps a path as the tests saw it to a working-copy-relative
            path, None outside (``Terminal.to_relative``).

    Returns:
        The summary. A report with a ``problem`` (unreadable, planted by the
        code under test) counts as one error with that problem. With a
        report, a pytest session cut short (``os._exit``, a crash) or an exit
        code that disagrees with the report makes the run count as failed
        (one more error, unless the report already has one) and sets
        ``problem`` to a one-line reason.
    """
    if report is None:
        summary = parse_pytest_summary(output, exit_code, timed_out)
        if summary is None:
            ok = exit_code == 0
            summary = EvalSummary(passed=int(ok), failed=int(not ok),
                                  exit_code=exit_code, timed_out=timed_out)
        return summary
    summary = EvalSummary(exit_code=exit_code, timed_out=timed_out)
    if report.problem:
        summary.errors, summary.problem = 1, report.problem
        return summary
    for session in report.sessions:
        for category, number in session.counts.items():
            field = _FIELDS.get(category)
            if field:
                setattr(summary, field, getattr(summary, field) + number)
        summary.failures += [_failed_test(record, to_relative) for record in session.failures]
    if timed_out:
        return summary
    if not all(s.finished for s in report.sessions):
        summary.errors += 1
        summary.problem = ("pytest ended before finishing its report (the process exited "
                           "early: os._exit, a crash or a kill); counted as failed")
        return summary
    report_ok = (summary.failed == 0 and summary.errors == 0
                 and all(s.exitstatus == 0 for s in report.sessions))
    if report_ok != (exit_code == 0):
        statuses = ", ".join(str(s.exitstatus) for s in report.sessions)
        summary.problem = (f"the entrypoint's exit code {exit_code} disagrees with pytest's "
                           f"report (pytest exit status {statuses}); counted as failed")
        if report_ok:
            summary.errors += 1
    return summary


def _failed_test(record: dict, to_relative: Callable[[str], str | None]) -> FailedTest:
    """A :class:`FailedTest` from a plugin ``failure`` record (paths made relative)."""
    frames: list[tuple[str, int]] = []
    for item in record.get("frames") or []:
        try:
            path, line = str(item[0]), int(item[1])
        except (TypeError, ValueError, IndexError):
            continue
        rel = to_relative(path)
        if rel is not None and rel != "." and (not frames or frames[-1] != (rel, line)):
            frames.append((rel, line))
    location = record.get("location")
    if not frames and isinstance(location, list) and len(location) == 2:
        rel = posixpath.normpath(str(location[0]))  # relative to pytest's rootdir
        if isinstance(location[1], int) and not rel.startswith("../"):
            frames.append((rel, location[1]))
    where = pick_location(frames)
    return FailedTest(test_id=str(record.get("test_id", "")), path=where[0] if where else None,
                      line=where[1] if where else None, message=str(record.get("message", "")),
                      when=str(record.get("when", "call")), frames=frames)


def pick_location(frames: list[tuple[str, int]]) -> tuple[str, int] | None:
    """Where to look first in a failure's traceback frames (relative, outermost first).

    The first frame in the repository's own non-test code (where the test
    enters the code under test) wins, else the deepest frame; None when empty.
    """
    for rel, line in frames:
        if not is_test_file(rel):
            return rel, line
    return frames[-1] if frames else None


def is_test_file(path: str) -> bool:
    """Return True when ``path`` (POSIX, relative) looks like test code.

    Test code: ``test_*.py``, ``*_test.py``, ``conftest.py`` or any file under a
    ``tests``/``test`` folder.
    """
    name = posixpath.basename(path)
    parts = path.split("/")[:-1]
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(p in ("tests", "test") for p in parts))


def is_resolved(summary: EvalSummary | None) -> bool:
    """True when ``summary`` counts at least one test, every counted test passed,
    and the run was not cut short or contradicted by its exit code (``problem``)."""
    return bool(summary and summary.total > 0 and summary.passed == summary.total
                and not summary.timed_out and not summary.problem)


def describe_score(summary: EvalSummary) -> str:
    """One line such as ``"Score: 2/5 (2 passed, 3 failed)."`` for observations."""
    parts = [f"{summary.passed} passed", f"{summary.failed} failed"]
    if summary.errors:
        parts.append(f"{summary.errors} errors")
    if summary.skipped:
        parts.append(f"{summary.skipped} skipped")
    extra = " — timed out" if summary.timed_out else ""
    verdict = " All tests pass." if is_resolved(summary) else ""
    problem = f" Note: {summary.problem}." if summary.problem else ""
    return (f"Score: {summary.passed}/{summary.total} ({', '.join(parts)}{extra})."
            f"{verdict}{problem}")
