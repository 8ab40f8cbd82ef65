"""Build a policy by kind: an LLM agent or team from an agent spec, a person, the solution.

The one factory every front end and the runner use. It sits above
:mod:`dgym_tui.policies.agent` and :mod:`dgym_tui.policies.team` so that neither of the
two imports the other; each kind's module is imported only when that kind is built.
"""

from __future__ import annotations

import os
from typing import Any

from dgym_tui.core.errors import first_line
from dgym_tui.episode.policy import Policy


class PolicyError(ValueError):
    """A policy cannot be built; the message is one line."""


def make_policy(kind: str = "agent", agent: str | os.PathLike | Any = "debug_agent",
                llm: Any = None, llm_config: str | os.PathLike | None = None, task: Any = None,
                tool_calling: str | None = None) -> Policy:
    """Build a policy by kind.

    Args:
        kind: ``"agent"`` (an :class:`~dgym_tui.policies.agent.LLMAgent`, or for a spec
            with roles an :class:`~dgym_tui.policies.team.InfoSeekAgent`), ``"human"``
            (actions typed on stdin) or ``"solution"`` (applies ``task``'s gold patch,
            then submits).
        agent: agent spec name, path, or a loaded AgentSpec / TeamSpec (kind ``agent``).
        llm: llm.yaml entry name (every role uses it), ``"role=ENTRY,role=ENTRY"`` (one
            entry per role, e.g. ``"seeker=small,fixer=big"``), an LLM or an LLMConfig
            (kind ``agent``).
        llm_config: path of llm.yaml; None for the default location.
        task: the benchmark Task (kind ``solution``).
        tool_calling: force ``"native"`` / ``"text"`` for every role (kind ``agent``).

    Returns:
        The policy, ready for ``Session``.

    Raises:
        PolicyError: missing ``llm``, unknown kind, or a spec, LLM entry or role
            mapping that cannot be loaded (one line).
    """
    if kind == "agent":
        if not llm:
            raise PolicyError("policy 'agent' needs an LLM entry: give llm (-p llm=NAME / --llm)")
        from dgym_tui.llm.client import LLMConfigError
        from dgym_tui.policies.agent import AgentSpecError

        try:
            return _make_agent(agent, llm, llm_config, tool_calling)
        except (AgentSpecError, LLMConfigError, KeyError, ValueError, OSError) as exc:
            raise PolicyError(first_line(exc)) from None
    if kind == "human":
        from dgym_tui.policies.human import HumanTextPolicy

        return HumanTextPolicy()
    if kind == "solution":
        from dgym_tui.policies.solution import SolutionPolicy

        return SolutionPolicy.for_task(task)
    raise PolicyError(f"unknown policy {kind!r}; use agent, human or solution")


def _make_agent(spec: Any, llm: Any, config_path: str | os.PathLike | None,
                tool_calling: str | None) -> Policy:
    from dgym_tui.policies.agent import AgentSpec, AgentSpecError, LLMAgent, TeamSpec, load_agent_spec
    from dgym_tui.policies.team import InfoSeekAgent

    loaded = spec if isinstance(spec, (AgentSpec, TeamSpec)) else load_agent_spec(spec)
    if isinstance(loaded, TeamSpec):
        return InfoSeekAgent(loaded, llm, config_path, tool_calling)
    if isinstance(llm, str) and "=" in llm:
        raise AgentSpecError(f"agent {loaded.name!r} has no roles; give one LLM entry, not {llm!r}")
    return LLMAgent(loaded, llm, config_path, tool_calling)
