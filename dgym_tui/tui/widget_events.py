"""What the source view, console, file tree and debug panes ask the app to do."""

from __future__ import annotations

from textual import on, work
from textual.message_pump import MessagePump

from dgym_tui.tui.actions import console_action, pdb_call
from dgym_tui.tui.messages import Inspected
from dgym_tui.tui.screens.modals import PromptScreen
from dgym_tui.tui.widgets.breakpoints import BreakpointsPane
from dgym_tui.tui.widgets.console import PdbConsole
from dgym_tui.tui.widgets.file_tree import FileTree
from dgym_tui.tui.widgets.source_view import SourceView
from dgym_tui.tui.widgets.stack import StackPane
from dgym_tui.tui.widgets.variables import VariablesPane


class WidgetEvents(MessagePump):
    """Mixin of :class:`~dgym_tui.tui.app.DgymApp`: handles the widgets' messages (pdb keys,
    breakpoints, console lines, file choice, frame / scope choice) as pdb calls or views.
    """

    @on(SourceView.PdbCommand)
    @on(BreakpointsPane.Command)
    def _pdb_command(self, message: SourceView.PdbCommand | BreakpointsPane.Command) -> None:
        if self.replay is None:
            self.act(pdb_call(message.command))
        else:  # a pane's key (the source view's pdb keys are off in replay)
            self.notify("replay: fork (f) to act", severity="warning")

    @on(SourceView.BreakpointToggle)
    def _toggle_breakpoint(self, message: SourceView.BreakpointToggle) -> None:
        if self.replay is not None:
            return
        verb = "cl" if message.present else "b"
        self.act(pdb_call(f"{verb} {message.path}:{message.line}"))

    @on(SourceView.SearchPrompt)
    def _search_prompt(self) -> None:
        console_input = self.pdb_console.input
        console_input.value = "/"
        console_input.cursor_position = 1
        console_input.focus()

    @on(SourceView.GotoFrame)
    def _goto_frame(self) -> None:
        result = self._last_result
        frame = self._inspection.frame if self._inspection is not None else None
        if result is not None and result.frame is not None and not self._frame_stale:
            self._open(result.frame[0], result.frame[1])
        elif frame is not None and frame.relative is None:
            self.notify(f"frame outside the repository: {frame.path}:{frame.line}")
        else:
            self.notify("pdb is not stopped in a frame", severity="warning")

    def _navigate(self, text: str) -> bool:
        """Console lines that move the view, not pdb: ``:N`` (go to line N), ``/text``
        (search). Returns True when ``text`` was one of them."""
        view = self.source_view
        if text.startswith("/") and len(text) > 1:
            if view.search(text[1:]) is None:
                self.notify(f"not found: {text[1:]}", severity="warning")
            else:
                view.focus()
            return True
        number = text[1:].strip() if text.startswith(":") else ""
        if number.isdigit():
            view.go_to(int(number))
            view.focus()
            return True
        return False

    @on(PdbConsole.Submitted)
    def _console_line(self, message: PdbConsole.Submitted) -> None:
        if self._navigate(message.text):
            return
        text = message.text[1:].strip() if message.text.startswith(":") else message.text
        if not text:
            return
        if self.replay is not None:
            self.notify("replay: fork (f) to act", severity="warning")
            return
        if self.busy and not self._session_closed:  # typed ahead: runs after this step
            self._typed_ahead.append(message.text)
            self.pdb_console.write(f"  {text}  (waits for the step that runs)", style="dim")
            return
        self._run_console_line(text)

    def _run_typed_ahead(self) -> bool:
        """Run the first console line typed while a step ran, if any (True: one started)."""
        while self._typed_ahead:
            line = self._typed_ahead.popleft()
            text = line[1:].strip() if line.startswith(":") else line
            if self._run_console_line(text):
                return True
        return False

    def _run_console_line(self, text: str) -> bool:
        """Parse a console line into an action and run it (False: not run)."""
        specs = self.session.tool_specs() if self.session is not None else {}
        try:
            action = console_action(text, list(specs), specs)
        except ValueError as exc:
            self.pdb_console.write(f"error: {exc}", style="bold red")
            return False
        return self.act(action)

    @on(SourceView.EditCode)
    def _edit_code_key(self, message: SourceView.EditCode) -> None:
        self.edit_code(message.path, message.start, message.end)

    @on(FileTree.FileChosen)
    def _file_chosen(self, message: FileTree.FileChosen) -> None:
        self._open(message.path, 1)

    @on(StackPane.FrameChosen)
    def _frame_chosen(self, message: StackPane.FrameChosen) -> None:
        """Move pdb to the chosen frame (``u N`` / ``d N``, recorded like any command)."""
        if self.replay is not None or message.index == message.current:
            return
        delta = message.current - message.index
        self.act(pdb_call(f"u {delta}" if delta > 0 else f"d {-delta}"))

    @on(VariablesPane.ScopeChanged)
    def _scope_changed(self, message: VariablesPane.ScopeChanged) -> None:
        if self.replay is None and self.started and not self.busy:
            self._inspect(message.scope)

    @work(thread=True, group="inspect", exclusive=True, exit_on_error=False)
    def _inspect(self, scope: str) -> None:
        session = self.session
        if session is not None and not self._session_closed:
            self.post_message(Inspected(session.inspect(scope=scope)))

    @on(Inspected)
    def _inspected(self, message: Inspected) -> None:
        if message.inspection is not None and self.replay is None:
            self._inspection = message.inspection
            self._show_debug(message.inspection, self._last_result)

    @on(BreakpointsPane.EditCondition)
    def _edit_condition(self, message: BreakpointsPane.EditCondition) -> None:
        row = message.row

        def done(condition: str | None) -> None:
            if condition is not None:
                self.act(pdb_call(f"condition {row.number} {condition}".rstrip()))

        self.push_screen(PromptScreen(f"Condition of the breakpoint at {row.path}:{row.line} "
                                      "(empty: none)", "e.g. x > 3", row.condition or ""), done)
