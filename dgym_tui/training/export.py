"""Export trajectories to other formats.

- ``debug-gym``: one JSON document per episode in the shape of the reference
  system's trajectory files: ``problem``, ``config``, ``tools``, ``uuid``,
  ``success`` and ``log``, a list of ``{step_id, action, obs,
  prompt_response_pairs, token_usage}`` (step 0 is the reset).
- ``sft``: chat-format JSONL, one conversation per episode. For an LLM
  agent's episode (the header has a ``prompt``: see :func:`rebuild_prompt`)
  it is the conversation the agent really saw: its own system prompt and task
  message, then every message its prompts held, in order, repeated ones as
  often as they were sent (invalid replies, corrections, rejections and the
  person's edits as the agent read them; trimming notes left out), then its
  last reply; replies whose action did not run cleanly (invalid, rejected,
  edited, or a tool error) are marked ``"weight": 0`` (``targets="valid"``:
  only invalid ones); the tools are the schemas it was offered (native mode).
  Otherwise (a person's session, an older trajectory) a generic system
  message, the task (the reset observation), then for every executed action
  an assistant tool call and a ``tool`` message with the observation;
  rejected and invalid proposals are left out.

:func:`rebuild_prompt` returns the exact messages and tools sent at one step.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any

from dgym_tui.episode.trajectory import Trajectory, TrajectoryError, read_trajectory
from dgym_tui.runs.reviews import REVIEWS_FILE

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


def _message_table(traj: Trajectory) -> dict[str, dict[str, Any]]:
    """Every message id of an LLM agent's trajectory -> the message."""
    prompt = traj.header.get("prompt") or {}
    table = {"system": {"role": "system", "content": prompt.get("system", "")},
             "task": {"role": "user", "content": prompt.get("task", "")}}
    for record in traj.steps:
        table.update((record.get("prompt") or {}).get("new") or {})
        handoff = (record.get("raw") or {}).get("handoff") or {}
        table.update((handoff.get("prompt") or {}).get("new") or {})
    return table


def rebuild_prompt(traj: Trajectory, step: int) -> tuple[list[dict[str, Any]],
                                                         list[dict[str, Any]] | None]:
    """Rebuild the exact prompt an LLM agent sent for one step.

    The header's ``prompt`` holds the system prompt, the task message and the
    tool schemas once; each step's ``prompt`` lists the ids of the messages
    sent (``"system"``, ``"task"`` or ids defined in ``new`` of that step or an
    earlier one), how many were trimmed, and the names of the tools offered.

    Args:
        traj: a trajectory recorded with an LLM agent.
        step: the 1-based step number.

    Returns:
        ``(messages, tools)``: OpenAI-format messages as sent, and the tool
        schemas sent with them (None in text mode).

    Raises:
        TrajectoryError: the step has no prompt record (a person's turn, or
            a trajectory recorded before prompts were stored) or names an
            unknown message id.
    """
    record = traj.step(step)
    prompt = record.get("prompt")
    if not prompt or "prompt" not in traj.header:
        raise TrajectoryError(f"{traj.path}: step {step} has no recorded prompt "
                              f"(not an LLM agent's step, or an older trajectory)")
    table = _message_table(traj)
    missing = [i for i in prompt["sent"] if i not in table]
    if missing:
        raise TrajectoryError(f"{traj.path}: step {step} names unknown message id(s) "
                              f"{', '.join(missing)}")
    schemas = {t["function"]["name"]: t for t in traj.header["prompt"].get("tools") or []}
    tools = [schemas[name] for name in prompt["tools"]] if prompt.get("tools") else None
    return [table[i] for i in prompt["sent"]], tools


#: which of the model's replies an SFT export marks as targets (the others get "weight": 0)
SFT_TARGETS = ("clean", "valid")


def _is_target(record: dict[str, Any], targets: str) -> bool:
    """Whether the reply of one step is a training target.

    ``clean``: its action ran without a tool error (a team's summary counts);
    ``valid``: it held a valid tool call (also rejected, edited or failing ones).
    """
    from dgym_tui.episode.records import Turn

    if record.get("summary"):
        return True
    turn = Turn.from_record(record)
    if targets == "valid":
        return not turn.invalid
    return (turn.action is not None and turn.proposed == turn.action
            and turn.result is not None and not turn.result.error)


def _new_messages(seen: list[str], sent: list[str], trimmed: bool) -> list[str]:
    """The ids ``sent`` adds to the conversation ``seen`` so far (repeats included).

    A prompt holds the whole history, so an untrimmed one extends the previous:
    what is new is what follows its length. A trimmed one holds the system,
    the task and the latest messages: the new ones follow the longest end of
    ``seen`` that its tail starts with."""
    if not trimmed:
        return sent[len(seen):] if sent[:len(seen)] == seen else \
            [i for i in sent if i not in seen]
    tail = sent[2:]
    for overlap in range(min(len(tail), len(seen)), 0, -1):
        if seen[-overlap:] == tail[:overlap]:
            return tail[overlap:]
    return tail


def _seen_conversation(traj: Trajectory, role: str | None = None, targets: str = "clean"
                       ) -> tuple[list[dict[str, Any]], list[str]]:
    """Every message the model saw over the episode (of one ``role``'s steps for a
    team), in order, a message repeated in the history as often as it was
    (the same invalid reply and correction three times: three times), plus the
    last reply. Replies that are not targets (see :func:`_is_target`) carry
    ``"weight": 0``. Returns ``(messages, names of the tools offered)``."""
    records = [r for r in traj.steps if r.get("prompt")
               and (role is None or (r.get("raw") or {}).get("role") == role)]
    for record in traj.steps:  # a team's handoff: the call that gave the summary
        handoff = (record.get("raw") or {}).get("handoff") or {}
        if role and handoff.get("from") == role and handoff.get("prompt"):
            records.append({"step": record["step"], "actor": "agent", "decision": "auto",
                            "prompt": handoff["prompt"], "summary": True,
                            "raw": {"role": role, "content": handoff.get("summary", "")}})
    table = _message_table(traj)
    order: list[str] = []
    tools: list[str] = []
    for record in records:
        prompt = record["prompt"]
        sent = list(prompt["sent"])
        if prompt.get("trimmed"):
            sent = sent[:2] + sent[3:]  # the note that replaced the dropped messages
        order.extend(_new_messages(order, sent, bool(prompt.get("trimmed"))))
        tools.extend(name for name in prompt.get("tools") or [] if name not in tools)
    messages = [dict(table[i]) for i in order]
    last = records[-1] if records else {}
    raw = dict(last.get("raw") or {})
    if raw:
        reply = {"role": "assistant", "content": raw.get("content") or ""}
        if raw.get("tool_calls"):
            reply["tool_calls"] = raw["tool_calls"]
        messages.append(reply)
    # the n-th assistant message is the reply of the n-th step of this model
    replies = [m for m in messages if m["role"] == "assistant"]
    for message, record in zip(replies, records, strict=False):
        if not _is_target(record, targets):
            message["weight"] = 0
    return messages, tools


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
            pairs = [{"prompt": (rebuild_prompt(traj, record["step"])[0]
                                 if record.get("prompt") and "prompt" in header else None),
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


def sft_conversations(traj: Trajectory, targets: str = "clean") -> list[dict[str, Any]]:
    """The SFT conversations of one episode: one per role for a team agent
    (``info_seek_agent``: the seeker's, then the fixer's), else one (:func:`to_sft`)."""
    roles = (traj.header.get("prompt") or {}).get("roles")
    return ([to_sft(traj, role=role, targets=targets) for role in roles] if roles
            else [to_sft(traj, targets=targets)])


def to_sft(traj: Trajectory, system_prompt: str = SYSTEM_PROMPT,
           role: str | None = None, targets: str = "clean") -> dict[str, Any]:
    """Convert one trajectory to a chat-format conversation for supervised fine-tuning.

    Args:
        traj: a trajectory.
        system_prompt: the system message text when the trajectory has no
            recorded prompt (a person's session, an older trajectory).
        role: for a team agent's episode, whose conversation (``meta.role``).
        targets: which of an LLM agent's replies are training targets: ``clean``
            (its action ran without a tool error) or ``valid`` (any valid tool
            call); the others carry ``"weight": 0``.

    Returns:
        ``{"messages": [...], "tools": [schemas], "meta": {"task", "resolved",
        "steps", "actors"}}``. Messages follow the OpenAI chat format: the
        assistant message holds ``tool_calls`` (arguments as a JSON string),
        the ``tool`` message answers it by ``tool_call_id``.
    """
    header = traj.header
    footer = traj.footer or {}
    task = header.get("task") or {}
    actors = {record["actor"] for record in traj.steps if record.get("action")}
    meta = {"task": task.get("name") or task.get("path") or "",
            "resolved": bool(footer.get("resolved", False)), "finished": traj.finished,
            "steps": len(traj.steps)}
    if header.get("prompt") and any(record.get("prompt") for record in traj.steps):
        prompt = header["prompt"]
        messages, offered = _seen_conversation(traj, role, targets)
        schemas = {t["function"]["name"]: t for t in prompt.get("tools") or []}
        extra = {"role": role} if role else {}
        return {"messages": messages,  # text mode: the tools are described in the prompt
                "tools": [schemas[name] for name in offered if name in schemas],
                "meta": {**meta, "actors": sorted(actors), "agent": prompt.get("agent"),
                         "tool_calling": prompt.get("tool_calling"), **extra}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": header["initial"]["observation"]},
    ]
    for record in traj.steps:
        action = record.get("action")
        if action is None:
            continue
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
    return {"messages": messages, "tools": header.get("tools") or [],
            "meta": {**meta, "actors": sorted(actors)}}


def find_trajectories(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """Expand files and folders (searched recursively for ``*.jsonl``, review files
    left out) into trajectory paths.

    Raises:
        TrajectoryError: a path does not exist, or a folder holds no ``.jsonl`` file.
    """
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files = sorted(f for f in path.rglob("*.jsonl") if f.name != REVIEWS_FILE)
            if not files:
                raise TrajectoryError(f"{path}: no .jsonl trajectory in this folder")
            found.extend(files)
        elif path.is_file():
            found.append(path)
        else:
            raise TrajectoryError(f"{path}: no such trajectory file or folder")
    return found


def export(paths: list[str | os.PathLike[str]], fmt: str,
           output: str | os.PathLike[str] | None = None,
           targets: str = "clean") -> tuple[str, int]:
    """Export trajectories.

    Args:
        paths: trajectory files or folders of them.
        fmt: ``"debug-gym"`` or ``"sft"``.
        output: file to write; None returns the text only.
            ``debug-gym`` writes one JSON document (a list when there are
            several episodes); ``sft`` writes one JSON line per episode (per
            role of a team agent's episode).
        targets: for ``sft``, which replies are targets (see :func:`to_sft`).

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
        text = "".join(json.dumps(conversation, ensure_ascii=False) + "\n"
                       for t in trajectories
                       for conversation in sft_conversations(t, targets))
    else:
        docs = [to_debug_gym(t) for t in trajectories]
        text = json.dumps(docs[0] if len(docs) == 1 else docs, indent=2, ensure_ascii=False) + "\n"
    if output is not None:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text, encoding="utf-8")
    return text, len(trajectories)
