"""Keys that leave the footer while an agent drives, yet keep working.

Textual shows a binding in the footer when its ``show`` is True and the
node's ``check_action`` does not return False; a False also disables the key,
and Textual then tries the key's next binding. :func:`with_quiet_twins`
follows each "quiet" binding with a hidden twin (``show=False``) that runs the
same action through ``direct(...)``; :class:`QuietKeys` hides the shown
binding while :attr:`QuietKeys.keys_quiet` is True and enables the twin
instead, so the key still works but no longer takes footer space.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable
from typing import ClassVar

from textual.actions import parse as parse_action
from textual.binding import Binding, BindingType


def action_name(action: str) -> str:
    """The name of a Textual action string without its arguments (``"pdb('n')"`` -> ``"pdb"``)."""
    return action.partition("(")[0]


def with_quiet_twins(bindings: Iterable[Binding], quiet: Iterable[str]) -> list[BindingType]:
    """Return ``bindings`` with a hidden ``direct(...)`` twin after each quiet one.

    Args:
        bindings: the node's bindings, shown ones included.
        quiet: action names (without arguments) whose keys leave the footer
            while :attr:`QuietKeys.keys_quiet` is True.

    Returns:
        A new list for the node's ``BINDINGS``.
    """
    quiet = set(quiet)
    out: list[BindingType] = []
    for binding in bindings:
        out.append(binding)
        if action_name(binding.action) in quiet:
            out.append(dataclasses.replace(binding, action=f"direct({binding.action!r})",
                                           show=False))
    return out


class QuietKeys:
    """Mixin for an App or Widget whose ``QUIET`` keys leave the footer when ``keys_quiet``.

    Subclasses implement :meth:`check_key` (instead of ``check_action``) and
    :attr:`keys_quiet`.
    """

    #: Action names (without arguments) whose keys leave the footer while ``keys_quiet``.
    QUIET: ClassVar[frozenset[str]] = frozenset()

    @property
    def keys_quiet(self) -> bool:
        """True while the ``QUIET`` keys should stay out of the footer."""
        return False

    def check_key(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Textual's ``check_action`` contract for this node's own actions."""
        return True

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Route quiet keys to their hidden twins while ``keys_quiet``, else :meth:`check_key`."""
        if action == "direct":
            name, params = parse_action(str(parameters[0]))[1:]
            return self.keys_quiet and name in self.QUIET and bool(self.check_key(name, params))
        if action in self.QUIET and self.keys_quiet:
            return False
        return self.check_key(action, parameters)

    async def action_direct(self, action: str) -> None:
        """Run ``action`` (e.g. ``"pdb('n')"``) on this node, bypassing the footer rules."""
        name, params = parse_action(action)[1:]
        result = getattr(self, f"action_{name}")(*params)
        if inspect.isawaitable(result):
            await result
