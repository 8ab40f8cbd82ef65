"""The working copy's file tree: ignored files hidden, read-only and changed marked."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.message import Message
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from dgym_tui.core.safetext import one_line


class FileTree(Tree[str]):
    """A tree of the visible working-copy files.

    Leaves carry the relative path as ``node.data``; directories carry None.
    Changed files are marked ``M`` (yellow), read-only files ``ro`` (dim).

    Messages:
        FileTree.FileChosen: a file leaf was selected (Enter or click).
    """

    DEFAULT_CSS = """
    FileTree { width: 30; border-right: solid $panel-lighten-2; }
    """

    @dataclass
    class FileChosen(Message):
        """The user picked ``path`` (relative) in the tree."""

        path: str

    def __init__(self, *, id: str | None = None) -> None:
        # a Text, not markup: markup would import rich's emoji table (~2 ms) before the
        # first frame for a root that is never shown
        super().__init__(Text("working copy"), id=id)
        self.show_root = False
        self.guide_depth = 2
        self._files: list[str] = []
        self._leaves: dict[str, TreeNode[str]] = {}
        self._readonly: set[str] = set()
        self._changed: set[str] = set()

    def _label(self, path: str) -> Text:
        """The file's name, marked when it is changed / read-only."""
        text = Text(one_line(path.rsplit("/", 1)[-1]))  # a name, never markup
        if path in self._changed:
            text.append(" M", style="bold yellow")
        if path in self._readonly:
            text.append(" ro", style="dim")
        return text

    def set_files(self, files: list[str], readonly: set[str] | None = None,
                  changed: set[str] | None = None) -> None:
        """Show ``files`` (relative POSIX paths); rebuild only when the set of files changed.

        Args:
            files: visible working-copy files.
            readonly: the read-only subset.
            changed: files that differ from the original repository.
        """
        readonly, changed = set(readonly or ()), set(changed or ())
        touched = (readonly ^ self._readonly) | (changed ^ self._changed)
        self._readonly, self._changed = readonly, changed
        files = sorted(files)
        if files != self._files:
            self._files = files
            self._rebuild()
            return
        for path in touched:  # relabel only the leaves whose marks changed
            node = self._leaves.get(path)
            if node is not None:
                node.set_label(self._label(path))

    def _rebuild(self) -> None:
        self.clear()
        self._leaves.clear()
        dirs: dict[str, TreeNode[str]] = {"": self.root}
        # Directories first, then files, like most editors.
        def sort_key(p: str) -> tuple:
            parts = p.split("/")
            return tuple((0, x) for x in parts[:-1]) + ((1, parts[-1]),)
        for path in sorted(self._files, key=sort_key):
            parts = path.split("/")
            parent = self.root
            for depth in range(1, len(parts)):
                key = "/".join(parts[:depth])
                if key not in dirs:
                    dirs[key] = parent.add(Text(one_line(parts[depth - 1]) + "/"),
                                           expand=depth == 1)
                parent = dirs[key]
            self._leaves[path] = parent.add_leaf(self._label(path), data=path)
        self.root.expand()

    def select_path(self, path: str) -> None:
        """Expand the folders above ``path`` and move the tree's cursor to it."""
        node = self._leaves.get(path)
        if node is None:
            return
        expanded, parent = False, node.parent
        while parent is not None:
            if not parent.is_expanded:  # expand() redraws the whole tree, even when open
                parent.expand()
                expanded = True
            parent = parent.parent
        if not expanded and node.line >= 0 and self.get_node_at_line(node.line) is node:
            self.move_cursor(node)  # lines unchanged: in this frame, not one after it
        else:  # the tree's lines and size change at the next refresh
            self.call_after_refresh(self.move_cursor, node)

    def on_tree_node_selected(self, event: Tree.NodeSelected[str]) -> None:
        event.stop()
        if event.node.data:
            self.post_message(self.FileChosen(event.node.data))
