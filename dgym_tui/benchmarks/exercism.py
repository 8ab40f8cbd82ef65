"""Exercism-style exercises as tasks ("aider" in the reference system).

The input is a folder in the layout of Exercism's Python track::

    exercises/practice/<slug>/
        <module>.py                  the stub the agent completes (module = slug with "_")
        <module>_test.py             the tests (read-only for the agent)
        .docs/instructions.md        what to build -> the task description
        .docs/instructions.append.md (optional) appended to the description
        .meta/config.json            (optional) names the solution / test files
        .meta/example.py             a reference solution: NEVER shown to the agent

``ExercismBenchmark(path=...)`` accepts the track root (the folder holding
``exercises/``), the ``exercises/practice`` folder itself, or any folder whose
sub-folders are exercises. The default is our own exercises in
``data/exercism``.

Because the working copy is bind-mounted whole into a sandbox (where pdb or
test code could open any file), ``.meta`` is not merely hidden: each loaded
task points at a staged copy of the exercise that holds only the stub, the
tests and ``.docs`` (:func:`~dgym_tui.benchmarks.base.stage_copy`).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from dgym_tui.benchmarks.base import Benchmark, Task, stage_copy
from dgym_tui.resources import resource_dir

#: Folders of an exercise that never reach the working copy.
PRIVATE_DIRS = (".meta",)


def default_path() -> Path:
    """Return the folder of our own exercises (``data/exercism``)."""
    return resource_dir("data") / "exercism"


def _exercises_dir(path: Path) -> Path:
    """Find the folder whose sub-folders are exercises, starting at ``path``."""
    for candidate in (path / "exercises" / "practice", path / "practice", path):
        if candidate.is_dir() and any(_is_exercise(d) for d in candidate.iterdir()):
            return candidate
    raise FileNotFoundError(
        f"no Exercism exercises under {str(path)!r}: give the track root or its "
        "exercises/practice folder (each exercise holds <name>.py, <name>_test.py and "
        ".docs/instructions.md)")


def _is_exercise(folder: Path) -> bool:
    return folder.is_dir() and (folder / ".docs" / "instructions.md").is_file()


def exercise_files(folder: Path) -> tuple[str, str]:
    """Return ``(stub, test)`` file names of the exercise in ``folder``.

    ``.meta/config.json`` (``files.solution[0]`` / ``files.test[0]``) wins;
    otherwise the names follow the track's convention from the folder name
    (``run-length-codec`` -> ``run_length_codec.py`` and ``run_length_codec_test.py``).

    Raises:
        FileNotFoundError: the stub or the test file does not exist.
    """
    module = folder.name.replace("-", "_")
    stub, test = f"{module}.py", f"{module}_test.py"
    config = folder / ".meta" / "config.json"
    if config.is_file():
        try:
            files = json.loads(config.read_text(encoding="utf-8")).get("files", {})
        except (json.JSONDecodeError, AttributeError):
            files = {}
        stub = (files.get("solution") or [stub])[0]
        test = (files.get("test") or [test])[0]
    for name in (stub, test):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"exercise {folder.name!r} has no {name}; "
                                    "check the exercise folder")
    return stub, test


def read_instructions(folder: Path) -> str:
    """Return ``.docs/instructions.md`` followed by ``.docs/instructions.append.md`` if present."""
    docs = folder / ".docs"
    parts = [(docs / "instructions.md").read_text(encoding="utf-8").strip()]
    append = docs / "instructions.append.md"
    if append.is_file():
        parts.append(append.read_text(encoding="utf-8").strip())
    return "\n\n".join(p for p in parts if p)


class ExercismBenchmark(Benchmark):
    """Exercism Python-track practice exercises: complete the stub until its tests pass.

    Args:
        path: track root, ``exercises/practice`` folder, or a folder of
            exercise folders (str or Path); None uses our ``data/exercism``.
        exercises: optional list of slugs to keep (others are left out).

    Raises:
        FileNotFoundError: ``path`` holds no exercise.
    """

    name = "exercism"

    def __init__(self, path: str | Path | None = None,
                 exercises: list[str] | None = None) -> None:
        self.root = _exercises_dir(Path(path).expanduser() if path else default_path())
        self.only = set(exercises) if exercises else None

    def tasks(self) -> list[str]:
        """Return the exercise slugs (folder names), sorted."""
        names = [d.name for d in self.root.iterdir() if _is_exercise(d)]
        return sorted(n for n in names if self.only is None or n in self.only)

    def source(self, task_name: str) -> Path:
        """Return the original folder of exercise ``task_name`` (with ``.meta``)."""
        return self.root / task_name

    def _load(self, task_name: str) -> Task:
        folder = self.source(task_name)
        stub, test = exercise_files(folder)
        meta: dict[str, Any] = {"slug": task_name, "stub": stub, "test": test,
                                "source": str(folder)}
        example = folder / ".meta" / "example.py"
        if example.is_file():
            meta["example"] = str(example)
        description = (read_instructions(folder)
                       + f"\n\nWrite your solution in `{stub}`; the tests in `{test}` "
                       "must pass. Do not change the tests.")
        return Task(
            name=task_name,
            benchmark=self.name,
            path=stage_copy(folder, exclude=PRIVATE_DIRS),
            entrypoint=f"python -m pytest -q {shlex.quote(test)}",
            description=description,
            ignore=[f"{d}/" for d in PRIVATE_DIRS],
            readonly=[test, ".docs/"],
            meta=meta,
        )


__all__ = ["ExercismBenchmark", "default_path", "exercise_files", "read_instructions"]
