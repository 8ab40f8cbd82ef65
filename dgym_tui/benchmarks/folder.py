"""A folder of task folders as a benchmark (the layout of debug-gym's own mini set).

::

    FOLDER/
        dgym.yaml               (optional) defaults for every task (``entrypoint: ...``)
        <task>/                 one task per sub-folder:
            *.py                the buggy code
            test.py             its tests
            .debugignore        (optional) what the agent cannot see
            .debugreadonly      (optional) what it cannot change
            instructions.md     (optional) what the agent is told
            dgym.yaml           (optional) this task's settings (``entrypoint``, ``readonly``, ...)

Settings, most specific first: the task's ``dgym.yaml`` (or ``task.yaml``),
the benchmark's options (``-p entrypoint=...``), the folder's ``dgym.yaml``,
then the default entrypoint (:data:`~dgym_tui.core.env.DEFAULT_ENTRYPOINT`,
followed by ``test.py`` when the task has one: pytest does not collect a file
of that name by itself).
Each episode works on a copy of its task folder; the folder's ignore files
apply as in any repository. A folder without task folders is an error that
names it and this layout.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from dgym_tui.benchmarks.base import Benchmark, Task
from dgym_tui.benchmarks.local import CONFIG_FILES, TERMINAL_REQUEST, config_file, read_folder_config
from dgym_tui.core.env import DEFAULT_ENTRYPOINT

#: Optional file of a task folder whose text is what the agent is told.
INSTRUCTIONS = "instructions.md"
#: The expected layout, for error messages.
LAYOUT = ("a folder whose sub-folders each hold one task: buggy code, its tests "
          "(e.g. test.py), optional .debugignore / .debugreadonly / instructions.md / dgym.yaml")


class EmptyBenchmarkError(ValueError):
    """A benchmark folder holds no task; the message names the folder and the layout expected."""


def _is_task(folder: Path) -> bool:
    """A visible sub-folder holding at least one Python file."""
    return (folder.is_dir() and not folder.name.startswith((".", "_"))
            and any(folder.glob("*.py")))


class FolderBenchmark(Benchmark):
    """Every sub-folder of ``path`` is a task.

    Args:
        path: the folder of task folders (str or Path; ``~`` is expanded).
        entrypoint: test command for tasks whose own ``dgym.yaml`` sets none;
            None: the folder's ``dgym.yaml``, else the default entrypoint.
        tasks: task names to keep (None: all).

    Raises:
        ValueError: ``path`` is not a folder, or a ``dgym.yaml`` is bad.
        EmptyBenchmarkError: ``path`` holds no task folder.
    """

    name = "folder"

    def __init__(self, path: str | Path, entrypoint: str | None = None,
                 tasks: list[str] | None = None) -> None:
        self.root = Path(path).expanduser().resolve()
        if not self.root.is_dir():
            raise ValueError(f"no such folder: {path}; give {LAYOUT}")
        self.defaults: dict[str, Any] = read_folder_config(self.root)
        if entrypoint:
            self.defaults["entrypoint"] = entrypoint
        names = sorted(d.name for d in self.root.iterdir() if _is_task(d))
        self.names = [n for n in names if tasks is None or n in set(tasks)]
        if not names:
            raise EmptyBenchmarkError(f"{self.root} holds no task folder; expected {LAYOUT}")

    def tasks(self) -> list[str]:
        """Return the task folder names, sorted."""
        return list(self.names)

    def _load(self, task_name: str) -> Task:
        folder = self.root / task_name
        own = read_folder_config(folder)
        settings = {**self.defaults, **own}
        # a terminal named in these folders' files is a request: it may raise the sandbox only
        asked = (config_file(folder) if "terminal" in own
                 else config_file(self.root) if "terminal" in settings else None)
        if "entrypoint" not in settings:
            tests = " test.py" if (folder / "test.py").is_file() else ""
            settings["entrypoint"] = DEFAULT_ENTRYPOINT + tests
        instructions = folder / INSTRUCTIONS
        if "description" not in settings and instructions.is_file():
            settings["description"] = instructions.read_text(encoding="utf-8").strip()
        task = Task(name=task_name, benchmark=self.name, path=folder,
                    meta={"source": str(folder), TERMINAL_REQUEST: asked and str(asked)},
                    **settings)
        # the task's own files that steer it stay as they are
        steering = [n for n in (INSTRUCTIONS, *CONFIG_FILES) if (folder / n).is_file()]
        return replace(task, readonly=[*task.readonly, *steering])


__all__ = ["EmptyBenchmarkError", "FolderBenchmark", "INSTRUCTIONS", "LAYOUT"]
