"""Human baseline studies: a study file, a participant's task queue, results as a run folder.

The study file's keys, the results folder, resume and what is scrubbed: docs/study.md.
:func:`load_study` checks everything (benchmark, task names, tool names, keys) before any
task starts and raises :class:`~dgym_tui.launch.open.UsageError` with one line naming the
bad value. Results are run folders as ``dgym run`` writes them (:mod:`dgym_tui.runs.runner`);
no user name, host name or absolute path is written (:mod:`dgym_tui.study.scrub`).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from dgym_tui.core.errors import first_line
from dgym_tui.episode.session import PERSON_MAX_STEPS
from dgym_tui.launch.open import UsageError
from dgym_tui.runs.runner import (
    PATCH_FILE,
    STATUS_FILE,
    TRAJECTORY_FILE,
    TaskStatus,
    read_status,
    take_footer,
    task_folder,
    write_json,
    write_run_summary,
)
from dgym_tui.study.scrub import scrub_folder, user_name

STUDY_FILE = "study.json"
KEYS = ("id", "benchmark", "tasks", "tools", "condition", "time_limit", "show_time", "order",
        "seed", "max_steps", "results")
#: Footer reasons the study writes when a person stops a task.
GAVE_UP = "gave up"
TIMED_OUT = "timed out"
#: Footer reasons that finish a task; any other (``quit``, an error) leaves it to restart.
FINISHED_REASONS = ("submitted", "resolved", "max_steps", "stuck", GAVE_UP, TIMED_OUT)
_PARTICIPANT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class Study:
    """A validated study file.

    Attributes:
        id: the study's name.
        benchmark: benchmark name.
        tasks: task names, in the file's order (a sample already drawn).
        tools: tool names offered in every task.
        condition: the condition's label (e.g. ``"all"``, ``"without-pdb"``).
        time_limit: seconds per task (None: no limit).
        show_time: whether the timer is shown.
        order: ``"fixed"`` or ``"shuffled"``.
        seed: seed of the shuffle and of a sample.
        max_steps: step budget per task.
        results: the results folder.
    """

    id: str
    benchmark: str
    tasks: tuple[str, ...]
    tools: tuple[str, ...]
    condition: str
    time_limit: float | None = None
    show_time: bool = True
    order: str = "fixed"
    seed: int = 0
    max_steps: int = PERSON_MAX_STEPS
    results: Path = field(default=Path("results"), compare=False)

    @property
    def hash(self) -> str:
        """12 hex digits of what defines the study (not where its results go)."""
        spec = {k: v for k, v in self.record().items() if k != "hash"}
        return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]

    def record(self) -> dict[str, Any]:
        """JSON-ready description written to ``study.json`` and each header: every field
        but ``results`` (no paths), tuples as lists."""
        return {key: list(value) if isinstance(value, tuple) else value
                for key, value in asdict(self).items() if key != "results"}


def load_study(path: str | Path) -> Study:
    """Read and validate a study file.

    Args:
        path: the YAML file; relative ``tasks.file`` and ``results`` are
            resolved against its folder.

    Returns:
        The :class:`Study`.

    Raises:
        UsageError: unreadable file, unknown key, benchmark, task or tool, or
            a bad value (one line naming it).
    """
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"cannot read study file {str(path)!r}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"study file {path.name}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise UsageError(f"study file {path.name}: expected a mapping of keys")
    unknown = [key for key in data if key not in KEYS]
    if unknown:
        raise UsageError(f"study file {path.name}: unknown key {unknown[0]!r}; known keys: "
                         f"{', '.join(KEYS)}")
    return _build(data, path)


def _build(data: dict[str, Any], path: Path) -> Study:
    from dgym_tui.benchmarks.base import _unknown_message, get_benchmark
    from dgym_tui.core.env import DEFAULT_TOOLS
    from dgym_tui.core.tools import all_tools

    where = f"study file {path.name}"
    name = data.get("benchmark")
    if not isinstance(name, str) or not name:
        raise UsageError(f"{where}: key 'benchmark' needs a benchmark name (e.g. mini)")
    try:
        bench = get_benchmark(name)
    except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:
        raise UsageError(f"{where}: key 'benchmark': {first_line(exc)}") from None
    known = list(bench.tasks())
    seed = _int(data.get("seed", 0), "seed", where)
    tasks = _tasks(data.get("tasks"), known, seed, path, where)
    for task in tasks:
        if task not in known:
            raise UsageError(f"{where}: key 'tasks': {_unknown_message('task', task, known)}")

    tools_spec = data.get("tools", "all")
    registry = sorted(all_tools())
    if tools_spec == "all":
        tools, condition = tuple(DEFAULT_TOOLS), "all"
    elif isinstance(tools_spec, list) and all(isinstance(t, str) for t in tools_spec):
        tools, condition = tuple(tools_spec), "+".join(tools_spec)
    elif isinstance(tools_spec, dict) and set(tools_spec) == {"without"} \
            and isinstance(tools_spec["without"], list):
        left_out = [str(t) for t in tools_spec["without"]]
        tools = tuple(t for t in DEFAULT_TOOLS if t not in left_out)
        condition = "without-" + "-".join(left_out)
        tools_spec = left_out
    else:
        raise UsageError(f"{where}: key 'tools' must be 'all', a list of tool names, "
                         "or {without: [NAMES]}")
    for tool in tools_spec if isinstance(tools_spec, list) else tools:
        if tool not in registry:
            raise UsageError(f"{where}: key 'tools': {_unknown_message('tool', tool, registry)}")
    if "submit" not in tools:
        raise UsageError(f"{where}: key 'tools' must keep 'submit' (submitting ends a task)")

    limit = data.get("time_limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float))
                              or limit <= 0):
        raise UsageError(f"{where}: key 'time_limit' must be seconds > 0 or null, got {limit!r}")
    order = data.get("order", "fixed")
    if order not in ("fixed", "shuffled"):
        raise UsageError(f"{where}: key 'order' must be 'fixed' or 'shuffled', got {order!r}")
    show = data.get("show_time", True)
    if not isinstance(show, bool):
        raise UsageError(f"{where}: key 'show_time' must be true or false, got {show!r}")
    max_steps = _int(data.get("max_steps", PERSON_MAX_STEPS), "max_steps", where)
    if max_steps < 1:
        raise UsageError(f"{where}: key 'max_steps' must be at least 1, got {max_steps}")
    study_id = str(data.get("id") or path.stem)
    if not _PARTICIPANT.match(study_id):
        raise UsageError(f"{where}: key 'id' must be letters, digits, '-' or '_', got {study_id!r}")
    condition = str(data.get("condition") or condition)
    results = Path(str(data.get("results") or f"results/{study_id}"))
    return Study(study_id, name, tuple(tasks), tools, condition,
                 float(limit) if limit is not None else None, show, order, seed, max_steps,
                 results if results.is_absolute() else path.parent / results)


def _int(value: Any, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise UsageError(f"{where}: key {key!r} must be an integer, got {value!r}")
    return value


def _tasks(spec: Any, known: list[str], seed: int, path: Path, where: str) -> list[str]:
    """The task names of a ``tasks`` value: a list, ``{file: F}`` or ``{sample: N}``."""
    if isinstance(spec, list) and spec and all(isinstance(t, str) for t in spec):
        names = spec
    elif isinstance(spec, dict) and set(spec) == {"file"}:
        ids = path.parent / str(spec["file"])
        try:
            lines = ids.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(f"{where}: key 'tasks': cannot read {spec['file']!r}: {exc.strerror}") \
                from None
        names = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    elif isinstance(spec, dict) and "sample" in spec and set(spec) <= {"sample", "seed"}:
        count = _int(spec["sample"], "tasks.sample", where)
        if not 0 < count <= len(known):
            raise UsageError(f"{where}: key 'tasks.sample' must be 1..{len(known)}, got {count}")
        names = random.Random(_int(spec.get("seed", seed), "tasks.seed", where)).sample(
            sorted(known), count)
    else:
        raise UsageError(f"{where}: key 'tasks' needs a list of task names, {{file: IDS.txt}} "
                         "or {sample: N, seed: S}")
    if not names:
        raise UsageError(f"{where}: key 'tasks' names no task")
    duplicate = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if duplicate:
        raise UsageError(f"{where}: key 'tasks': task {duplicate!r} is listed twice")
    return list(names)


def check_participant(participant: str) -> str:
    """Return ``participant`` if it is a usable pseudonymous id.

    Raises:
        UsageError: not 1-32 letters, digits, ``-`` or ``_``, or it is this
            machine's user name or host name (ids must not identify people).
    """
    if not _PARTICIPANT.match(participant or ""):
        raise UsageError(f"participant id must be 1-32 letters, digits, '-' or '_' "
                         f"(a pseudonym such as P07), got {participant!r}")
    host = socket.gethostname().split(".")[0]
    if participant.lower() in {user_name().lower(), host.lower()} - {""}:
        raise UsageError("participant id must be a pseudonym, not a user or host name")
    return participant


def task_queue(study: Study, participant: str) -> list[str]:
    """The participant's tasks in order: the file's order, or shuffled with ``seed`` and the id.

    The same study and participant always give the same order; different
    participants get different orders (counterbalancing).
    """
    names = list(study.tasks)
    if study.order == "shuffled":
        random.Random(f"{study.seed}:{participant}").shuffle(names)
    return names


def run_folder(study: Study, participant: str) -> Path:
    """The participant's run folder inside the study's results folder."""
    return study.results / participant


def open_results(study: Study) -> Path:
    """Create (or check) the results folder and its ``study.json``.

    Raises:
        UsageError: the folder holds results of another study (another id or
            hash), or files that are no study results.
    """
    folder = study.results
    marker = folder / STUDY_FILE
    if marker.is_file():
        try:
            held = json.loads(marker.read_text("utf-8"))
        except (OSError, ValueError):
            raise UsageError(f"results folder {folder.name}: {STUDY_FILE} is unreadable; "
                             "use another results folder") from None
        if held.get("id") != study.id or held.get("hash") != study.hash:
            raise UsageError(
                f"results folder {folder.name} holds study {held.get('id')!r} (hash "
                f"{held.get('hash')}), not {study.id!r} (hash {study.hash}): the study file "
                "changed or it is another study; give it another 'results' folder")
        return folder
    if folder.is_dir() and any(folder.iterdir()):
        raise UsageError(f"results folder {folder.name} is not empty and has no {STUDY_FILE}: "
                         "not a study's results; give the study another 'results' folder")
    folder.mkdir(parents=True, exist_ok=True)
    write_json(marker, {**study.record(), "hash": study.hash})
    return folder


@dataclass(frozen=True)
class QueueItem:
    """One task of a participant's queue: its position and whether it restarts."""

    task: str
    index: int
    total: int
    restarted: bool = False


def remaining(study: Study, participant: str) -> list[QueueItem]:
    """The participant's unfinished tasks, in queue order.

    A task is finished when its ``status.json`` says ``done``. An unfinished
    task is marked ``restarted`` when an earlier attempt opened it (a crash,
    a kill or Ctrl-C mid-task): :func:`open_task` makes its folder before the
    participant sees the task, so a kill during the instructions or the
    episode's start (no trajectory yet) counts too.
    """
    queue = task_queue(study, participant)
    run = run_folder(study, participant)
    items = []
    for index, name in enumerate(queue):
        folder = task_folder(run, name)
        status = read_status(folder)
        if status is not None and status.state == "done":
            continue
        items.append(QueueItem(name, index, len(queue), restarted=folder.is_dir()))
    return items


def outcome(status: TaskStatus) -> str:
    """The task's outcome from its status: solved, unsolved, gave up or timed out."""
    if status.reason in (GAVE_UP, TIMED_OUT):
        return status.reason
    return "solved" if status.resolved else "unsolved"


class StudyClock:
    """Seconds spent on a task, not counting pauses (monotonic clock)."""

    def __init__(self, limit: float | None = None, now: Any = time.monotonic) -> None:
        self.limit = limit
        self._now = now
        self._spent = 0.0
        self._since: float | None = now()

    @property
    def paused(self) -> bool:
        """Whether the clock is stopped."""
        return self._since is None

    def pause(self) -> None:
        """Stop the clock (idempotent)."""
        if self._since is not None:
            self._spent += self._now() - self._since
            self._since = None

    def resume(self) -> None:
        """Start the clock again (idempotent)."""
        if self._since is None:
            self._since = self._now()

    @property
    def elapsed(self) -> float:
        """Seconds counted so far."""
        return self._spent + (0.0 if self._since is None else self._now() - self._since)

    @property
    def left(self) -> float | None:
        """Seconds left (never negative), None without a limit."""
        return None if self.limit is None else max(0.0, self.limit - self.elapsed)

    @property
    def expired(self) -> bool:
        """Whether the time limit is spent."""
        return self.limit is not None and self.elapsed >= self.limit


class StudyTask:
    """One task of a participant's study: its session, clock and result files.

    Build it with :func:`open_task`; call ``session.start()``; let the
    person act; end with :meth:`give_up`, :meth:`time_out` or a submit (the
    session ends itself); then :meth:`close` writes ``status.json`` and the
    run's ``summary.json``.

    Attributes:
        study / participant / item: what this task is.
        session: the episode (:class:`~dgym_tui.episode.session.Session`, human mode).
        clock: the task's :class:`StudyClock` (started on creation).
        folder: the task's result folder.
        description: the task's description (the symptom the person is told).
    """

    def __init__(self, study: Study, participant: str, item: QueueItem, session: Any,
                 folder: Path, description: str = "") -> None:
        self.study = study
        self.description = description
        self.participant = participant
        self.item = item
        self.session = session
        self.folder = folder
        self.clock = StudyClock(study.time_limit)
        self.status: TaskStatus | None = None

    def give_up(self) -> None:
        """End the episode with reason ``"gave up"`` (no-op once it ended)."""
        self.session.finish(GAVE_UP)

    def time_out(self) -> None:
        """End the episode with reason ``"timed out"`` (no-op once it ended)."""
        self.session.finish(TIMED_OUT)

    def close(self) -> TaskStatus:
        """Write ``status.json`` (``done`` when the episode ended with one of
        :data:`FINISHED_REASONS`, else ``interrupted``: it restarts next time), ``patch.diff`` and the run's
        ``summary.json``; close the environment. Idempotent.

        Returns:
            The task's :class:`~dgym_tui.runs.runner.TaskStatus`; ``wall_time`` is
            the clock's time (pauses not counted).
        """
        if self.status is not None:
            return self.status
        self.clock.pause()
        finished = self.session.done and self.session.reason in FINISHED_REASONS
        status = TaskStatus(task=self.item.task, state="done" if finished else "interrupted")
        if self.session.footer is not None:
            take_footer(status, self.session.footer)
            (self.folder / PATCH_FILE).write_text(self.session.footer.get("patch") or "",
                                                  encoding="utf-8")
        else:
            status.reason = "interrupted"
        status.wall_time = round(self.clock.elapsed, 3)
        try:
            self.session.env.close()
        finally:
            scrub_folder(self.folder)
            write_json(self.folder / STATUS_FILE, status.to_dict())
            write_summary(self.study, self.participant)
        self.status = status
        return status


def write_summary(study: Study, participant: str) -> None:
    """Write the participant's ``summary.json`` (statuses in queue order)."""
    run = run_folder(study, participant)
    names = task_queue(study, participant)
    results = {name: s for name in names if (s := read_status(task_folder(run, name)))}
    write_run_summary(run, names, results)


def open_task(study: Study, participant: str, item: QueueItem) -> StudyTask:
    """Build the session of one study task (not started), its folder emptied first.

    Args:
        study: the study (its results folder checked with :func:`open_results`).
        participant: the pseudonymous id (:func:`check_participant`).
        item: the task (from :func:`remaining`).

    Returns:
        The :class:`StudyTask`; ``task.session.start()`` resets the environment.

    Raises:
        UsageError: the task cannot be loaded.
        ValueError: the environment refuses the settings.
    """
    from dgym_tui.launch.open import load_task, open_session

    task = load_task(item.task, study.benchmark)
    folder = task_folder(run_folder(study, participant), item.task)
    shutil.rmtree(folder, ignore_errors=True)  # an earlier attempt: start from scratch
    folder.mkdir(parents=True, exist_ok=True)
    config = {"policy": "human", "mode": "human", "participant": participant,
              "condition": study.condition, "study": {**study.record(), "hash": study.hash}}
    session = open_session(task, None, "human", study.max_steps, folder / TRAJECTORY_FILE,
                           {"tools": list(study.tools)}, config=config)
    # no absolute path in the results: a benchmark task is loaded again by name on replay
    session.task_record["path"] = task.ref
    session.task_record.update({"index": item.index, "restarted": item.restarted})
    return StudyTask(study, participant, item, session, folder, task.description)
