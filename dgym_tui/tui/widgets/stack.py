"""The stack pane: pdb's frames, innermost first; enter / click selects one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

#: Frames listed at most (the innermost ones; a test runner's stack is deep).
MAX_FRAMES = 40


class StackPane(OptionList):
    """The stack of the stopped pdb. Library frames (outside the repository) are dim.

    Messages:
        StackPane.FrameChosen: the person chose the frame at ``index`` (pdb's stack index).
    """

    DEFAULT_CSS = """
    StackPane { height: 9; background: $surface; border: none; padding: 0; }
    """

    @dataclass
    class FrameChosen(Message):
        """Select pdb's frame ``index`` (and move pdb there with up / down)."""

        index: int
        current: int

    def __init__(self, *, id: str | None = None) -> None:
        # compact: no focus border, so the rows do not move when a click focuses the pane
        # (else that click selected the frame above the one clicked)
        super().__init__(id=id, compact=True)
        self.inspection: Any = None

    def show_inspection(self, inspection: Any) -> None:
        """List ``inspection``'s frames (None: empty)."""
        self.inspection = inspection
        self.clear_options()
        if inspection is None or not inspection.frames:
            self.add_option(Option(Text("(no stack: pdb is not stopped)", style="dim"),
                                   disabled=True))
            return
        frames = list(enumerate(inspection.frames))[::-1][:MAX_FRAMES]
        options = []
        for index, frame in frames:
            here = index == inspection.current
            where = frame.relative or frame.path
            text = Text("▶ " if here else "  ", style="bold")
            text.append(f"{frame.function}", style="bold" if frame.relative else "dim")
            text.append(f"  {where}:{frame.line}", style="" if frame.relative else "dim")
            options.append(Option(text, id=str(index)))
        self.add_options(options)
        self.highlighted = next((i for i, (index, _f) in enumerate(frames)
                                 if index == inspection.current), 0)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if self.inspection is not None and event.option.id is not None:
            self.post_message(self.FrameChosen(int(event.option.id), self.inspection.current))
