"""What the turn loop asks of whoever chooses the actions: the Policy protocol.

A policy is an LLM agent (:mod:`dgym_tui.agent`), a person typing at a prompt
(:mod:`dgym_tui.human`) or anything else with ``reset`` and ``propose``. The
turn loop (:mod:`dgym_tui.session`) calls ``reset`` once per episode and
``propose`` once per turn; it never asks how the proposal was made.

This module imports nothing heavy: no LLM library, no UI.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from dgym_tui.core.types import ToolCall

if TYPE_CHECKING:
    from dgym_tui.session import Turn


@dataclass
class Usage:
    """Tokens and money spent on one proposal (or a sum of them).

    Attributes:
        prompt_tokens: tokens sent to the model.
        completion_tokens: tokens the model produced.
        cost: price in US dollars; 0.0 when the model's price is unknown.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens,
                     self.cost + other.cost)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"prompt_tokens": int, "completion_tokens": int, "cost": float}``."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        """Inverse of :meth:`to_dict`; None or missing keys give zeros."""
        data = data or {}
        return cls(int(data.get("prompt_tokens", 0)), int(data.get("completion_tokens", 0)),
                   float(data.get("cost", 0.0)))


@dataclass
class Proposal:
    """A policy's answer for one turn.

    Attributes:
        action: the proposed tool call, or None when the policy produced no
            valid call (then ``error`` says why).
        reasoning: the text the model wrote alongside the call.
        error: why there is no valid action; the session tells it back to the
            agent on the next turn and the episode continues.
        usage: tokens and cost spent producing this proposal.
        raw: the provider's message as a dict, for debugging (may be None).
    """

    action: ToolCall | None
    reasoning: str = ""
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    raw: dict | None = None


@dataclass
class EpisodeInfo:
    """What a policy learns at the start of an episode.

    Attributes:
        task: the problem statement shown to the agent.
        instructions: the tools' instructions joined into one text.
        tool_schemas: OpenAI function schemas of the environment's tools
            (``{"type": "function", "function": {...}}``).
        initial_observation: the observation returned by ``env.reset()``.
    """

    task: str
    instructions: str
    tool_schemas: list[dict]
    initial_observation: str


@runtime_checkable
class Policy(Protocol):
    """Chooses the next action of an episode.

    Attributes:
        name: a short label recorded in trajectories (``"debug_agent"``, ``"human"``).
    """

    name: str

    def reset(self, info: EpisodeInfo) -> None:
        """Start a new episode: remember the task, tool schemas and instructions."""
        ...

    def propose(self, turns: list[Turn]) -> Proposal:
        """Return the next action given every turn of the episode so far (oldest first)."""
        ...
