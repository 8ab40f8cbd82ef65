"""Build the policy an agent spec describes: an LLM agent, or a team of them.

It sits above :mod:`dgym_tui.policies.agent` and :mod:`dgym_tui.policies.team` so that
neither of the two imports the other.
"""

from __future__ import annotations

import os
from typing import Any

from dgym_tui.policies.agent import AgentSpec, AgentSpecError, LLMAgent, TeamSpec, load_agent_spec
from dgym_tui.policies.team import InfoSeekAgent


def make_agent(spec: AgentSpec | TeamSpec | str | os.PathLike, llm: Any,
               config_path: str | os.PathLike | None = None,
               tool_calling: str | None = None) -> Any:
    """Build the policy for an agent spec: an :class:`LLMAgent`, or for a spec
    with roles an :class:`~dgym_tui.policies.team.InfoSeekAgent`.

    Args:
        spec: a spec, an agent name or a spec path.
        llm: an llm.yaml entry name (every role uses it), ``"role=ENTRY,role=ENTRY"``
            (one entry per role, e.g. ``"seeker=small,fixer=big"``), an LLM or an LLMConfig.
        config_path: llm.yaml path.
        tool_calling: force ``"native"`` / ``"text"`` for every role.

    Raises:
        AgentSpecError / LLMConfigError: bad spec, LLM entry, or role mapping.
    """
    loaded = spec if isinstance(spec, (AgentSpec, TeamSpec)) else load_agent_spec(spec)
    if isinstance(loaded, TeamSpec):
        return InfoSeekAgent(loaded, llm, config_path, tool_calling)
    if isinstance(llm, str) and "=" in llm:
        raise AgentSpecError(f"agent {loaded.name!r} has no roles; give one LLM entry, not {llm!r}")
    return LLMAgent(loaded, llm, config_path, tool_calling)
