"""A repository on this machine as a one-task benchmark (``dgym-tui ./myrepo``).

The folder itself is the task's ``path``: every episode works on a copy, and
the repository's own ``.debugignore`` / ``.debugreadonly`` apply.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from dgym_tui.benchmarks.base import Benchmark, Task


class LocalBenchmark(Benchmark):
    """One task: the repository at ``path``.

    Args:
        path: the repository folder (str or Path; ``~`` is expanded).
        entrypoint: shell command that runs its tests, run in the repository root.
        name: the task's name; None uses the folder's name.
        debug_entrypoint: command pdb starts; None lets the pdb tool derive it.
        description: what the agent is told; empty uses the environment's default.
        ignore: extra gitignore-style patterns hidden from the agent.
        readonly: extra gitignore-style patterns the agent may not change.
        image: Docker image for ``terminal="docker"``.
        terminal: ``"local"``, ``"docker"`` or None (the environment's default).
        setup_commands: shell commands run before the first eval.

    Raises:
        ValueError: ``path`` is not an existing folder.
    """

    name = "local"

    def __init__(self, path: str | Path, entrypoint: str = "python -m pytest -q",
                 name: str | None = None, debug_entrypoint: str | None = None,
                 description: str = "", ignore: Iterable[str] = (),
                 readonly: Iterable[str] = (), image: str | None = None,
                 terminal: str | None = None, setup_commands: Iterable[str] = ()) -> None:
        self.path = Path(path).expanduser().resolve()
        if not self.path.is_dir():
            raise ValueError(f"repository folder {str(path)!r} does not exist; "
                             "give the path of a folder")
        self.task_name = name or self.path.name
        self._task = Task(
            name=self.task_name,
            benchmark=self.name,
            path=self.path,
            entrypoint=entrypoint,
            debug_entrypoint=debug_entrypoint,
            description=description,
            ignore=list(ignore),
            readonly=list(readonly),
            image=image,
            terminal=terminal,
            setup_commands=list(setup_commands),
            meta={"source": str(self.path)},
        )

    def tasks(self) -> list[str]:
        """Return ``[task_name]``."""
        return [self.task_name]

    def _load(self, task_name: str) -> Task:
        task = self._task  # a fresh copy each time: callers may edit theirs
        return replace(task, ignore=list(task.ignore), readonly=list(task.readonly),
                       setup_commands=list(task.setup_commands), meta=dict(task.meta))


__all__ = ["LocalBenchmark"]
