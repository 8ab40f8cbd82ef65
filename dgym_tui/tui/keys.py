"""The episode screens' keys, written once (:data:`KEYS`), and keys that leave the footer
while an agent drives, yet keep working.

Each :class:`KeySpec` gives an action's keys, footer label, help text, the screen that
has it and the conditions it needs; the screens build their bindings, help and command
palette entries from the table.

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
import json
from collections.abc import Iterable
from typing import Any, ClassVar

from textual.actions import parse as parse_action
from textual.binding import Binding, BindingType
from textual.keys import format_key

from dgym_tui.core.types import example_arguments


def tool_syntax(name: str, parameters: dict[str, Any]) -> str:
    """Console syntax of a tool call, optional arguments in brackets, e.g.
    ``view path=<path> [start=1] [end=1]``."""
    required = parameters.get("required") or []
    parts = [name]
    for key, value in example_arguments(parameters, optional=True).items():
        shown = f"{key}={value if isinstance(value, str) else json.dumps(value)}"
        parts.append(shown if key in required else f"[{shown}]")
    return " ".join(parts)


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


class BindingsWhereFocused:
    """Mixin for a focusable Widget (put it before the widget class): a key that has a
    binding runs it from this widget, without going up through its ancestors first.

    Textual hands a key to the focused widget, which passes it to its parent, and so on
    up to the app, one message queue and one turn of the event loop each; only the app
    then looks for the key's binding, in the same chain from the focused widget up. The
    source view's ``n`` went through three containers and the screen before its action
    (~0.3-0.5 ms of the app's thread, headless). Here the focused widget asks the app
    for that lookup (the same method, the same chain, priority bindings already done) once
    its own key handlers ran, and a key so handled goes no further; a key without a
    binding goes up as before.
    """

    async def _on_key(self, event: Any) -> None:
        await super()._on_key(event)  # type: ignore[misc]
        if not event._stop_propagation and await self.app._check_bindings(  # type: ignore[attr-defined]
                event.key):
            event.stop()
            event.prevent_default()


@dataclasses.dataclass(frozen=True)
class KeySpec:
    """One key action of the episode screens: ``keys`` (``"R,shift+r"``: the first shown),
    the Textual ``action``, the footer's ``label``, the help's text, ``where`` it works
    (``"live"``, ``"replay"``, ``"both"``), the conditions of the screen's ``key_state()``
    it needs (``when``); ``show`` / ``priority`` as Textual's; ``quiet``: leaves the footer
    while an agent drives (:class:`QuietKeys`); ``agent``: in the help only with an agent."""

    keys: str
    action: str
    label: str
    help: str
    where: str = "both"
    when: tuple[str, ...] = ()
    show: bool = True
    priority: bool = False
    quiet: bool = False
    agent: bool = False

    @property
    def name(self) -> str:
        """The action's name without arguments."""
        return action_name(self.action)

    def bindings(self) -> list[Binding]:
        """The Textual bindings: one per key, only the first shown."""
        return [Binding(key, self.action, self.label, show=self.show and i == 0,
                        priority=self.priority)
                for i, key in enumerate(self.keys.split(","))]

    @property
    def key_label(self) -> str:
        """The keys as the help shows them, e.g. ``"R / shift+r"``."""
        return " / ".join(format_key(k) for k in self.keys.split(","))


_RUNNING = ("running",)
#: Every key action of the episode screens (the source view and the panes have their own).
#: Decision keys clash with no pdb key of the source view (n s c r u d b), so pdb keeps
#: working while a proposal waits; session keys are off while typing or in a dialog.
KEYS: tuple[KeySpec, ...] = (
    KeySpec("q", "quit_app", "Quit",
            "quit: finish the episode, close the environment, keep the trajectory"),
    KeySpec("question_mark", "help", "Keys", "show this key help"),
    KeySpec("a", "approve", "Approve", "approve the agent's proposed action", "live",
            ("running", "pending"), priority=True, agent=True),
    KeySpec("e", "edit", "Edit", "edit the proposed action's arguments, then run it", "live",
            ("running", "pending"), priority=True, agent=True),
    KeySpec("R,shift+r", "reject", "Reject", "reject the proposal with a note for the agent",
            "live", ("running", "pending"), priority=True, agent=True),
    KeySpec("t", "take_over", "Take over", "take over: switch to human mode", "live",
            ("running", "agent", "not_human"), priority=True, agent=True),
    KeySpec("g", "go", "Go (auto)", "go: let the agent run on its own (auto mode)", "live",
            ("running", "agent", "not_auto"), priority=True, agent=True),
    KeySpec("space", "pause", "Pause", "auto mode: pause after the current step (back to "
            "approve)", "live", ("running", "auto"), priority=True, agent=True),
    KeySpec("m", "ask_agent", "Ask agent", "approve mode: ask the agent for a proposal "
            "(again, after an error)", "live", ("running", "agent", "not_auto"), quiet=True,
            agent=True),
    KeySpec("m", "no_agent", "Ask agent", "ask the agent (needs --agent NAME --llm NAME)",
            "live", ("no_agent",), show=False, agent=True),
    KeySpec("x", "run_eval", "Eval", "run the entrypoint (eval)", "live", _RUNNING, quiet=True),
    KeySpec("p", "show_diff", "Diff", "show the diff of the working copy", quiet=True),
    KeySpec("w", "apply_patch", "Apply patch",
            "apply the patch to the original repository (asks first)", "live", ("can_apply",),
            quiet=True),
    KeySpec("colon", "focus_console(':')", "Console",
            "console, starting with ':' (:41 goes to line 41; :p x is p x)", show=False),
    KeySpec("i", "focus_console('')", "Console", "focus the pdb console", show=False),
    KeySpec("z", "zoom", "Zoom", "zoom the focused pane to the whole screen (z again: back)",
            show=False),
    KeySpec("left_square_bracket", "toggle_pane('tree')", "Files",
            "show / hide the file tree (hidden below 100 columns)", show=False),
    KeySpec("right_square_bracket", "toggle_pane('side')", "Side",
            "show / hide the side column: Debug, Transcript, Diff (hidden below 100 columns)",
            show=False),
    KeySpec("o,escape", "focus_source", "Source",
            "focus the source view (escape leaves the console)", show=False),
    KeySpec("h", "replay_step(-1)", "Back", "replay: one step back", "replay"),
    KeySpec("l", "replay_step(1)", "Forward", "replay: one step forward", "replay"),
    KeySpec("0", "replay_goto(0)", "First", "replay: first step", "replay", show=False),
    KeySpec("dollar_sign", "replay_goto(-1)", "Last", "replay: last step", "replay",
            show=False),
    KeySpec("f", "fork", "Fork here",
            "replay: fork here (re-execute up to this step, then continue live)", "replay"),
    KeySpec("f", "branch", "Branch here",
            "branch the live episode here (its own working copy, pdb at the same frame, "
            "nothing re-executed) and go on in the branch; the parent's trajectory ends as "
            "'forked'", "live", ("started", "running"), show=False),
)


def keys_of(where: str) -> tuple[KeySpec, ...]:
    """The key actions of the ``"live"`` or ``"replay"`` screen."""
    return tuple(spec for spec in KEYS if spec.where in (where, "both"))


def bindings_of(specs: Iterable[KeySpec]) -> list[BindingType]:
    """A screen's ``BINDINGS`` for ``specs``, with the quiet ones' hidden twins."""
    specs = list(specs)
    bindings = [binding for spec in specs for binding in spec.bindings()]
    return with_quiet_twins(bindings, {spec.name for spec in specs if spec.quiet})
