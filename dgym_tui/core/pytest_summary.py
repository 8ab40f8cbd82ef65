"""Parse pytest's closing summary line into an :class:`EvalSummary`; describe it.

pytest ends its report with a line such as ``3 failed, 2 passed, 1 skipped in
0.12s`` (framed by ``=`` signs unless ``-q`` is given) or ``no tests ran in
0.01s``. The last such line of the output is the one that counts.
"""

from __future__ import annotations

import re

from dgym_tui.core.types import EvalSummary

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


def is_resolved(summary: EvalSummary | None) -> bool:
    """True when ``summary`` counts at least one test and every counted test passed."""
    return bool(summary and summary.total > 0 and summary.passed == summary.total
                and not summary.timed_out)


def describe_score(summary: EvalSummary) -> str:
    """One line such as ``"Score: 2/5 (2 passed, 3 failed)."`` for observations."""
    parts = [f"{summary.passed} passed", f"{summary.failed} failed"]
    if summary.errors:
        parts.append(f"{summary.errors} errors")
    if summary.skipped:
        parts.append(f"{summary.skipped} skipped")
    extra = " — timed out" if summary.timed_out else ""
    verdict = " All tests pass." if is_resolved(summary) else ""
    return f"Score: {summary.passed}/{summary.total} ({', '.join(parts)}{extra}).{verdict}"
