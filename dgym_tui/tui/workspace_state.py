"""The working copy and one of its files as the live screen shows them: what the
messages of :mod:`dgym_tui.tui.messages` carry, and what the screen holds (it holds an
empty :class:`WorkspaceState` from its start, before those messages' module is imported).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class WorkspaceState:
    """The working copy as the file tree and the diff tab show it.

    Attributes:
        files: visible files, relative POSIX paths.
        readonly: the read-only ones among them.
        patch: unified diff against the starting files (None: not computed).
    """

    files: list[str]
    readonly: frozenset[str]
    patch: str | None = None


@dataclass
class SourceText:
    """The text of one working-copy file (``text`` None: unreadable / gone)."""

    path: str
    text: str | None
