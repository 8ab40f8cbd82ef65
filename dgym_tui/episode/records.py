"""The records the turn loop passes around: Usage, Proposal, EpisodeInfo, Turn.

They sit below everything that uses them (policies, the LLM client, the
session, trajectories, the replay view) and import only :mod:`dgym_tui.core.types`
and :mod:`dgym_tui.episode.examples`, so any of those modules can import them at module level without a cycle.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from dgym_tui.core.types import StepResult, ToolCall
from dgym_tui.episode.examples import TaskExamples


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
        error: why there is no valid action; the session records it in
            :attr:`Turn.error` and the agent reads it on its next turn.
        usage: tokens and cost spent producing this proposal.
        raw: the provider's message as a dict, for debugging (may be None).
        prompt: what was sent to get it, for training data (see
            :attr:`Turn.prompt`), or None.
    """

    action: ToolCall | None
    reasoning: str = ""
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    raw: dict | None = None
    prompt: dict | None = None


@dataclass
class EpisodeInfo:
    """What a policy learns at the start of an episode.

    Attributes:
        task: the problem statement shown to the agent.
        instructions: the tools' instructions joined into one text.
        tool_schemas: OpenAI function schemas of the environment's tools
            (``{"type": "function", "function": {...}}``).
        initial_observation: the observation returned by ``env.reset()``.
        examples: the task's real file, line and test for the examples the
            policy shows (see :mod:`dgym_tui.episode.examples`).
        remote_tools: names of the tools that come from the run's MCP servers
            (``mcp_servers:``); an agent offers them besides its spec's tools.
    """

    task: str
    instructions: str
    tool_schemas: list[dict]
    initial_observation: str
    examples: TaskExamples = field(default_factory=TaskExamples)
    remote_tools: list[str] = field(default_factory=list)


@dataclass
class Turn:
    """One recorded turn of an episode (one ``step`` line of a trajectory).

    Attributes:
        index: 1-based step number.
        actor: ``"agent"`` or ``"human"`` (see :mod:`dgym_tui.episode.session`).
        decision: ``"auto" | "approved" | "edited" | "rejected" | "manual"``.
        proposed: what the agent proposed (None for manual turns and for
            invalid proposals).
        action: what was executed (None when rejected).
        note: the rejection note or the person's comment.
        error: why the proposal could not be run (an invalid proposal: no
            valid tool call); "" otherwise.
        reasoning: the model's text accompanying the proposal.
        result: the environment's StepResult (None when nothing was executed).
        usage: tokens and cost of the proposal.
        wall_time: seconds spent on the turn (policy thinking + step).
        raw: the provider message of the proposal, when the policy gave one.
        patch: the working copy's whole patch against the starting files after
            this step (git style), recorded only when the step changed a file;
            None otherwise.
        originals: ``{path: starting text, or None for a created file}`` of the
            files ``patch`` changes for the first time in the episode, or
            whose start moved (the changes were applied to the original in
            between): replay rebuilds every step from these and the patches.
            None when the step changed nothing.
        prompt: the messages an LLM agent sent for this proposal, as ids:
            ``{"sent": [id, ...], "new": {id: message}, "trimmed": int,
            "tools": [names] | None}`` (``"system"`` / ``"task"`` are the
            header's ``prompt``; every other message is stored once, in
            ``new`` of the first step that sent it); None for other policies.
    """

    index: int
    actor: str
    decision: str
    proposed: ToolCall | None
    action: ToolCall | None
    note: str = ""
    error: str = ""
    reasoning: str = ""
    result: StepResult | None = None
    usage: Usage = field(default_factory=Usage)
    wall_time: float = 0.0
    raw: dict | None = None
    patch: str | None = None
    originals: dict[str, str | None] | None = None
    prompt: dict | None = None

    @property
    def observation(self) -> str:
        """The text the agent reads for this turn ("" when nothing was executed)."""
        return self.result.observation if self.result else ""

    @property
    def invalid(self) -> bool:
        """True for a turn recording a proposal that had no valid action."""
        return self.proposed is None and self.action is None and self.decision == "rejected"

    def to_record(self) -> dict[str, Any]:
        """Return the trajectory ``step`` record (without ``type``)."""
        record = {
            "step": self.index,
            "actor": self.actor,
            "decision": self.decision,
            "proposed": self.proposed.to_dict() if self.proposed else None,
            "action": self.action.to_dict() if self.action else None,
            "note": self.note,
            "error": self.error,
            "reasoning": self.reasoning,
            "observation": self.observation,
            "result": self.result.to_dict() if self.result else None,
            "wall_time": round(self.wall_time, 4),
            "usage": self.usage.to_dict(),
            "raw": self.raw,
        }
        if self.patch is not None:
            record["patch"] = self.patch
            record["originals"] = self.originals or {}
        if self.prompt is not None:
            record["prompt"] = self.prompt
        return record

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Turn:
        """Inverse of :meth:`to_record` (accepts a record read from a file)."""
        return cls(
            index=int(record["step"]),
            actor=record["actor"],
            decision=record["decision"],
            proposed=ToolCall.from_dict(record["proposed"]) if record.get("proposed") else None,
            action=ToolCall.from_dict(record["action"]) if record.get("action") else None,
            note=record.get("note") or "",
            error=record.get("error") or "",
            reasoning=record.get("reasoning") or "",
            result=StepResult.from_dict(record["result"]) if record.get("result") else None,
            usage=Usage.from_dict(record.get("usage")),
            wall_time=float(record.get("wall_time") or 0.0),
            raw=record.get("raw"),
            patch=record.get("patch"),
            originals=record.get("originals"),
            prompt=record.get("prompt"),
        )


@dataclass(frozen=True)
class WorkingCopy:
    """The working copy as a front end shows it (:meth:`Session.snapshot
    <dgym_tui.episode.session.Session.snapshot>`).

    Attributes:
        generation: changes with every step that changes a visible file.
        files: visible files, relative POSIX paths, sorted.
        readonly: the read-only ones among them.
        patch: unified diff against the starting files; None when not asked for.
    """

    generation: int
    files: list[str]
    readonly: frozenset[str]
    patch: str | None = None
