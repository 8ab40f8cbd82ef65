"""When an episode is stuck: the agent repeats itself and nothing changes.

Two kinds of repetition count, both over the agent's last turns in a row:
the same invalid reply (same text and calls), and the same executed action
(same tool and arguments) with the same observation, pdb's breakpoint numbers
aside (the same breakpoint set again is renumbered). :func:`repetition`
measures them; the session warns the agent once, one repetition before the
limit, and ends the episode as ``stuck`` at the limit.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dgym_tui.episode.records import Turn

STUCK_REPEATS = 3  # the same invalid reply / action + observation this many times ends it


def _reply_key(turn: Turn) -> str:
    """The model's reply of a turn, without what differs between identical replies (call ids)."""
    raw = turn.raw or {}
    calls = [(c.get("function") or {}) for c in raw.get("tool_calls") or []]
    return json.dumps([raw.get("content") if raw else turn.reasoning,
                       [(c.get("name"), c.get("arguments")) for c in calls]], sort_keys=True)


# pdb numbers every breakpoint it sets: setting the same one again changes only the numbers
BREAKPOINT_NUMBER = re.compile(r"\b([Bb]reakpoint) \d+\b")


def _action_key(turn: Turn) -> str | None:
    """The executed agent action and its observation (breakpoint numbers left out), or
    None for any other turn."""
    if turn.actor != "agent" or turn.action is None or turn.result is None:
        return None
    observation = BREAKPOINT_NUMBER.sub(r"\1 #", str(turn.result.observation))
    return json.dumps([turn.action.name, turn.action.arguments, observation],
                      sort_keys=True, default=str)


def _describe(turn: Turn) -> str:
    if turn.invalid:
        return "the same invalid reply"
    arguments = json.dumps(turn.action.arguments, sort_keys=True, default=str)
    return f"the same action `{turn.action.name} {arguments}` with the same observation"


def repetition(turns: list[Turn]) -> tuple[int, str]:
    """How often the last turn repeats the turns right before it.

    Args:
        turns: the episode's turns, oldest first.

    Returns:
        ``(count, what)``: the number of turns at the end that are all the same
        invalid reply, or all the same executed agent action with the same
        observation (1 when the last turn repeats nothing, 0 without turns or
        when the last turn is neither); ``what`` describes the repeated thing.
    """
    if not turns:
        return 0, ""
    last = turns[-1]
    key = (lambda t: _reply_key(t) if t.invalid else None) if last.invalid else _action_key
    wanted = key(last)
    if wanted is None:
        return 0, ""
    count = 0
    for turn in reversed(turns):
        if key(turn) != wanted:
            break
        count += 1
    return count, _describe(last)


def repetition_warning(count: int, what: str, limit: int) -> str:
    """The note the agent reads one repetition before ``limit`` ends the episode."""
    return (f"This is {what} {count} times in a row. Do something different: "
            f"{limit} times in a row ends the episode as stuck.")
