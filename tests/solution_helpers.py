"""The benchmark tests' shared drive: play a task's reference solution in an environment."""

from __future__ import annotations

from dgym_tui.core.types import StepResult
from dgym_tui.policies.solution import SolutionPolicy


def play_solution(env, task) -> list[StepResult]:
    """Step ``env`` (already reset) with ``task``'s reference solution until the episode ends.

    Every step must succeed (no tool error); the last result is the one with ``done``.

    Returns:
        The step results, in order.
    """
    policy = SolutionPolicy.for_task(task)
    policy.reset(None)
    results: list[StepResult] = []
    while not results or not results[-1].done:
        proposal = policy.propose([])
        assert proposal.action is not None, proposal.error
        results.append(env.step(proposal.action))
        assert not results[-1].error, results[-1].observation
    return results
