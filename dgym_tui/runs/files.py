"""The file names of one episode's folder in a ``dgym run`` output folder.

Kept apart from :mod:`dgym_tui.runs.runner` so that readers of run folders (the run
browser's index, which ``dgym-tui`` consults before every start) do not import the runner,
its configuration (and PyYAML), policies and executors.
"""

from __future__ import annotations

#: The episode's status (see :mod:`dgym_tui.runs.runner`).
STATUS_FILE = "status.json"
#: The episode's trajectory.
TRAJECTORY_FILE = "trajectory.jsonl"
#: The working copy's changes (git-style unified diff).
PATCH_FILE = "patch.diff"
