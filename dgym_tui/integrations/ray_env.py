"""A ``RepoEnv`` held by a Ray actor, for Ray-based RL trainers (``pip install 'dgym-tui[ray]'``).

The actor lives on whichever node Ray picks (1 CPU; add ``resources={"docker": 1}``
for Docker tasks); ``reset()`` and ``step()`` return the same
:class:`~dgym_tui.core.types.StepResult` as a local environment::

    import ray
    from dgym_tui.benchmarks import get_benchmark
    from dgym_tui.core.types import ToolCall
    from dgym_tui.integrations.ray_env import remote_env

    ray.init()                                   # or ray.init(address="auto")
    task = get_benchmark("mini").load("pagination")
    env = remote_env(task)                       # an actor handle
    first = ray.get(env.reset.remote())          # StepResult: observation, score, ...
    result = ray.get(env.step.remote(ToolCall("view", {"path": "paging.py"})))
    print(result.observation[:200], result.score, result.done)
    ray.get(env.close.remote())

Many actors step in parallel (one episode each): collect with ``ray.get([...])``.
"""

from __future__ import annotations

from typing import Any

import ray


@ray.remote(num_cpus=1)
class RepoEnvActor:
    """Holds one ``RepoEnv`` built from a benchmark ``Task`` (``task.make_env(**overrides)``)."""

    def __init__(self, task: Any, overrides: dict[str, Any]) -> None:
        self.env = task.make_env(**overrides)

    def reset(self) -> Any:
        """``RepoEnv.reset()``: a fresh working copy; returns the initial StepResult."""
        return self.env.reset()

    def step(self, action: Any) -> Any:
        """``RepoEnv.step(action)`` (a ToolCall or ``{"name", "arguments"}``); never raises."""
        return self.env.step(action)

    def close(self) -> None:
        """Close the environment (processes, container, working copy)."""
        self.env.close()


def remote_env(task: Any, resources: dict[str, float] | None = None, **overrides: Any) -> Any:
    """Start a :class:`RepoEnvActor` for ``task`` and return its handle.

    Args:
        task: a benchmark ``Task`` (``get_benchmark(name).load(task_name)``);
            its repository path must exist on the node the actor lands on.
        resources: extra Ray resources, e.g. ``{"docker": 1}``.
        **overrides: ``RepoEnv`` keyword arguments (``tools=[...]``, ``terminal=...``).

    Returns:
        The actor handle; call ``.reset.remote()`` / ``.step.remote(action)`` and ``ray.get``.
        Needs ``ray.init()`` first (else Ray starts a local instance).
    """
    return RepoEnvActor.options(resources=resources or {}).remote(task, overrides)
