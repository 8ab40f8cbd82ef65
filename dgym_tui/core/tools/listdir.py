"""listdir: show the tree of a folder of the working copy."""

from __future__ import annotations

from typing import Any, ClassVar

from dgym_tui.core.tools.base import EXAMPLE_FOLDER, Tool, ToolOutput, register

#: Most entries one listdir shows; the rest are counted in a closing note.
MAX_ENTRIES = 400


@register
class ListdirTool(Tool):
    """Lists a folder as an indented tree; folders end with "/"."""

    name = "listdir"
    instructions = (
        "List the files and folders of a folder of the repository as a tree. Folders end "
        "with '/'. `path` is relative to the repository root (default '.'); `depth` is how "
        "many levels to show (default 1, at most 5).")
    parameters: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {
            "path": {"type": "string",
                     "description": f"Folder relative to the repository root, e.g. '{EXAMPLE_FOLDER}'. "
                                    "Default: '.'"},
            "depth": {"type": "integer", "minimum": 1, "maximum": 5,
                      "description": "Levels of the tree to show (1 = only the folder's "
                                     "own entries). Default: 1"},
        },
        "additionalProperties": False,
    }

    def run(self, path: str = ".", depth: int = 1, **_: Any) -> ToolOutput:
        ws = self.env.workspace
        top = ws.canonical(path, must_exist=True)
        rows: list[str] = []
        hidden = 0

        def visit(folder: str, level: int) -> None:
            nonlocal hidden
            for child, is_dir in ws.children(folder):
                if len(rows) >= MAX_ENTRIES:
                    hidden += 1
                    continue
                name = child.rsplit("/", 1)[-1]
                rows.append("  " * level + name + ("/" if is_dir else ""))
                if is_dir and level < int(depth):
                    visit(child, level + 1)

        visit(top, 1)
        lines = [("." if top == "." else top) + "/", *rows]
        if not rows:
            lines.append("  (empty)")
        if hidden:
            lines.append(f"... {hidden} more entries not shown; list a subfolder or use a "
                         "smaller depth")
        return ToolOutput("\n".join(lines), data={"path": top})
