"""Exercism-style exercises as tasks ("aider" in the reference system).

The track's layout, what the agent sees and what stays hidden (the reference solutions
are staged out of the working copy and masked in the sandbox): docs/benchmarks.md.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from dgym_tui.benchmarks.base import Benchmark, Task, stage_copy
from dgym_tui.core.env import DEFAULT_ENTRYPOINT
from dgym_tui.support.resources import resource_dir

#: Folders of an exercise that never reach the working copy (they hold solutions).
PRIVATE_DIRS = (".meta", ".approaches", ".articles")
#: Refactoring exercises of the Python track: their stub already passes the tests.
REFACTORING = frozenset({"ledger", "markdown"})


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


def _config_files(folder: Path) -> dict[str, list[str]]:
    """``files`` of ``.meta/config.json`` (``{}`` when missing or unreadable)."""
    config = folder / ".meta" / "config.json"
    try:
        files = json.loads(config.read_text(encoding="utf-8")).get("files", {})
    except (OSError, json.JSONDecodeError, AttributeError):
        return {}
    return {k: [str(v) for v in vals] for k, vals in files.items() if isinstance(vals, list)}


def exercise_files(folder: Path) -> tuple[str, str]:
    """Return ``(stub, test)`` file names of the exercise in ``folder``.

    ``.meta/config.json`` (``files.solution[0]`` / ``files.test[0]``) wins;
    otherwise the names follow the track's convention from the folder name
    (``run-length-codec`` -> ``run_length_codec.py`` and ``run_length_codec_test.py``).

    Raises:
        FileNotFoundError: the stub or the test file does not exist.
    """
    module = folder.name.replace("-", "_")
    files = _config_files(folder)
    stub = (files.get("solution") or [f"{module}.py"])[0]
    test = (files.get("test") or [f"{module}_test.py"])[0]
    for name in (stub, test):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"exercise {folder.name!r} has no {name}; "
                                    "check the exercise folder")
    return stub, test


def protected_files(folder: Path) -> list[str]:
    """Return every test file and test helper of the exercise (read-only for the agent).

    ``.meta/config.json``'s ``files.test`` and ``files.editor`` (helpers such
    as paasio's ``test_utils.py``) that exist, else the conventional test file.
    """
    files = _config_files(folder)
    names = [*files.get("test", []), *files.get("editor", [])] or [exercise_files(folder)[1]]
    return [n for n in dict.fromkeys(names) if (folder / n).is_file()]


def read_instructions(folder: Path) -> str:
    """Return the exercise's text as Exercism shows it.

    ``.docs/introduction.md`` (+ ``introduction.append.md``), then
    ``instructions.md``, then ``instructions.append.md``; missing parts are skipped.
    """
    docs = folder / ".docs"
    parts = []
    for name in ("introduction.md", "introduction.append.md", "instructions.md",
                 "instructions.append.md"):
        path = docs / name
        if path.is_file():
            parts.append(path.read_text(encoding="utf-8").strip())
    return "\n\n".join(p for p in parts if p)


def is_refactoring(folder: Path) -> bool:
    """True for a refactoring exercise (its stub already passes): ``ledger``, ``markdown``,
    or instructions that start by asking to refactor."""
    if folder.name in REFACTORING:
        return True
    try:
        text = (folder / ".docs" / "instructions.md").read_text(encoding="utf-8")
    except OSError:
        return False
    body = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return bool(body) and body[0].lstrip().lower().startswith("refactor")


class ExercismBenchmark(Benchmark):
    """Exercism Python-track practice exercises: complete the stub until its tests pass.

    Args:
        path: track root, ``exercises/practice`` folder, or a folder of
            exercise folders (str or Path); None uses our ``data/exercism``.
        exercises: optional list of slugs to keep (others are left out);
            ``affine_cipher`` names ``affine-cipher``.
        include_refactoring: also list the refactoring exercises (their stub
            already passes, so they would inflate success rates).

    Raises:
        FileNotFoundError: ``path`` holds no exercise.
    """

    name = "exercism"

    def __init__(self, path: str | Path | None = None, exercises: list[str] | None = None,
                 include_refactoring: bool = False) -> None:
        self.root = _exercises_dir(Path(path).expanduser() if path else default_path())
        self.only = {self._slug(e) for e in exercises} if exercises else None
        self.include_refactoring = include_refactoring

    def _slug(self, name: str) -> str:
        """``name`` as a folder name: ``affine_cipher`` -> ``affine-cipher`` when that exists."""
        if not (self.root / name).is_dir() and (self.root / name.replace("_", "-")).is_dir():
            return name.replace("_", "-")
        return name

    def all_tasks(self) -> list[str]:
        """Return every exercise slug, refactoring ones included, sorted."""
        names = [d.name for d in self.root.iterdir() if _is_exercise(d)]
        return sorted(n for n in names if self.only is None or n in self.only)

    def tasks(self) -> list[str]:
        """Return the exercise slugs (folder names), sorted; refactoring exercises only
        with ``include_refactoring``."""
        return [n for n in self.all_tasks()
                if self.include_refactoring or not is_refactoring(self.root / n)]

    def source(self, task_name: str) -> Path:
        """Return the original folder of exercise ``task_name`` (with ``.meta``)."""
        return self.root / self._slug(task_name)

    def load(self, task_name: str) -> Task:
        """Return the exercise ``task_name`` (``affine_cipher`` works for ``affine-cipher``).

        Raises:
            KeyError: no such exercise (the message lists the closest names), or a
                refactoring exercise without ``include_refactoring``.
        """
        slug = self._slug(task_name)
        if slug in self.all_tasks() and slug not in self.tasks():
            raise KeyError(f"{slug!r} is a refactoring exercise (its stub already passes), left "
                           "out of runs; add -p include_refactoring=true to run it")
        return super().load(slug)

    def describe(self, task_name: str) -> dict[str, Any]:
        """The ``--details`` of an exercise: test command, whether it is a refactoring one,
        and whether runs leave it out (``left_out``: ``-p include_refactoring=true`` adds it)."""
        folder = self.source(task_name)
        if not _is_exercise(folder):
            self.load(task_name)  # raises the KeyError naming close slugs
        _, test = exercise_files(folder)
        refactoring = is_refactoring(folder)
        return {"name": folder.name, "image": None, "test_command": _entrypoint(test),
                "refactoring": refactoring,
                "left_out": refactoring and not self.include_refactoring}

    def _load(self, task_name: str) -> Task:
        folder = self.source(task_name)
        stub, test = exercise_files(folder)
        meta: dict[str, Any] = {"slug": task_name, "stub": stub, "test": test,
                                "source": str(folder), "refactoring": is_refactoring(folder)}
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
            entrypoint=_entrypoint(test),
            description=description,
            ignore=[f"{d}/" for d in PRIVATE_DIRS],
            readonly=[*protected_files(folder), ".docs/"],
            # bwrap shows the host read-only: the track (solutions included) stays masked
            hidden=[str(self.root)],
            meta=meta,
        )


def _entrypoint(test: str) -> str:
    return f"{DEFAULT_ENTRYPOINT} {shlex.quote(test)}"


__all__ = ["ExercismBenchmark", "default_path", "exercise_files", "is_refactoring",
           "protected_files", "read_instructions"]
