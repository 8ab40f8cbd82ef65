"""Modal dialogs: edit an action, edit source lines, reject with a note, confirm, quit with
an unapplied fix, key help."""

from __future__ import annotations

import json
from typing import Any, ClassVar, TypeVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from dgym_tui.core.safetext import one_line, strip_controls
from dgym_tui.core.types import ToolCall

ResultType = TypeVar("ResultType")


def parse_action_json(text: str, call_id: str | None = None) -> ToolCall:
    """Parse the edit dialog's JSON into a ToolCall.

    Args:
        text: ``{"name": str, "arguments": {...}}``.
        call_id: id to keep (the proposal's), or None for a new one.

    Raises:
        ValueError: not JSON, not an object, no ``name`` string, or
            ``arguments`` not an object. The message says what to fix.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (line {exc.lineno}, column {exc.colno}): "
                         f"{exc.msg}") from None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ValueError('write an object like {"name": "pdb", "arguments": {...}}')  # noqa: TRY004
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        raise ValueError('"arguments" must be a JSON object')  # noqa: TRY004
    return ToolCall(name=data["name"], arguments=arguments, id=call_id or data.get("id") or
                    ToolCall(name="x").id)


class Dialog(ModalScreen[ResultType]):
    """A box in the middle of the screen, the look every dialog here shares. Its keys and
    buttons run screen actions; ``answer(value)`` dismisses with ``value`` (none: None)."""

    DEFAULT_CSS = """
    Dialog { align: center middle; }
    Dialog > Vertical { width: 90; max-width: 100%; height: auto; max-height: 90%;
                        border: thick $accent; background: $surface; padding: 1 2; }
    Dialog .modal-title { text-style: bold; margin-bottom: 1; }
    Dialog .modal-error { color: $error; height: auto; }
    Dialog Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    Dialog Button { margin-left: 2; }
    """

    def action_answer(self, value: Any = None) -> None:
        self.dismiss(value)


class EditActionScreen(Dialog[ToolCall | None]):
    """Edit a proposed action as JSON; dismisses with the edited ToolCall or None."""

    DEFAULT_CSS = """
    EditActionScreen TextArea { height: 16; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "answer", "Cancel"),
                                             Binding("ctrl+s", "save", "Run edited")]

    def __init__(self, action: ToolCall) -> None:
        super().__init__()
        self.action = action

    def compose(self) -> ComposeResult:
        from textual.widgets import TextArea  # the editors load with their dialog (~10 ms)

        text = json.dumps({"name": self.action.name, "arguments": self.action.arguments},
                          indent=2, ensure_ascii=False)
        with Vertical():
            yield Static("Edit the action (JSON) — ctrl+s runs it, escape cancels",
                         classes="modal-title")
            yield TextArea(text, id="edit-json", soft_wrap=True, tab_behavior="indent")
            yield Static("", classes="modal-error", id="edit-error")
            with Horizontal():
                yield Button("Cancel", action="screen.answer")
                yield Button("Run edited", action="screen.save", variant="primary")

    def action_save(self) -> None:
        from textual.widgets import TextArea  # loaded with the dialog

        try:
            call = parse_action_json(self.query_one("#edit-json", TextArea).text, self.action.id)
        except ValueError as exc:
            self.query_one("#edit-error", Static).update(Text(str(exc)))
            return
        self.dismiss(call)


class CodeEditScreen(Dialog[str | None]):
    """Edit lines ``start``..``end`` of a file; dismisses with the new code or None.

    Ctrl+S returns the edited text (the caller turns it into one ``rewrite``
    tool call); Escape cancels. Tab indents inside the editor; the gutter shows
    the file's own line numbers (from ``start``) and enter auto-indents.

    Args:
        path: relative path of the file (title and lexer).
        start: first line (1-based) of the selection.
        end: last line (inclusive).
        text: the current text of those lines.
    """

    DEFAULT_CSS = """
    CodeEditScreen > Vertical { width: 100; }
    CodeEditScreen CodeArea { height: auto; min-height: 5; max-height: 24; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "answer", "Cancel", priority=True),
        Binding("ctrl+s", "save", "Rewrite", priority=True)]

    def __init__(self, path: str, start: int, end: int, text: str) -> None:
        super().__init__()
        self.path = path
        self.start = start
        self.end = end
        self.text = text

    def compose(self) -> ComposeResult:
        from dgym_tui.tui.widgets.code_area import CodeArea

        lines = f"line {self.start}" if self.start == self.end else \
            f"lines {self.start}-{self.end}"
        with Vertical():
            yield Static(Text(f"Edit {one_line(self.path)}, {lines} — ctrl+s rewrites, escape cancels"),
                         classes="modal-title")
            yield CodeArea(self.text, path=self.path, id="code-edit",
                           line_number_start=self.start)
            with Horizontal():
                yield Button("Cancel", action="screen.answer")
                yield Button("Rewrite", action="screen.save", variant="primary")

    def action_save(self) -> None:
        from textual.widgets import TextArea  # loaded with the dialog

        self.dismiss(self.query_one("#code-edit", TextArea).text)


class PromptScreen(Dialog[str | None]):
    """Ask for one line of text; dismisses with it (stripped) or None (escape).

    Args:
        title: the question.
        placeholder: the empty field's hint.
        value: the text to start with.
    """

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "answer", "Cancel")]

    def __init__(self, title: str, placeholder: str = "", value: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(self.title_text), classes="modal-title")
            yield Input(self.value, placeholder=self.placeholder, id="prompt-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value.strip())


class RejectScreen(PromptScreen):
    """Ask for a rejection note; dismisses with the note or None (cancelled)."""

    def __init__(self) -> None:
        super().__init__("Reject the proposal — the note goes back to the agent",
                         "why? what should the agent do instead?")


class ConfirmScreen(Dialog[bool]):
    """A yes / no question; dismisses with True (y) or False (n / escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "answer(True)", "Yes"),
                                             Binding("n,escape", "answer(False)", "No")]

    def __init__(self, question: str, detail: str = "") -> None:
        super().__init__()
        self.question = question
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(strip_controls(self.question)), classes="modal-title")
            if self.detail:
                with VerticalScroll(id="confirm-detail"):
                    yield Static(Text(strip_controls(self.detail)))
            with Horizontal():
                yield Button("No (n)", action="screen.answer(False)")
                yield Button("Yes (y)", action="screen.answer(True)", variant="warning")


class QuitScreen(Dialog[str | None]):
    """Quit with a resolved fix not yet applied to the original repository?

    Dismisses with ``"apply"`` (w: apply, then quit), ``"quit"`` (q: quit anyway;
    the fix stays in the trajectory) or None (escape / c: stay).

    Args:
        source: the original repository's path (shown in the question).
        files: the changed files' relative paths.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("w", "answer('apply')", "Apply, then quit"),
        Binding("q", "answer('quit')", "Quit anyway"),
        Binding("escape,c", "answer(None)", "Cancel")]

    def __init__(self, source: str, files: list[str]) -> None:
        super().__init__()
        self.source = source
        self.files = files

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("The tests pass, but the fix is not applied to "
                              f"{one_line(self.source)}. Quit?"), classes="modal-title")
            yield Static(Text("changed: " + ", ".join(map(one_line, self.files))))
            with Horizontal():
                yield Button("Cancel (c)", action="screen.answer(None)")
                yield Button("Quit anyway (q)", action="screen.answer('quit')", variant="warning")
                yield Button("Apply, then quit (w)", action="screen.answer('apply')",
                             variant="primary")


class HelpScreen(Dialog[None]):
    """Lists every key binding of the app and the source view."""

    DEFAULT_CSS = """
    HelpScreen VerticalScroll { height: auto; max-height: 70vh; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "answer", "Close")]

    def __init__(self, sections: list[tuple[str, list[tuple[str, str]]]]) -> None:
        super().__init__()
        self.sections = sections

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, pad_edge=False)
        table.add_column("key", style="bold", no_wrap=True)
        table.add_column("action")
        for title, rows in self.sections:
            table.add_row(Text(title, style="underline"), "")
            for key, description in rows:
                table.add_row(key, description)
        with Vertical():
            yield Static("Keys — escape closes", classes="modal-title")
            with VerticalScroll():
                yield Static(table)

