"""dgym-tui: debug Python repositories with pdb, as an LLM agent or a person."""

from dgym_tui.core.types import StepResult, ToolCall

__version__ = "0.1.0"

__all__ = ["RepoEnv", "StepResult", "ToolCall", "__version__"]


def __getattr__(name: str):
    # RepoEnv is imported lazily so `import dgym_tui` stays cheap.
    if name == "RepoEnv":
        from dgym_tui.core.env import RepoEnv

        return RepoEnv
    raise AttributeError(name)
