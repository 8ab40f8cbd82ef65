"""submit: grade the agent's changes in a fresh working copy and end the episode."""

from __future__ import annotations

from typing import Any

from dgym_tui.core.evaluation.summary import describe_score
from dgym_tui.core.tools.base import Tool, ToolOutput, register

#: Most changed files the observation names; the rest are counted (the patch has them all).
MAX_NAMED = 50


@register
class SubmitTool(Tool):
    """Ends the episode after a final eval in a fresh working copy of the original
    carrying the agent's changes to writable files (:meth:`RepoEnv.grade_submission`)."""

    name = "submit"
    instructions = (
        "Submit your fix and end the episode. The entrypoint runs one last time, on a fresh "
        "copy of the repository with your changes to writable files, and its result is your "
        "score. Call it when the tests pass (or you cannot do better).")

    def run(self, **_: Any) -> ToolOutput:
        summary, output = self.env.grade_submission()
        changed = self.env.workspace.changed_files()
        files = ", ".join(changed[:MAX_NAMED]) if changed else "none"
        if len(changed) > MAX_NAMED:
            files += f" and {len(changed) - MAX_NAMED:,} more"
        text = (f"Submitted. Final eval of `{self.env.entrypoint}`:\n{output.rstrip()}\n\n"
                f"{describe_score(summary)}\nChanged files: {files}")
        return ToolOutput(text, done=True, data={"eval": summary.to_dict()})
