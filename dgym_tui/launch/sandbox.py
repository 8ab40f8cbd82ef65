"""Which sandbox (terminal) an episode runs in: the person chooses; a repository may only raise it.

A repository's own ``dgym.yaml`` / ``task.yaml`` is written by whoever wrote the
repository, not by the person running dgym: its ``terminal`` is a request. The front
ends (``dgym-tui PATH``, ``dgym play PATH``, ``dgym run`` over the ``local`` and
``folder`` benchmarks) settle it with :func:`choose_terminal`:

1. a terminal the person names (``--terminal``, the run config's ``terminal``, the
   ``local`` benchmark's ``terminal`` option) is used as it is;
2. otherwise the person's default for a folder of code applies: ``bwrap`` where it
   works, else ``local`` with a notice
   (:func:`dgym_tui.core.terminals.bwrap.default_terminal`);
3. a repository's request that is at least as strong as that default replaces it
   (``local`` -> ``bwrap`` or ``docker``; ``bwrap`` -> ``docker``); a weaker one
   (``local`` when the default is a sandbox) is ignored with a one-line notice.

Tasks of other benchmarks (``mini``, ``exercism``, ``swebench``, ...) come from
loaders that ship with dgym; a terminal they set is used as it is (a SWE-bench image
runs in ``docker``), and one that sets none gets the person's default like a folder:
the code an agent runs on our own tasks is as hostile as on anyone's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dgym_tui.benchmarks.base import Task
from dgym_tui.benchmarks.local import TERMINAL_REQUEST

#: How much each terminal keeps the code from the host: a repository may ask for more, never less.
STRENGTH = {"local": 0, "bwrap": 1, "docker": 1}


def _default_terminal() -> tuple[str, str | None]:
    from dgym_tui.core.terminals.bwrap import default_terminal

    return default_terminal()


def choose_terminal(task: Task, chosen: str | None,
                    default: Callable[[], tuple[str, str | None]] = _default_terminal,
                    ) -> tuple[str | None, list[str]]:
    """The terminal an episode of ``task`` runs in, and what the person should be told.

    Args:
        task: the episode's task; a task read from a folder the person points at
            carries ``meta[TERMINAL_REQUEST]`` (the config file that asked for
            ``task.terminal``, or None when no file did).
        chosen: the terminal the person named (``"local"``, ``"bwrap"``,
            ``"docker"``), or None.
        default: returns the person's default ``(terminal, notice or None)``; called
            only when nothing was chosen and the task is a folder's or names no terminal.

    Returns:
        ``(terminal, notices)``; notices are one line each, to show the person (a
        lowered request that was ignored, no working sandbox).
    """
    if chosen:
        return chosen, []
    if TERMINAL_REQUEST not in task.meta and task.terminal is not None:
        return task.terminal, []
    fallback, why = default()
    notices = [why] if why else []
    requested, source = task.terminal, task.meta.get(TERMINAL_REQUEST)
    if requested is None:
        return fallback, notices
    if STRENGTH.get(requested, -1) >= STRENGTH.get(fallback, 0):
        return requested, []
    return fallback, [f"ignored 'terminal: {requested}' of {source or 'the task'}: a repository "
                      f"cannot lower the sandbox; running in {fallback} (to run in {requested}, "
                      "choose it yourself: --terminal, or a run config's terminal)", *notices]


def terminal_name(env: Any) -> str:
    """The name of the terminal ``env`` (a ``RepoEnv``) runs in: ``"local"``, ``"bwrap"``,
    ``"docker"``, or a custom terminal's class name."""
    return str(env.terminal_name)


def describe_sandbox(name: str) -> str:
    """One line naming the sandbox in force, e.g. ``"sandbox: bwrap"`` or, for ``local``,
    ``"sandbox: local (unsandboxed: commands run with your own rights)"``."""
    if name == "local":
        return "sandbox: local (unsandboxed: commands run with your own rights)"
    return f"sandbox: {name}"


__all__ = ["STRENGTH", "choose_terminal", "describe_sandbox", "terminal_name"]
