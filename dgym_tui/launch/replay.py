"""Replay and fork recorded trajectories.

- :func:`replay` re-executes a trajectory's actions in a fresh environment
  (rebuilt from the header) and reports every step whose observation differs
  from the recorded one after :func:`normalize` removed volatile bits (temp
  paths, timings, memory addresses).
- :func:`fork` replays up to step N into a new trajectory, then lets any
  policy (an agent, a person) continue the episode from there.

Display-only replay needs no environment: read the file with
:func:`dgym_tui.episode.trajectory.read_trajectory` and index its steps.
"""

from __future__ import annotations

import difflib
import logging
import os
import re
import shutil
import tempfile
import weakref
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dgym_tui.core import tempdirs
from dgym_tui.core.fs.gitpatch import blob_id
from dgym_tui.core.fs.safefs import SafeTree
from dgym_tui.core.types import StepResult, ToolCall
from dgym_tui.episode.records import Turn
from dgym_tui.episode.session import DEFAULT_MAX_STEPS
from dgym_tui.episode.trajectory import Trajectory, TrajectoryError, read_trajectory
from dgym_tui.launch.open import open_session, task_from_header
from dgym_tui.launch.sandbox import choose_terminal

log = logging.getLogger(__name__)

_TMP_ROOTS = sorted({tempfile.gettempdir(), "/tmp", "/var/tmp", "/var/folders",
                     "/private/var/folders"}, key=len, reverse=True)
_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    # temporary folders (working copies live there): /tmp/dgym-abc123/x.py -> <tmp>/x.py
    (re.compile("(?:" + "|".join(re.escape(r) for r in _TMP_ROOTS)
                + r")/[^\s/'\":,)\]]+"), "<tmp>"),
    (re.compile(r"0x[0-9a-fA-F]{4,}"), "0x?"),  # memory addresses in reprs
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|sec|seconds)\b"), "<t>"),  # "in 0.12s", "3 ms"
    (re.compile(r"\(\d+:\d\d:\d\d(?:\.\d+)?\)"), "(<t>)"),  # pytest "(0:00:01)"
    (re.compile(r"\bcall_[0-9a-f]{12}\b"), "call_?"),  # generated tool-call ids
    (re.compile(r"\bpid \d+\b"), "pid ?"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?"), "<time>"),
]


def normalize(text: str, roots: tuple[str, ...] = ()) -> str:
    """Remove volatile parts of an observation so two runs can be compared.

    Args:
        text: an observation.
        roots: extra absolute paths (e.g. working-copy roots) to replace by
            ``<root>`` first.

    Returns:
        The text with temp paths, durations (``in 0.12s``), memory addresses
        (``0x7f...``), tool-call ids, pids and timestamps replaced by
        placeholders, and trailing spaces removed.
    """
    for root in sorted((r for r in roots if r), key=len, reverse=True):
        text = text.replace(root, "<root>")
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.splitlines())


@dataclass
class Divergence:
    """A replayed step whose observation differs from the recording.

    Attributes:
        step: 1-based step number (0 for the initial observation).
        expected: recorded observation (normalized).
        actual: replayed observation (normalized).
    """

    step: int
    expected: str
    actual: str

    def diff(self, context: int = 2) -> str:
        """Unified diff recorded -> replayed (a few lines of context)."""
        return "\n".join(difflib.unified_diff(
            self.expected.splitlines(), self.actual.splitlines(), "recorded", "replayed",
            n=context, lineterm=""))


@dataclass
class ReplayReport:
    """Result of :func:`replay`.

    Attributes:
        trajectory: the trajectory that was replayed.
        steps: how many recorded steps were re-executed or re-recorded.
        divergences: steps whose observation differs (in step order).
        final: the last StepResult of the replay (None if nothing ran).
        resolved: the replayed episode's last result was resolved.
    """

    trajectory: Trajectory
    steps: int = 0
    divergences: list[Divergence] = field(default_factory=list)
    final: StepResult | None = None

    @property
    def resolved(self) -> bool:
        return bool(self.final and self.final.resolved)

    @property
    def ok(self) -> bool:
        """True when no step diverged."""
        return not self.divergences


def _load(trajectory: Trajectory | str | os.PathLike[str]) -> Trajectory:
    return trajectory if isinstance(trajectory, Trajectory) else read_trajectory(trajectory)


def _compare(step: int, recorded: str, actual: str, roots: tuple[str, ...],
             old_roots: tuple[str, ...]) -> Divergence | None:
    expected = normalize(recorded, old_roots)
    got = normalize(actual, roots)
    return None if expected == got else Divergence(step, expected, got)


def replay(trajectory: Trajectory | str | os.PathLike[str], until: int | None = None,
           on_step: Any = None, terminal: str | None = None) -> ReplayReport:
    """Re-execute a trajectory's actions in a fresh environment and compare observations.

    The environment is rebuilt from the header (the recorded task and options),
    reset (its observation is compared too, as step 0) and closed at the end.

    Args:
        trajectory: a :class:`Trajectory` or a path to one.
        until: stop after this 1-based step (None: every step).
        on_step: optional ``(step_number, StepResult | None, Divergence | None)``
            callback, e.g. for a progress display.
        terminal: the terminal the person chose; None: their default (see
            :func:`replay_task`: the recorded terminal may raise it, never lower it).

    Returns:
        A :class:`ReplayReport`.

    Raises:
        TrajectoryError: unreadable trajectory, ``until`` out of range, or an
            environment that cannot be rebuilt.
    """
    traj = _load(trajectory)
    last = _check_until(traj, until)
    task, options = replay_task(traj, terminal)
    env = task.make_env(**options)
    report = ReplayReport(trajectory=traj)
    old_roots = (str((traj.header.get("task") or {}).get("path") or ""),)
    try:
        result = env.reset()
        report.final = result
        # the paths observations may name: working copy, source, the terminal's folder
        roots = (str(env.workspace.root), env.path, env.terminal.workdir)
        div = _compare(0, traj.header["initial"]["observation"], result.observation,
                       roots, old_roots)
        if div:
            report.divergences.append(div)
        for record in traj.steps[:last]:
            number = record["step"]
            div = None
            result = None
            if record.get("action"):
                result = env.step(ToolCall.from_dict(record["action"]))
                report.final = result
                div = _compare(number, record.get("observation") or "", result.observation,
                               roots, old_roots)
                if div:
                    report.divergences.append(div)
            report.steps += 1
            if on_step is not None:
                on_step(number, result, div)
    finally:
        env.close()
    return report


def _check_until(traj: Trajectory, until: int | None) -> int:
    if until is None:
        return len(traj.steps)
    if not 0 <= until <= len(traj.steps):
        raise TrajectoryError(f"--until {until} is out of range: {traj.path} has "
                              f"{len(traj.steps)} step(s)")
    return until


def replay_task(traj: Trajectory, terminal: str | None = None) -> tuple[Any, dict[str, Any]]:
    """The task and environment options to re-execute ``traj`` with, in the sandbox the
    person chose.

    A trajectory may come from anyone, so the terminal its header records is only a
    request (:func:`dgym_tui.launch.sandbox.choose_terminal`): it may raise the person's
    default (``bwrap`` where it works) but never lower it to ``local``.

    Args:
        traj: the recording.
        terminal: the terminal the person named, or None for their default.

    Returns:
        ``(task, options)`` as :func:`~dgym_tui.launch.open.task_from_header`, the task's
        ``terminal`` settled.

    Raises:
        TrajectoryError: as :func:`~dgym_tui.launch.open.task_from_header`.
    """
    task, options = task_from_header(traj.header)
    chosen, notices = choose_terminal(task, terminal)
    for line in notices:
        log.warning("%s", line)
    return replace(task, terminal=chosen), options


def fork(trajectory: Trajectory | str | os.PathLike[str], until: int, policy: Any,
         output: str | os.PathLike[str], mode: str = "auto", max_steps: int | None = None,
         start: bool = True, terminal: str | None = None) -> Any:
    """Replay steps 1..``until`` into a new trajectory, then hand the episode to ``policy``.

    Args:
        trajectory: the source :class:`Trajectory` or its path.
        until: last step to replay (0: only the reset).
        policy: the policy that continues (None for a human-only session).
        output: path of the new trajectory file.
        mode: session mode after the replayed part (``auto``, ``approve``, ``human``).
        max_steps: step budget of the new episode, replayed steps included;
            None keeps the recorded budget (``config.max_steps``, else ``DEFAULT_MAX_STEPS``),
            raised if needed so at least one new step fits.
        start: run the policy right away when ``mode == "auto"``; False
            returns the prepared session (e.g. for the TUI).
        terminal: the terminal the person chose; None: their default (:func:`replay_task`).

    Returns:
        The :class:`~dgym_tui.episode.session.Session` (finished when it ran in auto
        mode to the end). The caller closes ``session.env``.

    Raises:
        TrajectoryError: unreadable trajectory, ``until`` out of range, or an
            environment that cannot be rebuilt.
    """
    traj = _load(trajectory)
    until = _check_until(traj, until)
    config = dict(traj.header.get("config") or {})
    budget = max_steps or int(config.get("max_steps") or DEFAULT_MAX_STEPS)
    budget = max(budget, until + 1)
    config.update({"forked_from": {"path": str(traj.path), "step": until},
                   "policy": getattr(policy, "name", None) if policy else "human",
                   "mode": mode, "max_steps": budget})
    task, options = replay_task(traj, terminal)
    restore, changed = recorded_start(traj, task.path)
    copy = None
    if restore or changed:
        # the original changed since the recording: the fork starts from a copy of it
        # with the recorded start of every file the recording knows put back
        copy = Path(tempdirs.make("fork-source"))
        try:
            shutil.copytree(task.path, copy, symlinks=True, dirs_exist_ok=True)
            # the paths come from the trajectory: written through the copy's descriptor,
            # never outside it nor through a link
            tree = SafeTree(copy)
            try:
                for rel, text in restore.items():
                    if text is None:
                        tree.unlink(rel)
                    else:
                        tree.write_bytes(rel, text.encode("utf-8"))
            finally:
                tree.close()
        except OSError as exc:
            shutil.rmtree(copy, ignore_errors=True)
            raise TrajectoryError(f"cannot rebuild the recorded source: {exc}") from None
        config["forked_source"] = {"original": str(task.path), "restored": sorted(restore),
                                   "changed_since": changed}
        task = replace(task, path=copy)
    try:
        session = open_session(task, policy, mode, budget, output, options, config=config,
                               stop_on_resolved=bool(config.get("stop_on_resolved", False)))
    except BaseException:
        if copy is not None:
            shutil.rmtree(copy, ignore_errors=True)
        raise
    if copy is not None:  # removed with the session (at the latest when the program ends)
        weakref.finalize(session, shutil.rmtree, copy, True)
    session.start()
    for record in traj.steps[:until]:
        session.replay_turn(Turn.from_record(record))
        if session.done:
            break
    if start and mode == "auto" and not session.done:
        session.run()
    return session


def recorded_start(trajectory: Trajectory, source: str | os.PathLike[str]
                   ) -> tuple[dict[str, str | None], list[str]]:
    """How the source folder differs from the start the trajectory recorded.

    The header lists every visible file's git blob id at the start (``files``); steps
    that changed a file recorded its starting text (``originals``).

    Args:
        trajectory: the recording (schema version 2: older ones record no files).
        source: the task's source folder today.

    Returns:
        ``(restore, changed)``: ``restore`` maps each file whose recorded start is
        known and differs from today's to that text (None: the file did not exist at
        the start and must go); ``changed`` lists the files that differ from the
        recording but whose starting text was not recorded (they stay as they are).
        Both empty when the folder is as recorded (or nothing was recorded).
    """
    header = trajectory.header
    ids = header.get("files")
    if not isinstance(ids, dict):
        return {}, []
    try:
        tree = SafeTree(source)
    except OSError:
        return {}, []
    starts: dict[str, str | None] = {}
    for record in trajectory.steps:
        originals = record.get("originals")
        for rel, text in (originals.items() if isinstance(originals, dict) else ()):
            if isinstance(text, str | None):
                starts.setdefault(rel, text)  # the first one: the start of the episode
    restore: dict[str, str | None] = {}
    changed: list[str] = []
    try:
        for rel in sorted(set(ids) | set(starts)):
            try:  # the path comes from the trajectory: read inside the source folder only
                today = blob_id(tree.read_bytes(str(rel)))
            except OSError:
                today = None
            expected = ids.get(rel)
            if today == expected:
                continue
            if rel in starts:
                start = starts[rel]
                if start is None and today is None:
                    continue
                if start is not None and today == blob_id(start.encode("utf-8")):
                    continue
                restore[rel] = start
            elif expected is not None:
                changed.append(rel)
    finally:
        tree.close()
    return restore, changed
