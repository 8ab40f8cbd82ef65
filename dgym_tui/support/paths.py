"""Where dgym-tui writes things by default: the user's data folder, never the repository.

A trajectory written into the repository being debugged would be copied into
the next episode's working copy (the agent would read earlier episodes, fixes
included), so the front ends default to ``$XDG_DATA_HOME/dgym-tui/runs``
(``~/.local/share/dgym-tui/runs`` when the variable is unset) and hide the
trajectory's folder from the agent when a user puts it inside the repository.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from pathlib import Path

APP_NAME = "dgym-tui"


def data_dir() -> Path:
    """``$XDG_DATA_HOME/dgym-tui`` (default ``~/.local/share/dgym-tui``); not created."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / APP_NAME


def runs_dir() -> Path:
    """The default folder of trajectories: ``data_dir() / "runs"`` (not created)."""
    return data_dir() / "runs"


def slug(name: str, empty: str = "episode") -> str:
    """``name`` as a file-name part: runs of other characters than ``[A-Za-z0-9_.-]``
    become ``_`` (``"mini/pagination"`` -> ``"mini_pagination"``), ``_`` and ``.`` at
    either end are dropped; ``empty`` when nothing is left."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or empty


def unique_trajectory_path(task: str, folder: Path | str | None = None) -> Path:
    """Reserve a new trajectory file ``<folder>/<task slug>-<YYYYmmdd-HHMMSS>[-N].jsonl``.

    The file is created empty (exclusively, so two episodes started in the
    same second, even in two processes, never share a name); the trajectory
    writer then fills it.

    Args:
        task: task name (any text; see :func:`slug`).
        folder: where to put it (default :func:`runs_dir`); created if missing.

    Returns:
        The absolute path of the reserved file.

    Raises:
        OSError: the folder cannot be created or written.
    """
    where = Path(folder).expanduser() if folder is not None else runs_dir()
    where.mkdir(parents=True, exist_ok=True)
    stem = f"{slug(task)}-{time.strftime('%Y%m%d-%H%M%S')}"
    for n in range(1, 10_000):
        path = where / (f"{stem}.jsonl" if n == 1 else f"{stem}-{n}.jsonl")
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        os.close(fd)
        return path.resolve()
    raise OSError(f"no free trajectory name in {where} for {stem}")


def hidden_patterns(repo: Path | str, paths: Iterable[Path | str]) -> list[str]:
    """Gitignore patterns hiding the folders of ``paths`` that lie inside ``repo``.

    Args:
        repo: the repository an episode debugs.
        paths: files the front end writes during the episode (the trajectory).

    Returns:
        One anchored pattern per folder inside ``repo`` (e.g. ``"/runs/"``); a
        file directly in the repository root is hidden by its own name
        (``"/t.jsonl"``). Paths outside ``repo`` give nothing.
    """
    root = Path(repo).expanduser().resolve()
    patterns: list[str] = []
    for path in paths:
        target = Path(path).expanduser().resolve()
        try:
            rel = target.relative_to(root)
        except ValueError:
            continue
        parent = rel.parent
        pattern = f"/{rel.as_posix()}" if parent == Path(".") else f"/{parent.as_posix()}/"
        if pattern not in patterns:
            patterns.append(pattern)
    return patterns
