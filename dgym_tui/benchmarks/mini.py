"""Our own set of small buggy programs (``data/mini``).

Each task is a folder ``<name>/`` holding 1-3 modules, a pytest file
``test_<name>.py`` that fails because of one bug, and:

- ``task.yaml``: ``description`` (the symptom: what the agent is told),
  ``bug`` (what is actually wrong), ``category``, ``entrypoint``, optional
  ``debug_entrypoint``, and ``fix`` (a file name, default ``.fix.patch``).
- ``.fix.patch``: a unified diff (``a/`` ``b/`` prefixes) that fixes the bug.
- ``.debugignore`` / ``.debugreadonly``: what the agent cannot see / change.

``task.yaml`` and the fix are the answer key: they go into ``Task.meta`` and
are left out of the folder the working copy is made from (see
:func:`~dgym_tui.benchmarks.base.stage_copy`), so no tool, pdb session or test
run can read them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from dgym_tui.benchmarks.base import Benchmark, Task, read_patterns, stage_copy
from dgym_tui.core.env import DEFAULT_ENTRYPOINT
from dgym_tui.support.resources import resource_dir

TASK_FILE = "task.yaml"
DEFAULT_FIX_FILE = ".fix.patch"


def default_path() -> Path:
    """Return the folder of the built-in mini tasks (``data/mini``)."""
    return resource_dir("data") / "mini"


def read_task_file(folder: Path) -> dict[str, Any]:
    """Read and check ``folder/task.yaml``.

    Returns:
        the mapping with at least a one-line ``description``; ``entrypoint``
        defaults to the default entrypoint on ``test_<folder name>.py`` and ``fix``
        to ``.fix.patch``.

    Raises:
        ValueError: the file is not a YAML mapping or lacks a one-line description.
    """
    path = folder / TASK_FILE
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({exc}); fix the file") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: must be a mapping with description, bug, entrypoint")  # noqa: TRY004
    description = data.get("description")
    if not isinstance(description, str) or len(description.strip().splitlines()) != 1:
        raise ValueError(f"{path}: 'description' must be one non-empty line (the symptom)")
    data.setdefault("entrypoint", f"{DEFAULT_ENTRYPOINT} test_{folder.name}.py")
    data.setdefault("fix", DEFAULT_FIX_FILE)
    return data


class MiniBenchmark(Benchmark):
    """The hand-written buggy programs in ``data/mini`` (or a folder like it).

    Args:
        path: a folder whose sub-folders each hold a ``task.yaml``; None
            uses the built-in ``data/mini``.

    Raises:
        FileNotFoundError: ``path`` is not a folder.
        EmptyBenchmarkError: ``path`` holds no task folder with a ``task.yaml``.
    """

    name = "mini"

    def __init__(self, path: str | Path | None = None) -> None:
        self.root = Path(path).expanduser() if path else default_path()
        if not self.root.is_dir():
            raise FileNotFoundError(f"mini task folder {str(self.root)!r} does not exist; "
                                    "give a folder of task folders")
        if not self.tasks():
            from dgym_tui.benchmarks.folder import EmptyBenchmarkError

            raise EmptyBenchmarkError(
                f"{self.root} holds no mini task: expected sub-folders each with a {TASK_FILE} "
                "(description, bug, entrypoint); for task folders without one use the "
                "folder benchmark (dgym list-tasks folder -p path=...)")

    def tasks(self) -> list[str]:
        """Return the names of the sub-folders holding a ``task.yaml``, sorted."""
        return sorted(d.name for d in self.root.iterdir() if (d / TASK_FILE).is_file())

    def source(self, task_name: str) -> Path:
        """Return the original folder of ``task_name`` (answer key included)."""
        return self.root / task_name

    def _load(self, task_name: str) -> Task:
        folder = self.source(task_name)
        data = read_task_file(folder)
        fix_name = str(data["fix"])
        fix_path = folder / fix_name
        meta = {
            "bug": data.get("bug", ""),
            "category": data.get("category", ""),
            "gold_patch": fix_path.read_text(encoding="utf-8") if fix_path.is_file() else "",
            "source": str(folder),
        }
        private = [TASK_FILE, fix_name]
        ignore = read_patterns(folder / ".debugignore")
        return Task(
            name=task_name,
            benchmark=self.name,
            path=stage_copy(folder, exclude=private),
            entrypoint=str(data["entrypoint"]),
            debug_entrypoint=data.get("debug_entrypoint"),
            description=data["description"].strip(),
            ignore=[*ignore, *(p for p in private if p not in ignore)],
            readonly=read_patterns(folder / ".debugreadonly"),
            meta=meta,
        )


__all__ = ["MiniBenchmark", "default_path", "read_task_file"]
