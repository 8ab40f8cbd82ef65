"""What ``dgym list-tasks BENCHMARK --details`` prints: per task, what a run would do.

Each loader's :meth:`~dgym_tui.benchmarks.base.Benchmark.describe` says it
(SWE-bench without pulling images): the task's name, Docker image, exact test
command, and loader-specific facts such as FAIL_TO_PASS / PASS_TO_PASS counts
or a refactoring flag. This is how a user checks what will run before
spending money on an LLM.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dgym_tui.benchmarks.base import Benchmark

#: Labels of the detail fields, in print order; other fields follow under their own names.
LABELS = {"image": "image", "test_command": "test", "fail_to_pass": "FAIL_TO_PASS",
          "pass_to_pass": "PASS_TO_PASS", "root_setup": "setup (as root)",
          "refactoring": "refactoring", "left_out": "left out of runs"}


def task_details(bench: Benchmark) -> Iterator[dict[str, Any]]:
    """Yield :meth:`Benchmark.describe` of every task, in task order.

    Loaders that leave some tasks out of runs (Exercism's refactoring
    exercises) list them too through an ``all_tasks()`` method; their details
    say so (``left_out``).
    """
    for name in getattr(bench, "all_tasks", bench.tasks)():
        yield bench.describe(name)


def format_details(details: dict[str, Any]) -> str:
    """Return one task's details as text: the name, then one indented ``label: value`` line each.

    ``None`` values print as ``-`` (e.g. no image: the environment's default).
    """
    lines = [str(details["name"])]
    keys = [k for k in LABELS if k in details] + [
        k for k in details if k not in LABELS and k != "name"]
    for key in keys:
        value = details[key]
        if isinstance(value, bool):
            value = "yes" if value else "no"
        lines.append(f"  {LABELS.get(key, key)}: {'-' if value is None else value}")
    return "\n".join(lines)


__all__ = ["LABELS", "format_details", "task_details"]
