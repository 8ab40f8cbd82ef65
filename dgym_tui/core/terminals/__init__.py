"""Terminals: where an episode's commands run (local processes or a Docker container)."""

from .base import DEFAULT_MAX_OUTPUT, RunResult, Terminal, TerminalError

__all__ = ["DEFAULT_MAX_OUTPUT", "RunResult", "Terminal", "TerminalError"]
