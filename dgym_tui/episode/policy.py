"""What the turn loop asks of whoever chooses the actions: the Policy protocol.

A policy is an LLM agent (:mod:`dgym_tui.policies.agent`), a person typing at a prompt
(:mod:`dgym_tui.policies.human`) or anything else with ``reset`` and ``propose``. The
turn loop (:mod:`dgym_tui.episode.session`) calls ``reset`` once per episode and
``propose`` once per turn; it never asks how the proposal was made.

This module imports nothing heavy: no LLM library, no UI. The records a policy
receives and returns (:class:`~dgym_tui.episode.records.EpisodeInfo`,
:class:`~dgym_tui.episode.records.Turn`, :class:`~dgym_tui.episode.records.Proposal`) live in
:mod:`dgym_tui.episode.records`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from dgym_tui.episode.records import EpisodeInfo, Proposal, Turn


@runtime_checkable
class Policy(Protocol):
    """Chooses the next action of an episode.

    A class may subclass this protocol to inherit the defaults of ``actor`` and
    :meth:`prompt_header`.

    Attributes:
        name: a short label recorded in trajectories (``"debug_agent"``, ``"human"``).
        actor: ``"agent"``, or ``"human"`` for a person typing actions: the session
            then records an approved proposal as the person's own (decision ``"manual"``).
    """

    name: str
    actor: str = "agent"

    def reset(self, info: EpisodeInfo) -> None:
        """Start a new episode: remember the task, tool schemas and instructions."""
        ...

    def propose(self, turns: list[Turn]) -> Proposal:
        """Return the next action given every turn of the episode so far (oldest first)."""
        ...

    def prompt_header(self) -> dict[str, Any] | None:
        """What the trajectory header records of the policy's prompt (an LLM agent: its
        system prompt, task message and tools), or None (the default) for none."""
        return None
