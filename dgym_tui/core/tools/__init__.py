"""Built-in tools and the tool look-up.

Importing this package registers each built-in tool (see ``base.register``);
third-party packages register tools through the ``dgym_tui.tools``
entry-point group, loaded on the first look-up.
"""

from __future__ import annotations

from collections.abc import Iterable

from . import bash, eval, grep, listdir, pdb, rewrite, submit, view  # noqa: F401, T100
from .base import REGISTRY, Tool, register

_PLUGINS_LOADED = False


def _load_plugins() -> None:
    global _PLUGINS_LOADED
    if _PLUGINS_LOADED:
        return
    _PLUGINS_LOADED = True
    from importlib.metadata import entry_points  # ~10 ms: only when a plugin is looked for

    for ep in entry_points(group="dgym_tui.tools"):
        register(ep.load())


def tools_for(names: Iterable[str]) -> dict[str, type[Tool]]:
    """Return a copy of the registry, complete as far as ``names`` need it.

    The plugins' entry points (a read of every installed package's metadata) are
    loaded only when one of ``names`` is not a built-in tool.
    """
    if any(name not in REGISTRY for name in names):
        _load_plugins()
    return dict(REGISTRY)


def all_tools() -> dict[str, type[Tool]]:
    """Return a copy of the registry: ``{name: Tool subclass}``."""
    _load_plugins()
    return dict(REGISTRY)
