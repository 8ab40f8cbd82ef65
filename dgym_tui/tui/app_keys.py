"""The app's keys: which work when, the help screen and the command palette."""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import partial
from typing import Any, ClassVar

from textual.app import SystemCommand
from textual.binding import Binding
from textual.keys import format_key
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.widgets import Input

from dgym_tui.core.types import example_arguments
from dgym_tui.tui.keys import QuietKeys, action_name
from dgym_tui.tui.screens.modals import HelpScreen


def tool_syntax(name: str, parameters: dict[str, Any]) -> str:
    """Console syntax of a tool call, optional arguments in brackets, e.g.
    ``view path=<path> [start=1] [end=1]``."""
    required = parameters.get("required") or []
    parts = [name]
    for key, value in example_arguments(parameters, optional=True).items():
        shown = f"{key}={value if isinstance(value, str) else json.dumps(value)}"
        parts.append(shown if key in required else f"[{shown}]")
    return " ".join(parts)


class AppKeys(QuietKeys, MessagePump):
    """Mixin of :class:`~dgym_tui.tui.app.DgymApp`: its keys (``KEYS``), when each works
    (:meth:`action_available`), the help screen (``?``) and the command palette's commands.
    """

    #: Keys that leave the footer while an agent drives (approve / auto); they still work.
    QUIET: ClassVar[frozenset[str]] = frozenset({"ask_agent", "run_eval", "show_diff",
                                                 "apply_patch"})

    #: The app's keys (help and command palette); BINDINGS adds their hidden twins.
    KEYS: ClassVar[list[Binding]] = [
        Binding("q", "quit_app", "Quit"),
        Binding("ctrl+c", "quit_app", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Keys"),
        # Decision keys clash with no pdb key of the source view (n s c r u d b), so
        # pdb keeps working while a proposal waits; check_action disables them while
        # typing or in a dialog.
        Binding("a", "approve", "Approve", priority=True),
        Binding("e", "edit", "Edit", priority=True),
        Binding("R", "reject", "Reject", priority=True),
        Binding("shift+r", "reject", "Reject", show=False, priority=True),
        Binding("t", "take_over", "Take over", priority=True),
        Binding("g", "go", "Go (auto)", priority=True),
        Binding("space", "pause", "Pause", priority=True),
        Binding("m", "ask_agent", "Ask agent"),
        Binding("m", "no_agent", "Ask agent", show=False),
        Binding("x", "run_eval", "Eval"),
        Binding("p", "show_diff", "Diff"),
        Binding("w", "apply_patch", "Apply patch"),
        Binding("colon", "focus_console(':')", "Console", show=False),
        Binding("i", "focus_console('')", "Console", show=False),
        Binding("z", "zoom", "Zoom", show=False),
        Binding("left_square_bracket", "toggle_pane('tree')", "Files", show=False),
        Binding("right_square_bracket", "toggle_pane('side')", "Side", show=False),
        Binding("o", "focus_source", "Source", show=False),
        Binding("escape", "focus_source", "Source", show=False),
        Binding("h", "replay_step(-1)", "Back"),
        Binding("l", "replay_step(1)", "Forward"),
        Binding("0", "replay_goto(0)", "First", show=False),
        Binding("dollar_sign", "replay_goto(-1)", "Last", show=False),
        Binding("f", "fork", "Fork here"),
        Binding("f", "branch", "Branch here", show=False),
    ]

    #: Descriptions for the help screen and the command palette, per action.
    ACTION_HELP: ClassVar[dict[str, str]] = {
        "quit_app": "quit: finish the episode, close the environment, keep the trajectory",
        "help": "show this key help",
        "approve": "approve the agent's proposed action",
        "edit": "edit the proposed action's arguments, then run it",
        "reject": "reject the proposal with a note for the agent",
        "take_over": "take over: switch to human mode",
        "go": "go: let the agent run on its own (auto mode)",
        "pause": "auto mode: pause after the current step (back to approve)",
        "ask_agent": "approve mode: ask the agent for a proposal (again, after an error)",
        "no_agent": "ask the agent (needs --agent NAME --llm NAME)",
        "run_eval": "run the entrypoint (eval)",
        "show_diff": "show the diff of the working copy",
        "apply_patch": "apply the patch to the original repository (asks first)",
        "focus_console(':')": "console, starting with ':' (:41 goes to line 41; :p x is p x)",
        "focus_console('')": "focus the pdb console",
        "zoom": "zoom the focused pane to the whole screen (z again: back)",
        "toggle_pane('tree')": "show / hide the file tree (hidden below 100 columns)",
        "toggle_pane('side')": "show / hide the side column: Debug, Transcript, Diff "
                               "(hidden below 100 columns)",
        "focus_source": "focus the source view (escape leaves the console)",
        "replay_step(-1)": "replay: one step back",
        "replay_step(1)": "replay: one step forward",
        "replay_goto(0)": "replay: first step",
        "replay_goto(-1)": "replay: last step",
        "fork": "replay: fork here (re-execute up to this step, then continue live)",
        "branch": "branch the live episode here (its own working copy, pdb at the same frame, "
                  "nothing re-executed) and go on in the branch; the parent's trajectory "
                  "ends as 'forked'",
        "edit_code": "edit the selected source lines (the cursor line) and rewrite them",
    }

    SOURCE_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("n / s / c / r", "pdb next / step / continue / return"),
        ("u / d", "pdb up / down the stack"),
        ("b or gutter click", "toggle a breakpoint at the cursor line"),
        ("E", "edit the selected lines (else the cursor line); ctrl+s rewrites, esc cancels"),
        ("V, then j / k", "select lines (vim visual-line); V or esc ends the selection"),
        ("up / down / j / k / pgup / pgdn / home / end", "move the cursor"),
        ("G", "last line"),
        (":41", "go to line 41 (the console opens with :)"),
        ("/text, then ; / ,", "search; next / previous match (n stays pdb's next)"),
        (".", "back to the current frame"),
        ("left / right", "scroll long lines")]

    #: The Debug tab's panes and the layout keys (the panes' own bindings, for ``?``).
    DEBUG_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("enter (variables)", "expand / fold a container; changed values are highlighted"),
        ("v (variables)", "locals / globals of the selected frame"),
        ("enter / click (stack)", "select a frame (pdb u N / d N)"),
        ("enter / del / c (breakpoints)", "on / off, remove, condition")]
    LAYOUT_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("z", "zoom the focused pane (source, console scroll-back, side column); z: back"),
        ("[ / ]", "show or hide the file tree / the side column (hidden below 100 columns)"),
        ("Z (transcript)", "expand or fold every long observation")]
    REPLAY_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("h / l", "step back / forward"), ("0 / $", "first / last step"),
        ("f", "fork here: re-execute the steps so far, then go on live"),
        ("Debug tab (click it)", "breakpoints only: variables and stack are not recorded "
                                 "(f forks here to see them live)")]
    APPROVE_KEYS: ClassVar[list[tuple[str, str]]] = [
        ("a / e / R", "approve / edit the arguments / reject with a note"),
        ("t / g / space", "take over / go (auto) / pause an auto run after this step"),
        ("m", "ask the agent (again, after an error)")]

    _REPLAY_ONLY = frozenset({"replay_step", "replay_goto", "fork"})

    _LIVE_ONLY = frozenset({"approve", "edit", "reject", "take_over", "go", "pause",
                            "ask_agent", "no_agent", "run_eval", "apply_patch", "branch"})

    #: Keys that mean nothing once the episode is over.
    _RUNNING_ONLY = frozenset({"approve", "edit", "reject", "take_over", "go", "pause",
                               "ask_agent", "run_eval"})

    def action_available(self, action: str) -> bool:
        """True when the action (name without arguments) makes sense in the current state."""
        if action in self._REPLAY_ONLY:
            return self.replay is not None
        if action == "branch":
            return self.session is not None and self.started and not self.session.done
        if action in self._LIVE_ONLY:
            if self.session is None:
                return False
            pending = self.session.pending is not None and self.session.mode == "approve"
            agent = self.session.policy is not None
            if action in self._RUNNING_ONLY and self.session.done:
                return False
            if action == "no_agent":
                return not agent
            if action in ("approve", "edit", "reject"):
                return pending
            if action == "take_over":
                return agent and self.session.mode != "human"
            if action in ("go", "ask_agent"):
                return agent and self.session.mode != "auto"
            if action == "pause":
                return self.session.mode == "auto"
            if action == "apply_patch":
                return self.can_apply
        return True

    @property
    def keys_quiet(self) -> bool:
        """True while an agent drives (approve / auto) or the episode is over: the footer
        shows the keys that matter then (the others still work and say why)."""
        return self.session is not None and (self.session.mode != "human" or self.session.done)

    def check_key(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Enable only the keys that make sense now (the footer shows those).

        Session keys are off while a dialog is open or a text field has the focus.
        """
        if not self.action_available(action):
            return False
        return not (action in self._LIVE_ONLY and self._typing_or_modal())

    def _typing_or_modal(self) -> bool:
        """True while a dialog is open or a text field has the focus."""
        if len(self.screen_stack) > 1:  # the text areas are in dialogs only
            return True
        return isinstance(self.focused, Input)

    def action_help(self) -> None:
        """Show the keys that work now, the source view's keys and the console's syntax."""
        rows: list[tuple[str, str]] = []
        seen: set[str] = set()
        for b in self.KEYS:
            name = action_name(b.action)
            if b.action in seen or (name in self._REPLAY_ONLY and self.replay is None):
                continue
            if name in self._LIVE_ONLY and (self.session is None or (
                    name in ("ask_agent", "no_agent", "approve", "edit", "reject", "take_over",
                             "go", "pause") and self.session.policy is None)):
                continue
            seen.add(b.action)
            keys = " / ".join(self._key_label(k) for k in self.KEYS if k.action == b.action)
            text = self.ACTION_HELP.get(b.action, b.description)
            if not self.action_available(name):
                text += "  (not now)"
            rows.append((keys, text))
        sections = [("App", rows), ("Source view (focused)", self.SOURCE_KEYS),
                    ("Debug tab (side column)", self.DEBUG_KEYS), ("Layout", self.LAYOUT_KEYS)]
        if self.replay is not None:
            sections.append(("Replay", self.REPLAY_KEYS))
        elif self.session is not None and self.session.policy is not None:
            sections.append(("Agent proposal (approve mode)", self.APPROVE_KEYS))
        if self.replay is None:
            sections.append(("Console (: or i)", self._console_help()))
        self.push_screen(HelpScreen(sections))

    def _console_help(self) -> list[tuple[str, str]]:
        """Rows describing what the console accepts, one per tool of the environment."""
        rows = [("p x / n / b f.py:12", "any other line is one pdb command"),
                ("up / down / tab", "history / accept the grey completion")]
        session = self.session
        specs = session.tool_specs() if session is not None else {}
        summaries = session.tool_summaries() if session is not None else {}
        for name, parameters in specs.items():
            if name == "pdb":
                continue
            line = summaries.get(name, "")
            rows.append((tool_syntax(name, parameters), line if len(line) <= 70 else line[:67] + "..."))
        rows.append(("", "values with spaces go in quotes: grep pattern=\"def main\""))
        rows.append(("", 'several lines: rewrite {"path": "f.py", "start": 3, "end": 3, '
                         '"new_code": "a = 1\\nb = 2"}  (JSON: \\n is a newline), or E'))
        return rows

    @staticmethod
    def _key_label(binding: Binding) -> str:
        return " / ".join(format_key(k) for k in binding.key.split(","))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Built-in commands (themes, quit, ...) plus one per key action available now."""
        yield from super().get_system_commands(screen)
        seen: set[str] = set()
        for binding in self.KEYS:
            if binding.action in seen:
                continue
            seen.add(binding.action)
            if not self.action_available(action_name(binding.action)):
                continue
            help_text = self.ACTION_HELP.get(binding.action, binding.description)
            title = f"{binding.description} [{self._key_label(binding)}]"
            yield SystemCommand(title, help_text, partial(self._palette_action, binding.action))
        if self.session is not None:
            yield SystemCommand("Edit code [E]", self.ACTION_HELP["edit_code"],
                                self.action_edit_code)

    async def _palette_action(self, action: str) -> None:
        """Run a key action chosen in the command palette (the palette is closing, so the
        dialog check of :meth:`check_action` does not apply)."""
        if self.action_available(action_name(action)):
            await self.action_direct(action)
