"""eval: run the entrypoint (the tests) in the working copy and report the score."""

from __future__ import annotations

from typing import Any

from dgym_tui.core.evaluation.summary import describe_score
from dgym_tui.core.tools.base import Tool, ToolOutput, register


@register
class EvalTool(Tool):
    """Runs the environment's entrypoint and reports pytest's counts as the score."""

    name = "eval"
    instructions = (
        "Run the tests (the task's entrypoint) on the current code and show their output "
        "and the score (tests passed / tests run). Takes no arguments.")

    def run(self, **_: Any) -> ToolOutput:
        summary, output = self.env.run_eval()
        status = ("timed out" if summary.timed_out else f"exit code {summary.exit_code}")
        text = (f"Ran `{self.env.entrypoint}` ({status}):\n{output.rstrip()}\n\n"
                f"{describe_score(summary)}")
        return ToolOutput(text, data={"eval": summary.to_dict(), "start": self.env.last_eval_start})
