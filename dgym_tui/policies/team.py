"""The info-seeking team: a small model investigates, a larger one writes the fix.

An agent spec with ``roles`` (``agents/info_seek_agent.yaml``) is played by
:class:`InfoSeekAgent`: the first role (``seeker``) gathers evidence with the
read-only tools and pdb; its part ends when it replies with a summary and no
tool call, or when it has used its ``max_steps``, in which case it is asked for
the summary: a reply that is not prose (a tool call, JSON, nearly empty; see
:func:`summary_problem`) is answered once with a request for plain sentences,
and a second such reply leaves the fixer without findings rather than with a
bogus one. The second role (``fixer``) then starts from the task, the
initial observation and that summary, and sees only its own turns. Each
proposal's ``raw["role"]`` says who made it; the handoff is in
``raw["handoff"]`` of the fixer's first proposal: the summary, the tokens it
cost, whether it was asked for, and the prompt of the seeker's last call (as
ids, like a step's ``prompt``).
"""

from __future__ import annotations

import os
from typing import Any

from dgym_tui.episode.records import EpisodeInfo, Proposal, Turn, Usage
from dgym_tui.llm.tool_calls import parse_text
from dgym_tui.policies.agent import AgentSpecError, LLMAgent, TeamSpec
from dgym_tui.policies.tool_examples import localise_schema

DEFAULT_SEEKER_STEPS = 10
SUMMARY_REQUEST = ("Stop investigating now. Without any tool call, write a summary for the "
                   "engineer who will fix the bug: what fails, where the wrong value comes from "
                   "(file, line, values you saw) and the change you suggest.")
SUMMARY_AGAIN = ("Write it in plain sentences for a person: no JSON, no code block, no tool "
                 "call.")
NO_CALL = "the reply contained no tool call"
MIN_SUMMARY_CHARS = 15  # a summary shorter than this says nothing the fixer can use


def summary_problem(content: str | None, tool_calls: list[dict[str, Any]] | None,
                    tools: list[str]) -> str | None:
    """Why a reply is not a usable summary for the fixer, or None when it is one.

    Args:
        content: the reply text.
        tool_calls: its native tool calls, if any.
        tools: the tool names the seeker had (a bare JSON object naming one is a call).

    Returns:
        ``"it holds a tool call"``, ``"it is empty"``, ``"it is JSON, not prose"``
        or ``"it is too short"``; None for a prose summary.
    """
    text = (content or "").strip()
    if tool_calls or parse_text(text, tools).calls:
        return "it holds a tool call"
    if not text:
        return "it is empty"
    if text[0] in "{[":
        return "it is JSON, not prose"
    if len(text) < MIN_SUMMARY_CHARS:
        return "it is too short"
    return None


def role_llms(llm: Any, roles: list[str]) -> dict[str, Any]:
    """Map each role to its LLM: one entry for all, or ``"role=ENTRY,role=ENTRY"``.

    Raises:
        AgentSpecError: a role is missing from the mapping or unknown.
    """
    if not (isinstance(llm, str) and "=" in llm):
        return {role: llm for role in roles}
    mapping = {}
    for part in llm.split(","):
        role, _, entry = part.partition("=")
        mapping[role.strip()] = entry.strip()
    if set(mapping) != set(roles) or not all(mapping.values()):
        raise AgentSpecError(f"--llm {llm!r}: give one entry per role "
                             f"({','.join(f'{r}=ENTRY' for r in roles)}) or one entry for all")
    return mapping


class InfoSeekAgent:
    """A policy for a :class:`~dgym_tui.policies.agent.TeamSpec` with a seeker and a fixer role.

    Args:
        spec: the team spec (two roles: the investigator first, the fixer second).
        llm: one llm.yaml entry / LLM for both roles, or ``"seeker=A,fixer=B"``.
        config_path: llm.yaml path.
        tool_calling: force ``"native"`` / ``"text"`` for both roles.

    Attributes:
        name: the spec's name. actor: ``"agent"``. usage: the episode's total.
        usage_by_role: ``{role: Usage}``.

    Raises:
        AgentSpecError / LLMConfigError: bad spec or LLM entries.
    """

    actor = "agent"

    def __init__(self, spec: TeamSpec, llm: Any, config_path: str | os.PathLike | None = None,
                 tool_calling: str | None = None) -> None:
        if len(spec.roles) != 2:
            raise AgentSpecError(f"{spec.name}: an info-seeking team has exactly two roles "
                                 f"(seeker, fixer), not {len(spec.roles)}")
        self.spec = spec
        self.name = spec.name
        (self.seeker_role, seeker_spec), (self.fixer_role, fixer_spec) = spec.roles.items()
        llms = role_llms(llm, list(spec.roles))
        self.seeker = LLMAgent(seeker_spec, llms[self.seeker_role], config_path, tool_calling,
                               role=self.seeker_role)
        self.fixer = LLMAgent(fixer_spec, llms[self.fixer_role], config_path, tool_calling,
                              role=self.fixer_role)
        self.fixer.message_prefix = self.fixer_role
        self.seeker_steps = spec.max_steps.get(self.seeker_role, DEFAULT_SEEKER_STEPS)
        self.info: EpisodeInfo | None = None
        self.handoff_at: int | None = None  # number of turns played by the seeker
        self.summary = ""
        self.usage = Usage()
        self.usage_by_role = {role: Usage() for role in spec.roles}

    def reset(self, info: EpisodeInfo) -> None:
        """Start an episode with the seeker."""
        self.info = info
        self.seeker.reset(info)
        self.handoff_at, self.summary = None, ""
        self.usage = Usage()
        self.usage_by_role = {role: Usage() for role in self.spec.roles}

    def prompt_header(self) -> dict[str, Any]:
        """The seeker's prompt header, with every role's tools and the role names
        (the fixer's first messages are stored in its first step)."""
        header = self.seeker.prompt_header()
        schemas = ({t["function"]["name"]: localise_schema(t, self.info.examples)
                    for t in self.info.tool_schemas} if self.info else {})
        header.update(agent=self.name, roles=list(self.spec.roles),
                      tools=[schemas[n] for n in self._tool_names() if n in schemas])
        return header

    def _tool_names(self) -> list[str]:
        """Every role's tools, then the tools of the run's MCP servers."""
        remote = self.info.remote_tools if self.info else []
        return [*self.spec.tools, *(n for n in remote if n not in self.spec.tools)]

    def _count(self, role: str, usage: Usage) -> None:
        self.usage = self.usage + usage
        self.usage_by_role[role] = self.usage_by_role[role] + usage

    def propose(self, turns: list[Turn]) -> Proposal:
        """The seeker's next action, or, once it is done, the fixer's.

        Raises:
            LLMError / LLMConfigError: a model call failed. RuntimeError: not reset.
        """
        if self.info is None:
            raise RuntimeError("InfoSeekAgent.reset(info) must be called before proposing")
        handoff = None
        if self.handoff_at is None:
            if len(turns) < self.seeker_steps:
                proposal = self.seeker.propose(turns)
                self._count(self.seeker_role, proposal.usage)
                if not (proposal.action is None and proposal.error == NO_CALL
                        and proposal.reasoning.strip()):
                    return proposal
                summary, usage = proposal.reasoning.strip(), proposal.usage  # done: its summary
                prompt, asked = proposal.prompt, False
            else:
                summary, usage, prompt = self._ask_summary(turns)
                asked = True
            handoff = self._hand_over(len(turns), summary, usage)
            handoff.update(asked=asked, prompt=prompt)
        proposal = self.fixer.propose(turns[self.handoff_at:])
        self._count(self.fixer_role, proposal.usage)
        if handoff is not None:
            proposal.raw = {**(proposal.raw or {}), "handoff": handoff}
            proposal.usage = proposal.usage + Usage.from_dict(handoff["usage"])
        return proposal

    def _ask_summary(self, turns: list[Turn]) -> tuple[str, Usage, dict[str, Any]]:
        """Ask the seeker for its summary, and once more when the reply is not one
        (:func:`summary_problem`). Returns ``(summary, usage, prompt record of the
        last call)``; the summary is "" when neither reply was usable."""
        messages = self.seeker.build_messages(turns)
        messages.append({"role": "user", "content": SUMMARY_REQUEST})
        usage = Usage()
        for attempt in range(2):
            response = self.seeker.llm.complete(messages)
            self._count(self.seeker_role, response.usage)
            usage = usage + response.usage
            prompt = self.seeker.prompt_record(response.prompt, turns, response.trimmed, None)
            problem = summary_problem(response.content, response.tool_calls,
                                      self.seeker.available_tools(turns))
            if problem is None:
                return response.content.strip(), usage, prompt
            if attempt == 0:
                messages += [{"role": "assistant", "content": response.content or ""},
                             {"role": "user", "content": f"That is not a summary: {problem}. "
                                                         f"{SUMMARY_AGAIN}"}]
        return "", usage, prompt

    def _hand_over(self, at: int, summary: str, usage: Usage) -> dict[str, Any]:
        """Start the fixer from the task, the initial observation and the summary."""
        self.handoff_at, self.summary = at, summary
        info = self.info
        findings = (f"{info.initial_observation}\n\n## Findings of the investigation "
                    f"({self.seeker_role})\n"
                    f"{summary or '(the investigator gave no usable summary)'}")
        self.fixer.reset(EpisodeInfo(task=info.task, instructions=info.instructions,
                                     tool_schemas=info.tool_schemas,
                                     initial_observation=findings, examples=info.examples))
        return {"from": self.seeker_role, "to": self.fixer_role, "after_steps": at,
                "summary": summary, "usage": usage.to_dict()}
