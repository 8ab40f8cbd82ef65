"""Replay mode: browse a recorded trajectory step by step, and fork it into a live session."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from textual import on, work
from textual.message import Message
from textual.message_pump import MessagePump

from dgym_tui.core.errors import first_line
from dgym_tui.tui.bridge import SessionBridge, start_location
from dgym_tui.tui.messages import SourceText, WorkspaceState
from dgym_tui.tui.replay_model import applied_notes
from dgym_tui.tui.widgets.diff_view import DiffView


@dataclass
class Forked(Message):
    """Replay's fork is live: ``session`` (started) and its state read in the worker."""

    session: Any
    state: WorkspaceState
    source: SourceText | None
    inspection: Any


class ReplayMode(MessagePump):
    """Mixin of :class:`~dgym_tui.tui.app.DgymApp`: shows the state after each recorded step
    (``h`` / ``l`` / ``0`` / ``$``) and forks a live session at the shown step (``f``).
    """

    def _mount_replay(self) -> None:
        model = self.replay
        self.source_view.interactive = False
        self.sub_title = f"replay · {model.task_name}"
        self.status.update_status(task=model.task_name, budget=len(model), mode="replay")
        self._refresh_tree(model.initial)
        self.show_step(0)

    def show_step(self, step: int) -> None:
        """Replay: show the state after ``step`` (0 = reset; clamped to the trajectory)."""
        model = self.replay
        step = max(0, min(step, len(model)))
        self.step_index = step
        result = model.result_at(step)
        if result.frame is not None and _rewritten_since_pdb(model.turns[:step]):
            result = replace(result, frame=None)  # as live: pdb is on old code
        self._last_result = result
        self.transcript.set_turns(model.turns[:step])
        turn = model.turns[step - 1] if step else None
        rewrite = turn.action.arguments if turn and turn.action and \
            turn.action.name == "rewrite" else {}
        start = rewrite.get("start")
        if result.frame is not None:
            where = result.frame
        elif isinstance(rewrite.get("path"), str):  # the file the step changed
            where = (rewrite["path"], start if isinstance(start, int) else 1)
        elif self._current_path is not None:  # no frame: keep the file in view
            where = (self._current_path, self.source_view.cursor_line)
        else:
            where = start_location(model.initial, model.files())
        if where is None:
            self.source_view.load(None, "")
        else:
            self._open(*where)
        self._refresh_marks(result)
        self._refresh_tree(result)
        self.debug_panel.show(None, result, replay=True)
        self._update_status(result)
        extra = f"replay step {step}/{len(model)}"
        if step == len(model) and model.trajectory.footer:
            extra += f" · {model.trajectory.footer.get('reason') or 'finished'}"
            if applied_notes(model.trajectory.footer):
                extra += " · applied (w)"
        self.status.update_status(step=step, extra=extra)
        self.pdb_console.log_widget.clear()
        if turn is None:
            self.pdb_console.write(model.initial.observation)
        else:
            self._write_turn(turn)
            self.pdb_console.write(turn.observation)
        for note in applied_notes(model.trajectory.footer, step):
            self.pdb_console.write(note, style="bold green")

    def action_replay_step(self, delta: int) -> None:
        if self.replay is not None:
            self.show_step(self.step_index + delta)

    def action_replay_goto(self, step: int) -> None:
        if self.replay is not None:
            self.show_step(len(self.replay) if step < 0 else step)

    def action_branch(self) -> None:
        session = self.session
        if session is not None and self.started and not session.done and not self.busy:
            self._set_busy(f"branching at step {len(session.turns)}")
            self._fork(self._branch)

    def action_fork(self) -> None:
        if self.replay is None:
            return
        if self.fork_factory is None:
            self.notify("fork is not available for this trajectory", severity="warning")
            return
        if self.busy:
            return
        self._set_busy(f"forking at step {self.step_index}")
        step = self.step_index
        self._fork(lambda: self.fork_factory(step))

    def _branch(self) -> Any:
        """The live episode's branch (``Session.fork``: nothing re-executed), recording to
        ``<trajectory>.fork<N>.jsonl`` next to the parent's; the parent then ends as
        ``forked`` and its environment closes (the app goes on in the branch)."""
        parent = self.session
        path = parent.trajectory_path
        out = None if path is None else Path(path).with_name(
            f"{Path(path).stem}.fork{len(parent.turns)}.jsonl")
        mode = "approve" if parent.mode == "auto" else parent.mode
        session = parent.fork(out, policy=parent.policy, mode=mode)
        parent.unsubscribe(self._bridge)  # its end is not the app's
        parent.finish("forked")
        parent.close()
        return session

    @work(thread=True, group="session", exit_on_error=False)
    def _fork(self, make: Callable[[], Any]) -> None:
        """Build the fork with ``make()`` (a replay's re-executes the recorded actions) like
        any session call: quitting meanwhile waits for it, then closes what it built."""
        self._calling(True)
        try:
            session = make()
            if self._session_closed:  # quit while forking: nobody will show it
                session.finish("quit")
                session.close()
                return
            bridge = SessionBridge(session, self.post_message, lambda: None)
            state, source, inspection = bridge.snapshot()
        except Exception as exc:  # noqa: BLE001  shown to the user
            self._to_ui(self._fork_failed, first_line(exc))
            return
        finally:
            self._calling(False)
        self.post_message(Forked(session, state, source, inspection))

    def _fork_failed(self, text: str) -> None:
        self._set_busy(None)
        self.notify(f"fork failed: {text}", severity="error")

    @on(Forked)
    def _go_live(self, message: Forked) -> None:
        """Switch from replay (or the branched parent) to a live (already started) session."""
        session = message.session
        branched = self.replay is None
        replay, self.replay = self.replay, None
        if replay is not None:
            replay.close()
        self._unfreeze_gc()
        self.source_view.interactive = True
        self.session = session
        self.started = True
        self._set_busy(None)
        self.sub_title = f"fork · {session.task_name}"
        bridge = self._subscribe(session)
        bridge.generation = session.generation
        self._workspace = message.state
        self.transcript.set_turns(list(session.turns))
        last = session.last or session.initial
        self._last_result = last
        self._refresh_tree(last)
        self.query_one(DiffView).set_patch(message.state.patch or "")
        if message.source is not None:
            line = last.frame[1] if last.frame and last.frame[0] == message.source.path else 1
            self._open(message.source.path, line, message.source)
        self._refresh_marks(last)
        self._inspection = message.inspection
        self._show_debug(message.inspection, last)
        self.status.update_status(task=session.task_name, budget=session.max_steps,
                                  mode=session.mode, agent=session.policy is not None,
                                  sandbox=session.terminal_name,  # the recorded terminal
                                  extra=f"forked at step {len(session.turns)}")
        self._update_status(last)
        if branched:
            self.pdb_console.write(f"branched at step {len(session.turns)}: the episode forked as "
                                   f"it stood (pdb at the same frame); the parent's trajectory "
                                   f"ended as 'forked'; live now", style="bold")
        else:
            self.pdb_console.write(f"forked: {len(session.turns)} recorded steps re-executed; "
                                   "live now", style="bold")
        notice = fork_source_notice(getattr(session, "config", None) or {})
        if notice is not None:
            self.can_apply = False  # the fork's source is a rebuilt copy, not the original
            self.pdb_console.write(notice, style="bold yellow")
            self.notify(notice, severity="warning", timeout=12)
        self.refresh_bindings()


def fork_source_notice(config: dict[str, Any]) -> str | None:
    """What a fork must say about its source (``config["forked_source"]``, set by
    :func:`dgym_tui.launch.replay.fork` when the original changed since the recording),
    or None when it started from the original as recorded."""
    forked = config.get("forked_source")
    if not isinstance(forked, dict):
        return None
    restored = [str(name) for name in forked.get("restored") or ()]
    changed = [str(name) for name in forked.get("changed_since") or ()]
    parts = ["the original changed since this recording:"]
    if restored:
        parts.append(f"the fork starts from the recorded version of {', '.join(restored[:5])}"
                     + (f" and {len(restored) - 5} more" if len(restored) > 5 else ""))
    if changed:
        parts.append(("and " if restored else "") + "uses today's version of "
                     + ", ".join(changed[:5]) + (f" and {len(changed) - 5} more"
                                                 if len(changed) > 5 else "")
                     + " (its recorded start is unknown)")
    parts.append("· w is off (the fork works on a rebuilt copy)")
    return " ".join(parts)


def _rewritten_since_pdb(turns: list[Any]) -> bool:
    """True when a rewrite ran after the last pdb step of ``turns`` (the recorded frame is
    then pdb's place in the old code, which the live app no longer marks)."""
    for turn in reversed(turns):
        name = turn.action.name if turn.action is not None else None
        if name == "pdb":
            return False
        if name == "rewrite" and turn.result is not None and not turn.result.error:
            return True
    return False
