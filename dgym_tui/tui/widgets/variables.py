"""The variables pane: the selected frame's locals (or globals) as an expandable tree.

Values changed since the previous stop in the same function are highlighted;
long reprs arrive elided from the core (``dgym_tui.core.pdb_inspect``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode


def _label(var: Any, changed: bool) -> Text:
    text = Text()
    text.append(var.name or "·", style="bold")
    text.append(" = ")
    text.append(var.repr, style="reverse" if changed else "")
    if var.length and var.children is None:
        text.append(f"  ({var.length} items)", style="dim")
    elif var.length and var.children is not None and len(var.children) < var.length:
        text.append(f"  (first {len(var.children)} of {var.length})", style="dim")
    return text


class VariablesPane(Tree[Any]):
    """Locals of the selected frame. ``v`` switches between locals and globals.

    Messages:
        VariablesPane.ScopeChanged: ``v`` was pressed (the app fetches the other scope).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "toggle_scope", "Locals/globals", show=False),
    ]

    DEFAULT_CSS = """
    VariablesPane { height: 1fr; background: $surface; padding: 0; }
    """

    @dataclass
    class ScopeChanged(Message):
        """The person asked for ``scope`` (``"locals"`` / ``"globals"``)."""

        scope: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("variables", id=id)
        self.show_root = False
        self.guide_depth = 2
        self.scope = "locals"
        self.changed: set[str] = set()
        self.shown: dict[str, str] = {}
        self._previous: dict[tuple[str, str, str], dict[str, str]] = {}

    def show_inspection(self, inspection: Any) -> None:
        """Show ``inspection``'s variables (an ``Inspection``; None: nothing to show)."""
        self.clear()
        self.changed = set()
        self.shown = {}
        if inspection is None:
            self.border_title = "variables"
            self.root.add_leaf(Text("(pdb is not stopped: b sets a breakpoint, c runs to it)",
                                    style="dim"))
            return
        frame = inspection.frame
        self.scope = inspection.scope
        where = f"{frame.function}" if frame else "?"
        self.border_title = f"{inspection.scope} · {where}"
        key = (frame.path, frame.function, inspection.scope) if frame else ("", "", "")
        before = self._previous.get(key, {})
        now = {v.name: v.repr for v in inspection.variables}
        self.changed = {n for n, r in now.items() if n in before and before[n] != r} | (
            set(now) - set(before) if before else set())
        self._previous[key] = now
        self.shown = now
        if not inspection.variables:
            self.root.add_leaf(Text(f"(no {inspection.scope})", style="dim"))
        for var in inspection.variables:
            self._add(self.root, var, var.name in self.changed)
        if inspection.truncated:
            self.root.add_leaf(Text("… more values not fetched", style="dim"))

    def _add(self, parent: TreeNode[Any], var: Any, changed: bool = False) -> None:
        label = _label(var, changed)
        if var.children:
            node = parent.add(label, data=var, expand=False)
            for child in var.children:
                self._add(node, child)
        else:
            parent.add_leaf(label, data=var)

    def action_toggle_scope(self) -> None:
        self.post_message(self.ScopeChanged("globals" if self.scope == "locals" else "locals"))
