"""A repository on this machine as a one-task benchmark (``dgym-tui ./myrepo``).

The folder itself is the task's ``path``: every episode works on a copy, and
the repository's own ``.debugignore`` / ``.debugreadonly`` apply. A
``dgym.yaml`` (or ``task.yaml``) in the folder gives defaults for the task's
settings (``entrypoint: pytest tests``, ``readonly: [tests/]``,
``terminal``, ``image``, ``description``, ...); arguments win over it.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

from dgym_tui.benchmarks.base import Benchmark, Task, get_benchmark
from dgym_tui.core.env import DEFAULT_ENTRYPOINT
from dgym_tui.core.errors import first_line

#: Files in the repository folder whose mapping gives the task's defaults (first found wins).
CONFIG_FILES = ("dgym.yaml", "task.yaml")
#: ``Task.meta`` key of a task read from a folder the person points at, whose ``terminal`` the
#: person did not choose: the config file that asked for ``Task.terminal`` (None: no file did).
#: The repository wrote that file, so its terminal is a request that may raise the person's
#: sandbox but never lower it (:func:`dgym_tui.launch.sandbox.choose_terminal`).
TERMINAL_REQUEST = "terminal_request"
#: The keys of a folder config that are task settings (others, e.g. ``bug``, are ignored).
CONFIG_KEYS = ("entrypoint", "debug_entrypoint", "description", "ignore", "readonly", "image",
               "terminal", "setup_commands")


class LocalBenchmark(Benchmark):
    """One task: the repository at ``path``.

    Every setting left None comes from the folder's ``dgym.yaml`` /
    ``task.yaml``, else the environment's default.

    Args:
        path: the repository folder (str or Path; ``~`` is expanded).
        entrypoint: shell command that runs its tests, run in the repository root.
        name: the task's name; None uses the folder's name.
        debug_entrypoint: command pdb starts; None lets the pdb tool derive it.
        description: what the agent is told; empty uses the environment's default.
        ignore: extra gitignore-style patterns hidden from the agent.
        readonly: extra gitignore-style patterns the agent may not change.
        image: Docker image for ``terminal="docker"``.
        terminal: ``"local"``, ``"bwrap"``, ``"docker"`` or None. None: the folder's
            config may ask for one, a request the front ends may refuse
            (:data:`TERMINAL_REQUEST`).
        setup_commands: shell commands run before the first eval.

    Raises:
        ValueError: ``path`` is not an existing folder, or its config file is
            not a YAML mapping.
    """

    name = "local"

    def __init__(self, path: str | Path, entrypoint: str | None = None,
                 name: str | None = None, debug_entrypoint: str | None = None,
                 description: str | None = None, ignore: list[str] | None = None,
                 readonly: list[str] | None = None, image: str | None = None,
                 terminal: str | None = None, setup_commands: list[str] | None = None) -> None:
        folder = Path(path).expanduser()
        if folder.exists() and not folder.is_dir():
            raise ValueError(f"{path} is a file, not a folder; give the repository folder "
                             "that holds it")
        if not folder.is_dir():
            raise ValueError(f"no such folder: {path}; give the path of a repository folder")
        self.path = folder.resolve()
        given = {"entrypoint": entrypoint, "debug_entrypoint": debug_entrypoint,
                 "description": description, "ignore": ignore, "readonly": readonly,
                 "image": image, "terminal": terminal, "setup_commands": setup_commands}
        from_file = read_folder_config(self.path)
        settings = {**from_file, **{key: value for key, value in given.items() if value is not None}}
        if "entrypoint" not in settings:  # the initial eval's line names the command
            settings["entrypoint"] = detect_entrypoint(self.path)
        self.task_name = name or self.path.name
        meta: dict[str, Any] = {"source": str(self.path)}
        if terminal is None:
            meta[TERMINAL_REQUEST] = (str(config_file(self.path)) if "terminal" in from_file
                                      else None)
        self._task = Task(name=self.task_name, benchmark=self.name, path=self.path,
                          meta=meta, **settings)

    def tasks(self) -> list[str]:
        """Return ``[task_name]``."""
        return [self.task_name]

    def _load(self, task_name: str) -> Task:
        task = self._task  # a fresh copy each time: callers may edit theirs
        return replace(task, ignore=list(task.ignore), readonly=list(task.readonly),
                       setup_commands=list(task.setup_commands), meta=dict(task.meta))


#: Single test files pytest does not collect by default (not ``test_*.py`` / ``*_test.py``)
#: but a repository's usual home of its tests; run by name when nothing else is found.
PLAIN_TEST_FILES = ("test.py", "tests.py")


def detect_entrypoint(folder: Path) -> str:
    """The test command of a folder that names none (no ``--entrypoint``, no config file).

    pytest finds ``test_*.py`` / ``*_test.py`` files (a ``tests/`` folder holds them)
    by itself: :data:`DEFAULT_ENTRYPOINT` (:func:`default_pytest`). A folder with none
    of those but a ``test.py`` or ``tests.py`` at its top gets ``DEFAULT_ENTRYPOINT FILE``
    (pytest collects the test functions of a file it is given by name).

    Args:
        folder: the repository folder.

    Returns:
        The shell command.
    """
    from dgym_tui.core.evaluation.summary import is_test_file

    pytest = default_pytest()
    try:
        top = sorted(entry.name for entry in folder.iterdir())
    except OSError:
        return pytest
    if (folder / "tests").is_dir() or any(
            name.endswith(".py") and name != "conftest.py" and is_test_file(name) for name in top):
        return pytest
    plain = [name for name in PLAIN_TEST_FILES if (folder / name).is_file()]
    return f"{pytest} {' '.join(plain)}" if plain else pytest


def default_pytest() -> str:
    """:data:`DEFAULT_ENTRYPOINT`, or the same with ``python3`` when this machine's PATH
    has a ``python3`` but no ``python`` command (Debian and Ubuntu outside a virtualenv):
    the tests run with PATH's Python, in a sandbox too, and ``python`` was not found
    (exit code 127)."""
    command, _, rest = DEFAULT_ENTRYPOINT.partition(" ")
    if shutil.which(command) is None and shutil.which(f"{command}3") is not None:
        return f"{command}3 {rest}"
    return DEFAULT_ENTRYPOINT


def config_file(folder: Path) -> Path | None:
    """The config file of ``folder`` that :func:`read_folder_config` reads, or None."""
    return next((folder / name for name in CONFIG_FILES if (folder / name).is_file()), None)


def read_folder_config(folder: Path) -> dict[str, Any]:
    """Return the task settings of ``dgym.yaml`` or ``task.yaml`` in ``folder`` ({} when neither exists).

    Raises:
        ValueError: the file is not valid YAML or not a mapping (one line saying so).
    """
    for file_name in CONFIG_FILES:
        path = folder / file_name
        if not path.is_file():
            continue
        import yaml  # only with a file to read: its import is ~20 ms of the app's start

        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ValueError(f"bad config {path}: {first_line(exc)}; fix the YAML") from None
        if not isinstance(data, dict):
            raise ValueError(f"bad config {path}: expected a mapping like 'entrypoint: <test command>'")  # noqa: TRY004
        return {key: _setting(key, data[key]) for key in CONFIG_KEYS if data.get(key) is not None}
    return {}


def _setting(key: str, value: Any) -> Any:
    """A config value as the Task field wants it (lists of patterns / commands, else text)."""
    if key in ("ignore", "readonly", "setup_commands"):
        return [str(item) for item in value] if isinstance(value, list) else [str(value)]
    return str(value)


def folder_task(path: str | Path, **options: Any) -> Task:
    """Return the task of a bare repository folder: the ``local`` benchmark's one task.

    Args:
        path: the repository folder.
        **options: :class:`LocalBenchmark` options (``entrypoint``, ``readonly``, ...).

    Raises:
        ValueError: not a folder, or a bad ``dgym.yaml`` / ``task.yaml``.
    """
    given = {key: value for key, value in options.items() if value is not None}
    benchmark = get_benchmark("local", path=str(Path(path).expanduser().resolve()), **given)
    return benchmark.load(benchmark.tasks()[0])


__all__ = ["LocalBenchmark", "TERMINAL_REQUEST", "config_file", "detect_entrypoint", "folder_task",
           "read_folder_config"]
