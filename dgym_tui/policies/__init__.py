"""Who chooses actions: LLM agents, the human policy, the solution policy.

:func:`make_policy` builds any of them by kind.
"""

from dgym_tui.policies.factory import PolicyError, make_policy

__all__ = ["PolicyError", "make_policy"]
