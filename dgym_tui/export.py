"""Export trajectories to other formats.

- ``debug-gym``: one JSON document per episode in the shape of the reference
  system's trajectory files: ``problem``, ``config``, ``tools``, ``uuid``,
  ``success`` and ``log``, a list of ``{step_id, action, obs,
  prompt_response_pairs, token_usage}`` (step 0 is the reset).
- ``sft``: chat-format JSONL, one conversation per episode — a system
  message, the user's task (the reset observation), then for every executed
  action an assistant message with the tool call and a ``tool`` message with
  the observation. Rejected and invalid proposals are left out, edited turns
  contribute the person's action, so human sessions become training data.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from dgym_tui.trajectory import Trajectory, TrajectoryError, read_trajectory

FORMATS = ("debug-gym", "sft")

SYSTEM_PROMPT = ("You are a debugging agent working in a Python repository. Use the tools "
                 "to investigate (pdb first of all), fix the bug, and call submit when the "
                 "tests pass. Call exactly one tool per turn.")


def _arguments(action: dict[str, Any]) -> dict[str, Any] | str:
    args = action.get("arguments")
    if isinstance(args, str):
        try:
            return json.loads(args)
        except json.JSONDecodeError:
            return args
    return args or {}


def to_debug_gym(traj: Trajectory) -> dict[str, Any]:
    """Convert one trajectory to the reference system's JSON shape.

    Args:
        traj: a trajectory read with :func:`read_trajectory`.

    Returns:
        ``{"problem", "config", "tools", "uuid", "success", "log": [...]}``;
        each log entry is ``{"step_id": int, "action": {"id", "name",
        "arguments"} | None, "obs": str, "prompt_response_pairs": list | None,
        "token_usage": {"prompt": int, "response": int} | None}``.
        Also ``"actor"`` / ``"decision"`` / ``"note"`` per entry (extra keys).
    """
    header = traj.header
    task = header.get("task") or {}
    log = [{"step_id": 0, "action": None, "obs": header["initial"]["observation"],
            "prompt_response_pairs": None, "token_usage": None}]
    for record in traj.steps:
        action = record.get("action")
        usage = record.get("usage") or {}
        pairs = None
        if record["actor"] == "agent" or record.get("proposed"):
            proposed = record.get("proposed")
            pairs = [{"prompt": None,
                      "response": record.get("reasoning") or "",
                      "tool": ({"id": proposed.get("id"), "name": proposed["name"],
                                "arguments": _arguments(proposed)} if proposed else None)}]
        obs = record.get("observation") or ""
        if action is None:
            obs = f"[{record['decision']}] {record.get('note') or ''}".strip()
        log.append({
            "step_id": record["step"],
            "action": ({"id": action.get("id"), "name": action["name"],
                        "arguments": _arguments(action)} if action else None),
            "obs": obs,
            "prompt_response_pairs": pairs,
            "token_usage": {"prompt": int(usage.get("prompt_tokens", 0)),
                            "response": int(usage.get("completion_tokens", 0))},
            "actor": record["actor"], "decision": record["decision"],
            "note": record.get("note") or "",
        })
    footer = traj.footer or {}
    return {
        "problem": task.get("name") or task.get("path") or "",
        "config": header.get("config") or {},
        "tools": header.get("tools") or [],
        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{traj.path}:{header.get('started_at')}")),
        "success": bool(footer.get("resolved", False)),
        "log": log,
    }


def to_sft(traj: Trajectory, system_prompt: str = SYSTEM_PROMPT) -> dict[str, Any]:
    """Convert one trajectory to a chat-format conversation for supervised fine-tuning.

    Args:
        traj: a trajectory.
        system_prompt: the system message text.

    Returns:
        ``{"messages": [...], "tools": [schemas], "meta": {"task", "resolved",
        "steps", "actors"}}``. Messages follow the OpenAI chat format: the
        assistant message holds ``tool_calls`` (arguments as a JSON string),
        the ``tool`` message answers it by ``tool_call_id``.
    """
    header = traj.header
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": header["initial"]["observation"]},
    ]
    actors = set()
    for record in traj.steps:
        action = record.get("action")
        if action is None:
            continue
        actors.add(record["actor"])
        args = _arguments(action)
        call_id = action.get("id") or f"call_{record['step']}"
        messages.append({
            "role": "assistant",
            "content": ((record.get("reasoning") or "") if record["decision"] != "edited"
                        else ""),  # the agent's reasoning does not explain a human edit
            "tool_calls": [{"id": call_id, "type": "function",
                            "function": {"name": action["name"],
                                         "arguments": args if isinstance(args, str)
                                         else json.dumps(args, ensure_ascii=False)}}],
        })
        messages.append({"role": "tool", "tool_call_id": call_id,
                         "content": record.get("observation") or ""})
    footer = traj.footer or {}
    task = header.get("task") or {}
    return {"messages": messages, "tools": header.get("tools") or [],
            "meta": {"task": task.get("name") or task.get("path") or "",
                     "resolved": bool(footer.get("resolved", False)),
                     "finished": traj.finished, "steps": len(traj.steps),
                     "actors": sorted(actors)}}


def find_trajectories(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """Expand files and folders (searched recursively for ``*.jsonl``) into trajectory paths.

    Raises:
        TrajectoryError: a path does not exist, or a folder holds no ``.jsonl`` file.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(path.rglob("*.jsonl"))
            if not files:
                raise TrajectoryError(f"{path}: no .jsonl trajectory in this folder")
            found.extend(files)
        elif path.is_file():
            found.append(path)
        else:
            raise TrajectoryError(f"{path}: no such trajectory file or folder")
    return found


def export(paths: list[str | os.PathLike[str]], fmt: str,
           output: str | os.PathLike[str] | None = None) -> tuple[str, int]:
    """Export trajectories.

    Args:
        paths: trajectory files or folders of them.
        fmt: ``"debug-gym"`` or ``"sft"``.
        output: file to write; None returns the text only.
            ``debug-gym`` writes one JSON document (a list when there are
            several episodes); ``sft`` writes one JSON line per episode.

    Returns:
        ``(text, episodes)``: the exported text and how many episodes it holds.

    Raises:
        TrajectoryError: unreadable input (the message names file and line).
        ValueError: unknown format.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r}; use {' or '.join(FORMATS)}")
    trajectories = [read_trajectory(p) for p in find_trajectories(paths)]
    if fmt == "sft":
        text = "".join(json.dumps(to_sft(t), ensure_ascii=False) + "\n" for t in trajectories)
    else:
        docs = [to_debug_gym(t) for t in trajectories]
        text = json.dumps(docs[0] if len(docs) == 1 else docs, indent=2, ensure_ascii=False) + "\n"
    if output is not None:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
    return text, len(trajectories)
