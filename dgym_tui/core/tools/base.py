"""Tool base class and the tool registry.

A tool is one class: a ``name``, ``instructions`` (joined into the agent's
prompt and used as the function description), a JSON-schema ``parameters``
object, and ``run``. Registering it (``@register``) makes it available to
``RepoEnv(tools=[...])`` and to every agent's tool list (look-up:
:func:`dgym_tui.core.tools.all_tools`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from dgym_tui.core.env import RepoEnv


#: The file, line and folder the descriptions' examples name. An LLM agent replaces them
#: with the task's real ones (see :mod:`dgym_tui.policies.tool_examples`): write them
#: only through these constants, quoted ('src/app.py', 'src/app.py:12', 'src').
EXAMPLE_FILE = "src/app.py"
EXAMPLE_LINE = 12
EXAMPLE_FOLDER = "src"

#: JSON-schema property of a ``path`` argument that names one file of the repository.
FILE_PATH_PARAM: dict[str, Any] = {
    "type": "string", "description": f"File relative to the repository root, e.g. '{EXAMPLE_FILE}'"}


class ToolError(Exception):
    """The action cannot be carried out; the message becomes the observation."""


@dataclass
class ToolOutput:
    """What ``Tool.run`` returns: the observation plus optional machine fields.

    Attributes:
        observation: text the agent reads.
        done: the episode ends after this step (``submit``).
        data: machine-readable fields (JSON-ready), carried into ``StepResult.data``;
            each tool's keys are listed in docs/internals.md.
    """

    observation: str
    done: bool = False
    data: dict[str, Any] = field(default_factory=dict)


class Tool:
    """Base class of every tool. Subclasses set the class attributes and ``run``.

    One instance exists per environment; it may keep state between steps
    (the pdb tool keeps its session). Hooks let it react to the episode.
    """

    name: ClassVar[str] = ""
    instructions: ClassVar[str] = ""
    parameters: ClassVar[dict[str, Any]] = {"type": "object", "properties": {},
                                            "additionalProperties": False}
    #: Settings a run or an agent spec may change (``tool_options: {NAME: {key: value}}``)
    #: with their defaults; the tool reads them from ``self.options``.
    settings: ClassVar[dict[str, Any]] = {}
    #: The MCP server the tool comes from (``mcp_servers:``); "" for this package's tools
    #: and plugins. An agent is offered every tool of its run's MCP servers.
    server: ClassVar[str] = ""

    def __init__(self, env: RepoEnv, **options: Any) -> None:
        """Args:
            env: the environment the tool acts on.
            **options: values for keys of ``settings``.

        Raises:
            ValueError: an option the tool does not have (the message lists its settings).
        """
        unknown = sorted(set(options) - set(self.settings))
        if unknown:
            known = ", ".join(sorted(self.settings)) or "none"
            raise ValueError(f"tool {self.name!r} has no option {', '.join(unknown)}; "
                             f"its options: {known}")
        self.env = env
        self.options: dict[str, Any] = {**self.settings, **options}

    def run(self, *args: Any, **arguments: Any) -> ToolOutput:
        """Carry out the action. Raise ToolError for a refusal the agent should read."""
        raise NotImplementedError

    def on_reset(self) -> None:
        """Called after the environment (re)started an episode."""

    def on_ready(self) -> None:
        """Called when ``reset`` has run the first eval: start what the tool's first step
        will need (the pdb tool: a preloaded spare of its command). Must not block."""

    def close(self) -> None:
        """Release processes and files. Called by ``RepoEnv.close``."""

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """Return the OpenAI function-calling schema:
        ``{"type": "function", "function": {"name", "description", "parameters"}}``."""
        return {"type": "function",
                "function": {"name": cls.name, "description": cls.instructions,
                             "parameters": cls.parameters}}


#: every registered tool class by name (built-in ones register when
#: :mod:`dgym_tui.core.tools` is imported; read it through ``all_tools``).
REGISTRY: dict[str, type[Tool]] = {}


def register(cls: type[Tool]) -> type[Tool]:
    """Class decorator: add a Tool subclass to the registry under ``cls.name``.

    Raises:
        ValueError: the class has no name or the name is already taken by
            another class.
    """
    if not cls.name:
        raise ValueError(f"{cls.__qualname__} has no name")
    if REGISTRY.get(cls.name, cls) is not cls:
        raise ValueError(f"tool name {cls.name!r} is already registered")
    REGISTRY[cls.name] = cls
    return cls
