"""The variables pane: the selected frame's locals (or globals) as an expandable tree.

Values changed since the previous stop in the same function are highlighted;
long reprs arrive elided from the core (``dgym_tui.core.pdb.inspect``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from dgym_tui.tui.widgets.line_style import StyleOncePerRender


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


@dataclass
class _Row:
    """One node to show: its label, the ``Variable`` it shows (None for a note) and its
    children (empty: a leaf)."""

    label: Text
    data: Any = None
    children: list[_Row] = field(default_factory=list)


def _row(var: Any, changed: bool = False) -> _Row:
    return _Row(_label(var, changed), var, [_row(child) for child in var.children or ()])


def _shape(items: Any) -> tuple:
    """What a relabel must keep, of rows or tree nodes (both have ``label``, ``data`` and
    ``children``): each one's name (or note) and its children's shape."""
    return tuple((_name(item), _shape(item.children)) for item in items)


def _name(item: Any) -> str:
    """A row's or tree node's name (its variable's, else its label's text)."""
    return item.data.name if item.data is not None else item.label.plain


def _expanded_paths(node: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The name paths of the expanded nodes under ``node``."""
    paths: set[tuple[str, ...]] = set()
    for child in node.children:
        path = (*prefix, _name(child))
        if child.is_expanded:
            paths.add(path)
        paths |= _expanded_paths(child, path)
    return paths


def _walk(items: Any, depth: int = 0) -> Iterator[tuple[int, Any]]:
    """Every row or tree node with its depth (0: under the root), parents first."""
    for item in items:
        yield depth, item
        yield from _walk(item.children, depth + 1)


class VariablesPane(StyleOncePerRender, Tree[Any]):
    """Locals of the selected frame. ``v`` switches between locals and globals.

    Messages:
        VariablesPane.ScopeChanged: ``v`` was pressed (the app fetches the other scope).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("v", "toggle_scope", "Locals/globals", show=False),
    ]

    #: No horizontal scroll bar: a line wider than the pane is cut at its edge (the core
    #: elides long reprs; ``z`` widens the column, ``p NAME`` prints the whole value). With
    #: one, the pane's height (``auto``) and its two scroll bars took Textual one more
    #: layout to settle after a stop into or out of a frame with a wide value: the pane's
    #: text moved by two columns and back in frames drawn after the stop's (~25 ms later).
    DEFAULT_CSS = """
    VariablesPane { height: auto; max-height: 100%; background: $surface; padding: 0;
                    overflow-x: hidden; }
    """

    @dataclass
    class ScopeChanged(Message):
        """The person asked for ``scope`` (``"locals"`` / ``"globals"``)."""

        scope: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Text("variables"), id=id)  # not markup: see FileTree's root
        self.show_root = False
        self.guide_depth = 2
        self.scope = "locals"
        self.changed: set[str] = set()
        self.shown: dict[str, str] = {}
        self._previous: dict[tuple[str, str, str], dict[str, str]] = {}
        self._key: tuple[str, str, str] | None = None  # the frame and scope shown

    def show_inspection(self, inspection: Any) -> None:
        """Show ``inspection``'s variables (an ``Inspection``; None: nothing to show).

        A stop that keeps the same variables (names and nesting: the next line of the same
        function) relabels the nodes in place: only the changed rows are drawn again, the
        tree keeps its size, scroll position and expanded nodes. Any other stop rebuilds it.
        """
        self.changed = set()
        self.shown = {}
        if inspection is None:
            self._set_title("variables")
            self._show([_Row(Text("(b sets a breakpoint, c runs to it)",
                                  style="dim"))])
            return
        frame = inspection.frame
        self.scope = inspection.scope
        where = f"{frame.function}" if frame else "?"
        self._set_title(f"{inspection.scope} · {where}")
        key = (frame.path, frame.function, inspection.scope) if frame else ("", "", "")
        before = self._previous.get(key, {})
        now = {v.name: v.repr for v in inspection.variables}
        self.changed = {n for n, r in now.items() if n in before and before[n] != r} | (
            set(now) - set(before) if before else set())
        self._previous[key] = now
        self.shown = now
        same_frame, self._key = key == self._key, key
        rows = [_row(var, var.name in self.changed) for var in inspection.variables]
        if not inspection.variables:
            rows.append(_Row(Text(f"(no {inspection.scope})", style="dim")))
        if inspection.truncated:
            rows.append(_Row(Text("… more values not fetched", style="dim")))
        self._show(rows, keep_expanded=same_frame)

    def _set_title(self, title: str) -> None:
        """Set the border title; setting it redraws the whole pane, even to the same text."""
        if self.border_title != title:
            self.border_title = title

    def _show(self, rows: list[_Row], keep_expanded: bool = False) -> None:
        """Put ``rows`` under the root: relabelled in place when the shape is the same and no
        line gets wider than the widest shown (the tree's width stays right), else rebuilt;
        rebuilt with ``keep_expanded`` (a stop in the same frame: a new local appeared), the
        nodes expanded before (by their names' path) are expanded again."""
        nodes, new = list(_walk(self.root.children)), list(_walk(rows))
        if _shape(rows) == _shape(self.root.children) and \
                self._widest(new) <= self._widest(nodes):
            for (_depth, node), (_, row) in zip(nodes, new, strict=True):
                node.data = row.data
                if node.label != row.label:
                    self._relabel(node, row.label)
            return
        expanded = _expanded_paths(self.root) if keep_expanded else set()
        self.clear()
        for row in rows:
            self._add(self.root, row, (), expanded)

    def _relabel(self, node: TreeNode[Any], label: Text) -> None:
        """``TreeNode.set_label`` (Textual 8.2.8's, pinned in tests/test_tui_stop_redraw.py),
        the node's rows refreshed now instead of through ``call_later``: a message on the
        tree's queue and a turn of the event loop for each changed variable, at every
        step."""
        node._updates += 1
        node._label = self.process_label(label)
        self._refresh_node(node)

    def _widest(self, items: list[tuple[int, Any]]) -> int:
        """The widest line (cells) of rows or nodes given with their depths."""
        return max((depth * self.guide_depth + item.label.cell_len for depth, item in items),
                   default=0)

    def _add(self, parent: TreeNode[Any], row: _Row, prefix: tuple[str, ...] = (),
             expanded: set[tuple[str, ...]] | frozenset = frozenset()) -> None:
        if row.children:
            path = (*prefix, _name(row))
            node = parent.add(row.label, data=row.data, expand=path in expanded)
            for child in row.children:
                self._add(node, child, path, expanded)
        else:
            parent.add_leaf(row.label, data=row.data)

    def _refresh_line(self, line: int) -> None:
        """Tree's: draw ``line`` again (a relabelled node, the cursor or the mouse moved),
        keeping the component styles already computed. Textual drops them at every
        refresh, and the tree asks for four a frame (~0.1 ms each: a walk of the
        ancestors' styles) that a new label does not change; a change of styles (a
        pseudo-class, a class, the theme, an inline style) drops them as before."""
        kept = dict(self._rich_style_cache)
        super()._refresh_line(line)
        self._rich_style_cache.update(kept)

    def action_toggle_scope(self) -> None:
        self.post_message(self.ScopeChanged("globals" if self.scope == "locals" else "locals"))
