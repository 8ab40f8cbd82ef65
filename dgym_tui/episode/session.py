"""The turn loop shared by every front end: propose -> decide -> step -> record.

A :class:`Session` drives one episode of a :class:`~dgym_tui.core.env.RepoEnv`.
Each turn, the policy proposes an action; depending on the mode a person
decides about it (approve, edit, reject with a note, or take over), the
environment executes it and the turn is appended to ``turns``, written to the
trajectory file and announced to subscribers as events (:mod:`dgym_tui.episode.events`).

Modes (settable at any turn through ``session.mode``):

- ``"human"``: the person acts (:meth:`Session.act`); no policy is asked.
- ``"approve"``: :meth:`Session.propose`, then :meth:`approve` / :meth:`edit` /
  :meth:`reject` / :meth:`act` (take over for this step) / :meth:`take_over`.
- ``"auto"``: :meth:`Session.run` loops propose -> execute until the episode
  ends, the step budget is spent, the mode changes or a pause is requested.

Recording rules (actor and decision, invalid proposals, the step budget, stuck
episodes, footer reasons): docs/internals.md.

The loop holds no UI: it is safe to drive from a worker thread. Environment
access is serialized by a lock; subscribers are called from the thread that
drives the loop and must hand work over to their own thread themselves.
"""

from __future__ import annotations

import logging
import platform
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dgym_tui import __version__
from dgym_tui.core.types import StepResult, ToolCall
from dgym_tui.episode.stuck import STUCK_REPEATS, repetition, repetition_warning

if TYPE_CHECKING:  # the records, events and trajectory writer: imported where first used
    from dgym_tui.core.env import RepoEnv
    from dgym_tui.episode.events import SessionEvent
    from dgym_tui.episode.policy import Policy
    from dgym_tui.episode.records import Proposal, Turn, Usage, WorkingCopy
    from dgym_tui.episode.trajectory import TrajectoryWriter

log = logging.getLogger(__name__)

#: The note of a proposal dropped by :meth:`Session.take_over` (a rejected turn).
TAKEN_OVER = "taken over: the person continues in human mode; this proposal was not run"
#: The header's initial observation of an episode that ended before its start (the reset:
#: copy, setup commands, first eval) returned: the footer then still has a header to follow.
NOT_STARTED = "(the episode ended before its start finished: no first eval was recorded)"

MODES = ("human", "approve", "auto")
#: An episode's step budget wherever an agent may act (dgym run, dgym-tui, dgym mcp, the API),
#: so that their trajectories, and forks of them, spend the same budget.
DEFAULT_MAX_STEPS = 50
#: The budget where only a person types the actions (dgym play, study sessions): a person
#: steps through pdb one command at a time, and spends no tokens doing so.
PERSON_MAX_STEPS = 200


class SessionError(Exception):
    """A session method was called at the wrong time (episode over, no policy, ...)."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Session:
    """One episode: the environment, an optional policy, a mode and a step budget.

    Args:
        env: a RepoEnv (not yet reset; :meth:`start` resets it). The session
            does not close it.
        policy: who proposes actions in ``approve`` / ``auto`` modes (None for
            a purely human session).
        mode: ``"human"``, ``"approve"`` or ``"auto"``.
        max_steps: step budget (turns, rejected ones included); the episode
            ends with reason ``"max_steps"`` when it is spent.
        trajectory_path: where to write the JSONL trajectory (None: no file).
        task_name: the task's name shown to people (e.g. ``"mini/shopping_cart"``);
            the header's ``task.name`` when ``task`` gives none.
        config: the run configuration, stored in the header (JSON-ready dict).
        stop_on_resolved: end the episode (reason ``"resolved"``) as soon as a
            step reports ``resolved``; otherwise only submit / budget end it.
        task: the task record for the header (``Task.to_dict()``, which
            replay and fork read back; :func:`dgym_tui.launch.open.open_session`
            passes it).
        environment: the environment options for the header (tools,
            timeouts) that are not part of the task.
        stuck_repeats: identical invalid replies, or identical actions with the
            same observation, in a row that end the episode as ``stuck``.

    Raises:
        ValueError: unknown mode, or ``approve`` / ``auto`` without a policy,
            or ``max_steps < 1``.
    """

    def __init__(self, env: RepoEnv, policy: Policy | None = None, mode: str = "human",
                 max_steps: int = DEFAULT_MAX_STEPS, trajectory_path: Any = None, task_name: str = "",
                 config: dict[str, Any] | None = None, stop_on_resolved: bool = False,
                 task: dict[str, Any] | None = None,
                 environment: dict[str, Any] | None = None,
                 stuck_repeats: int = STUCK_REPEATS) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.env = env
        self.policy = policy
        self.max_steps = int(max_steps)
        self.trajectory_path = trajectory_path
        self.task_name = task_name
        self.config = dict(config or {})
        self.stop_on_resolved = stop_on_resolved
        self.stuck_repeats = max(2, int(stuck_repeats))
        self.task_record = {"name": task_name, **(task or {})}
        self.environment = dict(environment or {})
        self.turns: list[Turn] = []
        self.last: StepResult | None = None
        self.initial: StepResult | None = None
        self.done = False
        #: Each apply_to_source before the footer: {"after_step", "files", "at"}.
        self.applied: list[dict[str, Any]] = []
        self.reason = ""
        self.footer: dict[str, Any] | None = None
        self.pending: Proposal | None = None
        self._usage: Usage | None = None  # made by the first read of ``usage``
        self._check_mode(mode)
        self._mode = mode
        self._subscribers: list[Callable[[SessionEvent], None]] = []
        #: serializes access to the environment: hold it to read the environment's
        #: state (files, patch) from a thread of your own
        self.lock = threading.RLock()
        self._pause = threading.Event()
        self._abort_reason: str | None = None
        self._writer: TrajectoryWriter | None = None
        self._header_lock = threading.Lock()  # the header is written once (start or finish)
        self._propose_time: dict[int, float] = {}
        self._started = time.monotonic()
        # the patch after the last step that changed a file: the footer falls back
        # to it when the environment was closed under the session (SIGTERM cleanup)
        self._patch: str | None = None
        self._patch_generation = 0  # RepoEnv.generation after reset
        # git blob id of the start of each file whose starting text is recorded
        # (None: created in the session); applying the changes to the original moves it
        self._base_ids: dict[str, str | None] = {}
        # the new working copy while start() runs the first eval (holding the lock)
        self._starting_copy: Any = None

    # -- mode ---------------------------------------------------------------
    def _check_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown mode {mode!r}; use one of {', '.join(MODES)}")
        if mode != "human" and self.policy is None:
            raise ValueError(f"mode {mode!r} needs a policy (an agent); use mode 'human'")

    @property
    def mode(self) -> str:
        """``"human" | "approve" | "auto"``; setting it emits ModeChanged."""
        return self._mode

    @mode.setter
    def mode(self, value: str) -> None:
        self._check_mode(value)
        if value != self._mode:
            from dgym_tui.episode.events import ModeChanged
            self._mode = value
            self._emit(ModeChanged(value))

    @property
    def usage(self) -> Usage:
        """Tokens and money spent so far, undecided proposals' included once they are
        decided or dropped (a :class:`~dgym_tui.episode.records.Usage`; zeros at first)."""
        if self._usage is None:  # made here: the records are not imported before a reset
            from dgym_tui.episode.records import Usage
            self._usage = Usage()
        return self._usage

    @usage.setter
    def usage(self, value: Usage) -> None:
        self._usage = value

    @property
    def steps_left(self) -> int:
        """Turns left in the step budget (never negative)."""
        return max(0, self.max_steps - len(self.turns))

    # -- events -------------------------------------------------------------
    def subscribe(self, callback: Callable[[SessionEvent], None]) -> None:
        """Call ``callback(event)`` for every :data:`SessionEvent`, from the loop's thread.

        A callback that raises is logged and otherwise ignored: a front-end bug
        must not break the episode.
        """
        self._subscribers.append(callback)

    def unsubscribe(self, callback: Callable[[SessionEvent], None]) -> None:
        """Stop calling ``callback`` (one that was never subscribed is ignored)."""
        if callback in self._subscribers:
            self._subscribers.remove(callback)

    def _emit(self, event: SessionEvent) -> None:
        for callback in list(self._subscribers):
            try:
                callback(event)
            except Exception:
                log.exception("session subscriber failed on %s", type(event).__name__)

    # -- episode ------------------------------------------------------------
    def start(self) -> StepResult:
        """Reset the environment, tell the policy about the episode, write the header.

        Returns:
            The StepResult of ``env.reset()``.

        Raises:
            Whatever ``env.reset()`` raises (e.g. the terminal cannot start);
            an ``"error"`` event is emitted first.
        """
        from dgym_tui.episode.events import EpisodeStarted, EpisodeStarting, LoopFailed

        def copied() -> None:
            self._starting_copy = self.env.workspace
            self._emit(EpisodeStarting(getattr(self.env, "eval_timeout", None)))

        try:
            with self.lock:
                result = self.env.reset(on_copy=copied, ready=False)
        except Exception as exc:
            self._emit(LoopFailed(f"reset failed: {exc}"))
            raise
        finally:
            self._starting_copy = None
        self.initial = self.last = result
        self._started = time.monotonic()
        self._begin(result)
        self._emit(EpisodeStarted(result))
        # the first step's preparations once the result is out (a front end shows it
        # meanwhile): 40-70 ms that the result waited for
        try:
            with self.lock:
                self.env.get_ready()
        except Exception:  # noqa: BLE001  the first step builds the checks and says what failed
            log.exception("the environment could not get ready for the first step")
        return result

    def _begin(self, initial: StepResult) -> None:
        """Tell the policy about the episode and write the trajectory's header."""
        if self.policy is not None:
            from dgym_tui.episode.examples import task_examples
            from dgym_tui.episode.records import EpisodeInfo
            self.policy.reset(EpisodeInfo(
                task=self.env.task or "",
                instructions=self.env.instructions(),
                tool_schemas=self.env.tool_schemas(),
                initial_observation=initial.observation,
                examples=task_examples(self.env.workspace, initial.eval),  # type: ignore[arg-type]
                remote_tools=[name for name, tool in self.env.tools.items() if tool.server]))
        self._write_header(initial)

    def _write_header(self, initial: StepResult) -> None:
        """Open the trajectory and write its header, once (thread-safe; no file: nothing)."""
        with self._header_lock:
            if self.trajectory_path is None or self._writer is not None:
                return
            from dgym_tui.episode.trajectory import TrajectoryWriter
            self._writer = TrajectoryWriter(self.trajectory_path)
            self._writer.write_header(self._header(initial))

    def fork(self, trajectory_path: Any = None, policy: Policy | None = None,
             mode: str = "human", max_steps: int | None = None) -> Session:
        """Branch the live episode here: a new session over ``env.fork()`` that goes on alone.

        Nothing is executed again: the environment is forked as it stands
        (files, breakpoints, step count, pdb at its frame; see
        ``RepoEnv.fork``) and the turns so far are copied. The branch's
        trajectory is self-contained: this session's header, whose
        ``config.forked_from`` is ``{"path": this trajectory's path or None,
        "step": the number of turns, "live": true}``, then the copied turns.

        Args:
            trajectory_path: where the branch's trajectory goes (None: no file).
            policy: who proposes in the branch (None: a person).
            mode: the branch's mode (``human``, ``approve``, ``auto``).
            max_steps: the branch's step budget, copied turns included; None keeps
                this one's, raised if needed so at least one new step fits.

        Returns:
            The branch, started (the caller closes ``branch.env``).

        Raises:
            SessionError: the session has not started, or its environment is closed.
            ValueError: as :class:`Session` (mode without a policy, ...).
            Whatever ``RepoEnv.fork`` raises (e.g. the terminal cannot start).
        """
        if self.initial is None:
            raise SessionError("the session has not started; call start() first")
        budget = max(max_steps or self.max_steps, len(self.turns) + 1)
        config = {**self.config, "forked_from": {
            "path": str(self.trajectory_path) if self.trajectory_path is not None else None,
            "step": len(self.turns), "live": True},
            "policy": getattr(policy, "name", None) if policy else "human",
            "mode": mode, "max_steps": budget}
        with self.lock:
            if self.env.workspace is None:
                raise SessionError("the environment is closed")
            env = self.env.fork()
        try:
            branch = Session(env, policy, mode, budget, trajectory_path, self.task_name, config,
                             self.stop_on_resolved, task=dict(self.task_record),
                             environment=dict(self.environment),
                             stuck_repeats=self.stuck_repeats)
            branch.initial, branch.last = self.initial, self.last
            branch.turns, branch.usage = list(self.turns), self.usage
            branch._patch, branch._patch_generation = self._patch, self._patch_generation
            branch._base_ids = dict(self._base_ids)
            branch._begin(self.initial)
            if branch._writer is not None:
                for turn in branch.turns:
                    branch._writer.write_step(turn.to_record())
        except BaseException:
            env.close()
            raise
        return branch

    def _header(self, initial: StepResult) -> dict[str, Any]:
        config = dict(self.config)
        config.setdefault("policy", self.policy.name if self.policy else "human")
        config.setdefault("mode", self.mode)
        config.setdefault("max_steps", self.max_steps)
        config.setdefault("stop_on_resolved", self.stop_on_resolved)
        versions = {"dgym_tui": __version__, "python": sys.version.split()[0],
                    "platform": platform.platform()}
        header = {"task": self.task_record, "config": config, "tools": self.env.tool_schemas(),
                  "environment": self.environment, "versions": versions, "started_at": _now(),
                  "initial": initial.to_dict(), **self._start_files()}
        prompt = self.policy.prompt_header() if self.policy is not None else None
        if prompt is not None:  # an LLM agent: its system prompt, task message, tools
            header["prompt"] = prompt
        return header

    def _start_files(self) -> dict[str, Any]:
        """Header keys replay starts from: ``files`` (visible file -> git blob id at the
        start) and ``readonly_files``."""
        ws = self.env.workspace
        if ws is None:
            return {}
        files = ws.start_ids()
        return {"files": files, "readonly_files": sorted(f for f in files if ws.is_readonly(f))}

    def _require_running(self) -> None:
        if self.initial is None:
            raise SessionError("the session has not started; call start() first")
        if self.done:
            raise SessionError(f"the episode is over ({self.reason}); start a new session")

    def propose(self) -> Proposal:
        """Ask the policy for the next action; emits Proposing then Proposed.

        Returns:
            The Proposal (also kept as ``pending`` until it is decided).

        Raises:
            SessionError: not started, episode over, or no policy.
            Whatever the policy raises (an ``"error"`` event is emitted first).
        """
        self._require_running()
        if self.policy is None:
            raise SessionError("this session has no policy to propose actions")
        from dgym_tui.episode.events import LoopFailed, Proposed, Proposing
        self._emit(Proposing())
        t0 = time.monotonic()
        try:
            proposal = self.policy.propose(list(self.turns))
        except Exception as exc:
            self._emit(LoopFailed(f"{self.policy.name} failed: {exc}"))
            raise
        self._propose_time = {id(proposal): time.monotonic() - t0}
        self.pending = proposal
        self._emit(Proposed(proposal))
        return proposal

    def _think_time(self, proposal: Proposal | None) -> float:
        return self._propose_time.pop(id(proposal), 0.0) if proposal is not None else 0.0

    def approve(self, proposal: Proposal) -> Turn:
        """Execute the proposal as is (decision ``"auto"`` in auto mode, else ``"approved"``).

        A proposal without an action is recorded as an invalid, rejected turn.

        Raises:
            SessionError: not started or episode over.
        """
        self._require_running()
        if proposal.action is None:
            return self._record_rejected(proposal, None, "",
                                         error=proposal.error or "no tool call in the reply")
        human = self.policy is not None and self.policy.actor == "human"
        decision = "manual" if human else ("auto" if self.mode == "auto" else "approved")
        return self._execute("human" if human else "agent", decision,
                             None if human else proposal.action, proposal.action, proposal)

    def edit(self, proposal: Proposal, action: ToolCall) -> Turn:
        """Execute ``action`` instead of the proposed one (decision ``"edited"``, actor human).

        Raises:
            SessionError: not started or episode over.
        """
        self._require_running()
        return self._execute("human", "edited", proposal.action, action, proposal)

    def reject(self, proposal: Proposal, note: str) -> Turn:
        """Refuse the proposal; nothing is executed. ``note`` is told back to the agent.

        Raises:
            SessionError: not started or episode over.
        """
        self._require_running()
        return self._record_rejected(proposal, proposal.action, note)

    def act(self, action: ToolCall) -> Turn:
        """Execute the person's own action (actor ``"human"``, decision ``"manual"``).

        Allowed in any mode; a pending proposal is dropped (its tokens still count).

        Raises:
            SessionError: not started or episode over.
        """
        self._require_running()
        self._drop_pending()
        return self._execute("human", "manual", None, action, None)

    def _drop_pending(self) -> None:
        """Forget the undecided proposal; the tokens spent on it stay in ``usage``."""
        if self.pending is not None:
            self.usage = self.usage + self.pending.usage
        self.pending = None

    def replay_turn(self, turn: Turn) -> Turn:
        """Re-record a turn of another trajectory (replay / fork).

        The turn's action, if any, is executed again; actor, decision,
        proposed action, note, reasoning and usage are copied. Rejected turns
        execute nothing.

        Returns:
            The new Turn (its ``result`` is the fresh StepResult).

        Raises:
            SessionError: not started or episode over.
        """
        from dgym_tui.episode.records import Proposal, Turn
        self._require_running()
        if turn.action is None:
            copy = Turn(index=len(self.turns) + 1, actor=turn.actor, decision=turn.decision,
                        proposed=turn.proposed, action=None, note=turn.note, error=turn.error,
                        reasoning=turn.reasoning, usage=turn.usage, raw=turn.raw,
                        prompt=turn.prompt)
            return self._record(copy)
        proposal = Proposal(action=turn.proposed, reasoning=turn.reasoning, usage=turn.usage,
                            raw=turn.raw, prompt=turn.prompt)
        return self._execute(turn.actor, turn.decision, turn.proposed, turn.action, proposal,
                             note=turn.note)

    def take_over(self) -> Turn | None:
        """Switch to ``human`` mode. A pending proposal is recorded as a rejected turn
        whose note is :data:`TAKEN_OVER` (nothing is executed; its tokens count there).

        Returns:
            That turn, or None when no proposal was pending.
        """
        pending, self.pending = self.pending, None
        self.mode = "human"
        if pending is None or self.done or self.initial is None:
            if pending is not None:
                self.usage = self.usage + pending.usage
            return None
        return self._record_rejected(pending, pending.action, TAKEN_OVER)

    def abort(self, reason: str = "interrupted") -> None:
        """Mark the episode as cut short (thread-safe): call it BEFORE closing the
        environment under a running step. That step is still recorded, but the
        episode then ends with ``reason`` instead of ``"submitted"`` or
        ``"resolved"``, which a killed eval must not claim."""
        self._abort_reason = reason
        self._pause.set()

    def request_pause(self) -> None:
        """Ask :meth:`run` to stop after the current turn (thread-safe)."""
        self._pause.set()

    @property
    def pause_requested(self) -> bool:
        """True when a pause was requested and :meth:`run` has not restarted since."""
        return self._pause.is_set()

    def _should_stop(self, should_pause: Callable[[], bool]) -> bool:
        return (self.done or self.mode != "auto" or self._pause.is_set()
                or bool(should_pause()))

    def run(self, should_pause: Callable[[], bool] = lambda: False) -> None:
        """Auto loop: propose and execute until the episode ends or the loop must stop.

        Stops (returning normally) when the episode is done, the mode is no
        longer ``auto``, ``should_pause()`` returns True, or
        :meth:`request_pause` was called. A proposal obtained just before a
        stop is left in ``pending`` for the person to decide.

        Raises:
            SessionError: not started, or not in auto mode at the start.
            Whatever the policy or the environment raises.
        """
        self._pause.clear()
        self._require_running()
        if self.mode != "auto":
            raise SessionError(f"run() needs mode 'auto' (the mode is {self.mode!r})")
        while not self._should_stop(should_pause):
            proposal = self.pending if self.pending is not None else self.propose()
            if self._should_stop(should_pause):
                break
            self.approve(proposal)

    def _record_rejected(self, proposal: Proposal, proposed: ToolCall | None, note: str,
                         error: str = "") -> Turn:
        """Record an agent turn with decision ``"rejected"``: nothing is executed."""
        from dgym_tui.episode.records import Turn
        turn = Turn(index=len(self.turns) + 1, actor="agent", decision="rejected",
                    proposed=proposed, action=None, note=note, error=error,
                    reasoning=proposal.reasoning, usage=proposal.usage,
                    wall_time=self._think_time(proposal), raw=proposal.raw,
                    prompt=proposal.prompt)
        return self._record(turn)

    def _execute(self, actor: str, decision: str, proposed: ToolCall | None,
                 action: ToolCall, proposal: Proposal | None, note: str = "") -> Turn:
        from dgym_tui.episode.events import LoopFailed, Stepping
        from dgym_tui.episode.records import Turn, Usage
        self._emit(Stepping(action))
        t0 = time.monotonic()
        try:
            with self.lock:
                result = self.env.step(action)
                patch = self._remember_patch()
                originals = self._originals(patch) if patch is not None else None
        except Exception as exc:
            self._emit(LoopFailed(f"step failed: {exc}"))
            raise
        turn = Turn(index=len(self.turns) + 1, actor=actor, decision=decision,
                    proposed=proposed, action=action, note=note,
                    reasoning=proposal.reasoning if proposal else "",
                    result=result, usage=proposal.usage if proposal else Usage(),
                    wall_time=time.monotonic() - t0 + self._think_time(proposal),
                    raw=proposal.raw if proposal else None, patch=patch, originals=originals,
                    prompt=proposal.prompt if proposal else None)
        self.last = result
        return self._record(turn)

    def _remember_patch(self) -> str | None:
        """Keep and return the working copy's patch when the last step changed a file
        (None when it changed nothing or the patch cannot be computed)."""
        generation = self.env.generation
        if generation == self._patch_generation:
            return None
        try:
            self._patch = self.env.patch()
            self._patch_generation = generation
        except Exception as exc:  # noqa: BLE001  the footer computes it again anyway
            log.debug("could not compute the patch: %s", exc)
            return None
        return self._patch

    def _originals(self, patch: str) -> dict[str, str | None]:
        """Starting text of the files whose start replay does not know yet: changed for
        the first time, or whose start moved because the changes were applied to the
        original meanwhile (the patch is then against the applied version)."""
        # here: the patch parser (unidiff) is needed only once a step changed a file
        from dgym_tui.core.fs.patches import PatchError, original_texts

        ws = self.env.workspace

        def current(rel: str) -> str | None:
            try:
                return ws.read_text(rel)
            except Exception:  # noqa: BLE001  deleted or unreadable now
                return None

        try:
            before = original_texts(patch, current)
        except PatchError as exc:  # replay then says the source is not available
            log.debug("could not recover the starting texts: %s", exc)
            return {}
        ids = ws.start_ids()
        texts = {}
        for rel in sorted(set(before) | set(self._base_ids)):
            if rel in self._base_ids and self._base_ids[rel] == ids.get(rel):
                continue
            texts[rel] = before[rel] if rel in before else current(rel)  # unchanged since
            self._base_ids[rel] = ids.get(rel)
        return texts

    def _record(self, turn: Turn) -> Turn:
        self.pending = None
        self.turns.append(turn)
        repeats, repeated = repetition(self.turns) if turn.actor == "agent" else (0, "")
        if repeats == self.stuck_repeats - 1:
            turn.note = " ".join(filter(None, [turn.note, repetition_warning(
                repeats, repeated, self.stuck_repeats)]))
        self.usage = self.usage + turn.usage
        if self._writer is not None:
            self._writer.write_step(turn.to_record())
        from dgym_tui.episode.events import TurnRecorded
        self._emit(TurnRecorded(turn))
        result = turn.result
        if self._abort_reason is not None:
            self.finish(self._abort_reason)
        elif result is not None and result.done:
            self.finish("submitted")
        elif result is not None and self.stop_on_resolved and result.resolved:
            self.finish("resolved")
        elif self.steps_left == 0:
            self.finish("max_steps")
        elif repeats >= self.stuck_repeats:
            self.finish("stuck", detail=f"{repeated} {repeats} times in a row")
        return turn

    def inspect(self, frame: int | None = None, scope: str = "locals") -> Any:
        """The stopped pdb's stack, variables and breakpoints for a front end's panes.

        Not an action: nothing is recorded, the agent never sees it, and pdb is
        neither started nor moved (see ``PdbTool.inspect``).

        Args:
            frame: stack index whose variables to read (None: pdb's current frame).
            scope: ``"locals"`` or ``"globals"``.

        Returns:
            A ``dgym_tui.core.pdb.inspect.Inspection``, or None (no pdb tool, no
            stopped pdb session, environment closed, or the inspection failed).
        """
        tool = self.env.tools.get("pdb")
        if tool is None:
            return None
        with self.lock:
            try:
                return tool.inspect(frame=frame, scope=scope)  # type: ignore[attr-defined]
            except Exception as exc:  # noqa: BLE001  display data only: never fail a caller
                log.debug("pdb inspection failed: %s", exc)
                return None

    # -- what front ends read and do besides actions (each call takes the lock) ---------
    @property
    def generation(self) -> int | None:
        """The working copy's generation (see :class:`WorkingCopy`); None once closed."""
        return self.env.generation if self.env.workspace is not None else None

    def snapshot(self, with_patch: bool = True) -> WorkingCopy | None:
        """The working copy's files, read-only set, generation and (``with_patch``) patch;
        None once the environment is closed."""
        with self.lock:
            ws = self.env.workspace
            if ws is None:
                return None
            from dgym_tui.episode.records import WorkingCopy
            files = ws.files()
            return WorkingCopy(self.env.generation, files,
                               frozenset(f for f in files if ws.is_readonly(f)),
                               ws.patch() if with_patch else None)

    def read_file(self, path: str) -> str | None:
        """The text of working-copy file ``path`` (relative); None when it cannot be
        shown (deleted, hidden, binary, or the environment is closed). While :meth:`start`
        runs the first eval (up to its timeout, holding the lock), the new working copy is
        read at once: it stays in place until the start returns."""
        starting = self._starting_copy
        if starting is not None:
            try:
                return starting.read_text(path)
            except Exception:  # noqa: BLE001  display data only: never fail a caller
                return None
        with self.lock:
            ws = self.env.workspace
            try:
                return ws.read_text(path) if ws is not None else None
            except Exception:  # noqa: BLE001  display data only: never fail a caller
                return None

    def apply_to_source(self) -> list[str]:
        """Write the episode's changes into the original repository (a three-way merge
        with edits made there meanwhile).

        Returns:
            The relative paths written or deleted in the original. An apply is recorded:
            before the episode's end in the footer (``applied_to_source``), after it as an
            ``applied`` line after the footer (read back into ``applied_to_source``).

        Raises:
            SessionError: the environment is closed.
            ApplyConflictError: edits in the original conflict; nothing was written.
            WorkspaceError: a path of the original cannot be written.
        """
        with self.lock:
            if self.env.workspace is None:
                raise SessionError("the environment is closed")
            changed = self.env.workspace.apply_to_source()
        if changed:
            applied = {"after_step": len(self.turns), "files": sorted(changed), "at": _now()}
            self.applied.append(applied)
            if self.footer is not None:  # written already: a line after it records this one
                self.footer.setdefault("applied_to_source", []).append(applied)
                if self._writer is not None:
                    from dgym_tui.episode.trajectory import append_applied
                    try:
                        append_applied(self._writer.path, applied)
                    except OSError as exc:
                        log.warning("could not record the apply in the trajectory: %s", exc)
        return changed

    def tool_specs(self) -> dict[str, dict[str, Any]]:
        """``{tool name: JSON-schema parameters}`` of the offered tools, in offer order."""
        return {name: tool.parameters for name, tool in self.env.tools.items()}

    def tool_summaries(self) -> dict[str, str]:
        """``{tool name: the first line of its instructions (else of its docstring)}`` of the
        offered tools, in offer order ("" for a tool with neither)."""
        return {name: next(iter((tool.instructions or tool.__doc__ or "").strip().splitlines()), "")
                for name, tool in self.env.tools.items()}

    def instructions(self) -> str:
        """The offered tools' instructions, one ``name: text`` paragraph each."""
        return self.env.instructions()

    @property
    def terminal_name(self) -> str:
        """Where the episode's commands run: ``"local"``, ``"bwrap"``, ``"docker"``, or a
        custom terminal's class name."""
        return self.env.terminal_name

    @property
    def source_path(self) -> str:
        """The original repository's folder (what :meth:`apply_to_source` writes)."""
        return self.env.path

    @property
    def entrypoint(self) -> str:
        """The shell command that runs the tests (eval)."""
        return self.env.entrypoint

    def first_file_preview(self, pick: Callable[[list[str]], str | None]
                           ) -> tuple[str, str] | None:
        """The file ``pick`` chooses among the original repository's visible files, read
        before the working copy exists (:func:`dgym_tui.episode.first_file.read_first_file`):
        ``(relative path, text)``, or None. Never raises.

        Args:
            pick: ``pick(files) -> path or None`` over sorted relative POSIX paths (the
                front end's choice of the first file to show)."""
        from dgym_tui.episode.first_file import read_first_file

        return read_first_file(self.env.path, getattr(self.env, "ignore", None), pick)

    @property
    def eval_timeout(self) -> float:
        """Seconds the entrypoint may run before it is stopped."""
        return float(self.env.eval_timeout)

    @property
    def task_text(self) -> str:
        """The task's description as the environment shows it ("" when none)."""
        return self.env.task or ""

    def close(self) -> None:
        """Close the environment: its terminal, pdb and working copy end (idempotent).

        Call :meth:`finish` first to record the final patch; called while a step runs,
        it cuts the step short (the step then returns or fails, and is recorded).

        Raises:
            Whatever closing the terminal raises.
        """
        self.env.close()

    def finish(self, reason: str = "", detail: str = "") -> None:
        """End the episode: write the footer, emit EpisodeEnded. Idempotent.

        An episode that ends before :meth:`start` returned (given up or quit during the
        setup or the first eval, a reset that failed) still gets a trajectory: a header
        whose initial observation is :data:`NOT_STARTED`, then the footer.

        Args:
            reason: why it ended (``"submitted"``, ``"resolved"``,
                ``"max_steps"``, ``"stuck"``, ``"quit"``, ``"error: ..."``, ...).
            detail: one line more about the reason, the footer's ``detail``
                (only when given; e.g. what repeated for ``"stuck"``).
        """
        if self.footer is not None:
            return
        self.done = True
        self.reason = reason
        self.pending = None
        last = self.last or StepResult(observation="")
        try:
            with self.lock:
                patch = self.env.patch()
        except Exception as exc:  # noqa: BLE001  an env closed early must not lose the footer
            log.warning("could not compute the patch: %s", exc)
            patch = None
        if self.env.workspace is None or patch is None:
            patch = self._patch  # closed env (e.g. SIGTERM cleanup): the last known patch
        self.footer = {"resolved": bool(last.resolved), "score": last.score,
                       "max_score": last.max_score, "steps": len(self.turns),
                       "patch": patch, "reason": reason, "ended_at": _now(),
                       "usage": self.usage.to_dict(),
                       "wall_time": round(time.monotonic() - self._started, 3)}
        if detail:
            self.footer["detail"] = detail
        if self.applied:
            self.footer["applied_to_source"] = list(self.applied)
        try:  # ended before its start returned (e.g. given up during the setup): a header
            self._write_header(self.initial or StepResult(observation=NOT_STARTED))
        except Exception as exc:  # noqa: BLE001  the footer is written if at all possible
            log.warning("could not write the trajectory header: %s", exc)
        if self._writer is not None:
            try:
                self._writer.write_footer(self.footer)
            except (OSError, ValueError) as exc:
                log.warning("could not write the trajectory footer: %s", exc)
        from dgym_tui.episode.events import EpisodeEnded
        self._emit(EpisodeEnded(self.footer))
