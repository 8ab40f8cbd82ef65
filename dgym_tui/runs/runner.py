"""The headless runner behind ``dgym run``: one episode per task, results on disk.

For every task of the configured benchmark, :func:`run_tasks` builds the
environment, a policy and a :class:`~dgym_tui.episode.session.Session` in auto mode,
and writes into ``<output_dir>/<task>/``:

- ``trajectory.jsonl`` — the episode, flushed step by step;
- ``patch.diff`` — the working copy's changes (git-style unified diff);
- ``status.json`` — ``{"task", "state": "done" | "error" | "interrupted",
  "resolved", "score", "max_score", "steps", "reason", "prompt_tokens",
  "completion_tokens", "cost", "wall_time", "error"}``.

Episodes run where the executor puts them (:mod:`dgym_tui.runs.executors.local`):
``workers`` threads by default, or Ray tasks on a cluster. Resume, Ctrl-C and
``summary.json``: docs/internals.md (Headless runner).
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dgym_tui.core.errors import first_line
from dgym_tui.core.safetext import one_line
from dgym_tui.episode.policy import Policy
from dgym_tui.policies import make_policy
from dgym_tui.runs.config import ConfigError, RunConfig
from dgym_tui.runs.executors.local import LocalExecutor
from dgym_tui.runs.executors.stop import INTERRUPTED, StopSignal
from dgym_tui.runs.files import PATCH_FILE, STATUS_FILE, TRAJECTORY_FILE
from dgym_tui.support.paths import slug

log = logging.getLogger(__name__)


#: task -> Policy; lets callers (and tests) choose the policy per task.
PolicyFactory = Callable[[Any], Policy]


@dataclass
class TaskStatus:
    """Outcome of one task (the content of its ``status.json``).

    Attributes:
        task: task name.
        state: ``"done"`` (the episode ended), ``"error"`` (it crashed; see
            ``error``), ``"interrupted"`` (stopped by Ctrl-C; run again next
            time) or ``"skipped"`` (done in an earlier run; values are read
            back from disk).
        resolved / score / max_score / steps / reason: from the trajectory footer.
        prompt_tokens / completion_tokens / cost: LLM usage of the episode (US$).
        wall_time: seconds the episode took.
        error: one line when ``state == "error"``.
    """

    task: str
    state: str = "done"
    resolved: bool = False
    score: int = 0
    max_score: int = 0
    steps: int = 0
    reason: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    wall_time: float = 0.0
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready dict written to ``status.json``."""
        return dict(self.__dict__)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskStatus:
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass
class RunSummary:
    """All task outcomes of one ``dgym run``, in task order."""

    output_dir: Path
    statuses: list[TaskStatus] = field(default_factory=list)

    @property
    def resolved(self) -> int:
        """Number of resolved tasks."""
        return sum(s.resolved for s in self.statuses)

    @property
    def errors(self) -> int:
        """Number of tasks that ended with an error."""
        return sum(s.state == "error" for s in self.statuses)


def task_folder(output_dir: Path, task_name: str) -> Path:
    """Return the result folder of ``task_name`` (unsafe characters become ``_``)."""
    return Path(output_dir) / slug(task_name, "task")


def read_status(folder: Path) -> TaskStatus | None:
    """Return the status stored in ``folder/status.json``, or None if absent/unreadable."""
    try:
        return TaskStatus.from_dict(json.loads((folder / STATUS_FILE).read_text("utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented JSON to ``path`` atomically (a ``.tmp`` file, then a rename).

    Readers (the run browser, a resumed run) never see a half-written file.

    Raises:
        OSError: the folder is not writable.
        TypeError: ``data`` is not JSON-serializable.
    """
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


def agent_tools(kind: str, agent: str) -> list[str] | None:
    """Tool names the environment should offer for this policy (None: the default set)."""
    return agent_env_options(kind, agent).get("tools")


def agent_env_options(kind: str, agent: str) -> dict[str, Any]:
    """``RepoEnv`` options the agent spec asks for: ``tools``, ``tool_options`` and
    ``mcp_servers`` (when set).

    Returns ``{}`` for a policy other than ``agent``.
    """
    if kind != "agent":
        return {}
    from dgym_tui.policies.agent import load_agent_spec

    spec = load_agent_spec(agent)
    options: dict[str, Any] = {}
    if getattr(spec, "tools", None):
        options["tools"] = list(spec.tools)
    if getattr(spec, "tool_options", None):
        options["tool_options"] = {k: dict(v) for k, v in spec.tool_options.items()}
    if getattr(spec, "mcp_servers", None):
        options["mcp_servers"] = [dict(server) for server in spec.mcp_servers]
    return options


def run_task(config: RunConfig, benchmark: Any, task_name: str, output_dir: Path,
             policy_factory: PolicyFactory | None = None,
             on_event: Callable[[str, Any], None] | None = None,
             interrupt: StopSignal | None = None,
             task_info: dict[str, Any] | None = None) -> TaskStatus:
    """Run one episode of ``task_name`` and write its result folder.

    Args:
        config: the run configuration.
        benchmark: the loaded benchmark (``get_benchmark`` result).
        task_name: which task.
        output_dir: the run's output folder; the task gets a sub-folder.
        policy_factory: ``task -> Policy``; None builds the policy
            from ``config`` (:func:`make_policy`).
        on_event: ``(task_name, SessionEvent)`` callback for progress display.
        interrupt: the run's stop signal (:func:`run_tasks` passes it); when
            set, the episode ends after the current step with reason
            ``"interrupted"``.
        task_info: extra keys of the trajectory header's ``task`` (e.g.
            ``{"retried": True}`` from the Ray executor).

    Returns:
        The :class:`TaskStatus` (also written to ``status.json``). Errors
        during the episode do not raise: they give ``state="error"``.

    Raises:
        KeyboardInterrupt: Ctrl-C in the thread running the episode; the
            footer (reason ``"interrupted"``) and ``status.json`` are written
            and the environment closed first.
    """
    from dgym_tui.launch.open import open_session
    from dgym_tui.launch.sandbox import choose_terminal

    folder = task_folder(output_dir, task_name)
    shutil.rmtree(folder, ignore_errors=True)  # an earlier attempt: start from scratch
    folder.mkdir(parents=True, exist_ok=True)
    status = TaskStatus(task=task_name)
    started = time.monotonic()
    session = None
    stopped = interrupt.event if interrupt is not None else threading.Event()
    interrupted = False
    try:
        task = benchmark.load(task_name)
        overrides = config.env_overrides()
        # the run config chooses the sandbox; a task folder's own config may raise it, not lower it
        terminal, notices = choose_terminal(task, config.terminal)
        for notice in notices:
            log.warning("%s: %s", task_name, notice)
        if terminal:
            overrides["terminal"] = terminal
        if policy_factory is None:
            wanted = agent_env_options(config.policy, config.agent)
            servers = [*overrides.get("mcp_servers", []), *wanted.pop("mcp_servers", [])]
            overrides.update(wanted)
            if servers:
                overrides["mcp_servers"] = servers
        policy = (policy_factory(task) if policy_factory
                  else make_policy(config.policy, config.agent, config.llm, config.llm_config,
                                   task))
        session = open_session(task, policy, "auto", config.max_steps, folder / TRAJECTORY_FILE,
                               overrides, config=config.to_dict(),
                               stop_on_resolved=config.stop_on_resolved)
        session.task_record.update(task_info or {})  # before start() writes the header
        if on_event is not None:
            session.subscribe(lambda event: on_event(task_name, event))
        if interrupt is not None:
            interrupt.add(task_name, session)
        if stopped.is_set():
            raise KeyboardInterrupt
        session.start()
        session.run(should_pause=stopped.is_set)
        if not session.done:  # run() returns early only when the run is interrupted
            session.finish(INTERRUPTED if stopped.is_set() else "stopped")
        if session.reason == INTERRUPTED:
            status.state = INTERRUPTED
        footer = session.footer or {}
        take_footer(status, footer)
        (folder / PATCH_FILE).write_text(footer.get("patch") or "", encoding="utf-8")
    except KeyboardInterrupt:
        interrupted = True
        stopped.set()
        _end_interrupted(status, session)
    except Exception as exc:  # noqa: BLE001  one task's failure must not end the run
        if stopped.is_set():  # its terminal was closed under it by the interrupt
            _end_interrupted(status, session)
        else:
            status.state = "error"
            status.error = f"{type(exc).__name__}: {first_line(exc)}"[:500]
            if session is not None and session.initial is not None:
                session.finish(f"error: {status.error}")
                footer = session.footer or {}
                status.steps = int(footer.get("steps") or 0)
                status.reason = str(footer.get("reason") or "")
    finally:
        if interrupt is not None:
            interrupt.discard(task_name)
        if session is not None:
            status.prompt_tokens = session.usage.prompt_tokens
            status.completion_tokens = session.usage.completion_tokens
            status.cost = round(session.usage.cost, 6)
            try:
                session.env.close()
            except Exception as exc:  # noqa: BLE001  cleanup must not mask the result
                log.warning("closing the environment of %s failed: %s", task_name, exc)
        status.wall_time = round(time.monotonic() - started, 3)
        write_json(folder / STATUS_FILE, status.to_dict())
    if interrupted:
        raise KeyboardInterrupt
    return status


def _end_interrupted(status: TaskStatus, session: Any) -> None:
    """Mark ``status`` interrupted; write the footer when the episode had started."""
    status.state = INTERRUPTED
    status.reason = INTERRUPTED
    if session is not None and session.initial is not None:
        session.finish(INTERRUPTED)  # idempotent: keeps a footer written before
        take_footer(status, session.footer or {}, default_reason=INTERRUPTED)


def take_footer(status: TaskStatus, footer: dict[str, Any], default_reason: str = "") -> None:
    """Copy resolved, score, max_score, steps and reason of a trajectory footer into ``status``.

    Args:
        status: updated in place.
        footer: the trajectory's footer record (missing keys count as 0 / false).
        default_reason: the reason when the footer names none.
    """
    status.resolved = bool(footer.get("resolved"))
    status.score = int(footer.get("score") or 0)
    status.max_score = int(footer.get("max_score") or 0)
    status.steps = int(footer.get("steps") or 0)
    status.reason = str(footer.get("reason") or default_reason)


def select_tasks(config: RunConfig, benchmark: Any) -> list[str]:
    """Return the task names to run, in benchmark order (or config order).

    Raises:
        ConfigError: a configured task name is not in the benchmark.
    """
    known = benchmark.tasks()
    if config.tasks is None:
        return list(known)
    missing = [name for name in config.tasks if name not in known]
    if missing:
        try:
            benchmark.load(missing[0])
        except KeyError as exc:
            raise ConfigError(f"config key 'tasks': {exc.args[0]}") from None
        raise ConfigError(f"config key 'tasks': unknown task {missing[0]!r}")
    return list(dict.fromkeys(config.tasks))


def load_benchmark(config: RunConfig) -> Any:
    """Build the configured benchmark.

    Raises:
        ConfigError: unknown benchmark or bad options (one line naming it).
    """
    from dgym_tui.benchmarks import get_benchmark

    try:
        return get_benchmark(config.benchmark, **config.benchmark_options)
    except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:
        raise ConfigError(f"config key 'benchmark': {first_line(exc)}") from None


@dataclass
class RunJob:
    """What every episode of one run shares; executors run its episodes.

    Attributes:
        config: the validated run configuration.
        output_dir: the run's output folder (each task gets a sub-folder).
        policy_factory: ``task -> Policy``; None builds the configured policy.
        benchmark: the loaded benchmark; None loads it from ``config`` on first
            use (a Ray worker loads its own).
    """

    config: RunConfig
    output_dir: Path
    policy_factory: PolicyFactory | None = None
    benchmark: Any = None

    def run_episode(self, name: str, stop: StopSignal | None = None,
                    output_dir: Path | None = None,
                    task_info: dict[str, Any] | None = None) -> TaskStatus:
        """Run the episode of task ``name`` (:func:`run_task`) into ``output_dir``
        (default: the run's); ``task_info`` adds keys to the trajectory header's task.

        Raises:
            KeyboardInterrupt: Ctrl-C in this thread, after the episode was ended.
        """
        if self.benchmark is None:
            self.benchmark = load_benchmark(self.config)
        return run_task(self.config, self.benchmark, name, Path(output_dir or self.output_dir),
                        self.policy_factory, interrupt=stop, task_info=task_info)

    def stopped_status(self, name: str) -> TaskStatus:
        """The status an episode stopped by Ctrl-C left (or a bare interrupted one)."""
        return read_status(task_folder(self.output_dir, name)) \
            or TaskStatus(task=name, state=INTERRUPTED, reason=INTERRUPTED)

    def failed_status(self, name: str, error: str) -> TaskStatus:
        """Write and return an ``error`` status for ``name`` (an episode lost outside
        :func:`run_task`, e.g. its Ray node died twice)."""
        folder = task_folder(self.output_dir, name)
        folder.mkdir(parents=True, exist_ok=True)
        status = TaskStatus(task=name, state="error", error=error.splitlines()[0][:500])
        write_json(folder / STATUS_FILE, status.to_dict())
        return status


def run_tasks(config: RunConfig, workers: int | None = None, force: bool = False,
              output_dir: Path | None = None, policy_factory: PolicyFactory | None = None,
              console: Any = None, progress: bool = True, executor: Any = None) -> RunSummary:
    """Run every selected task of ``config``; print a progress bar and a summary table.

    Args:
        config: a validated :class:`RunConfig`.
        workers: parallel threads; None uses ``config.workers``.
        force: run tasks again even if their ``status.json`` says done.
        output_dir: results folder; None uses ``config.output_dir``.
        policy_factory: ``task -> Policy`` instead of the configured policy.
        console: a ``rich.console.Console`` to print to (None: stderr for the
            progress bar, stdout for the table).
        progress: show the progress bar.
        executor: where episodes run (:mod:`dgym_tui.runs.executors.local`, e.g. a
            ``RayExecutor``); None: ``workers`` threads here.

    Returns:
        The :class:`RunSummary` (also written to ``<output_dir>/summary.json``).

    Raises:
        ConfigError: unknown benchmark / task, a human policy with more than
            one worker, or an agent / LLM entry that cannot be loaded.
        KeyboardInterrupt: Ctrl-C, after every running episode has ended
            (reason ``"interrupted"``) and ``summary.json`` was written.
    """
    from rich.console import Console

    from dgym_tui.runs.executors.progress import RunProgress

    workers = workers or config.workers
    output_dir = Path(output_dir or config.output_dir)
    if config.policy == "human" and (workers > 1 or executor is not None):
        raise ConfigError("policy 'human' reads actions from stdin: use one worker (-n 1)")
    if config.mode != "auto":
        raise ConfigError(f"config key 'mode': dgym run is headless and needs 'auto', got "
                          f"{config.mode!r}; use dgym-tui to approve actions")
    if policy_factory is None and config.policy == "agent":
        make_policy("agent", config.agent, config.llm, config.llm_config)  # fail fast, one line
    benchmark = load_benchmark(config)
    names = select_tasks(config, benchmark)
    output_dir.mkdir(parents=True, exist_ok=True)
    out = console or Console()
    if console is None and not out.is_terminal:  # piped / redirected: no 80-column squeeze
        out = Console(width=160)
    err = console or Console(stderr=True)

    results: dict[str, TaskStatus] = {}
    todo = []
    for name in names:
        previous = None if force else read_status(task_folder(output_dir, name))
        if previous is not None and previous.state == "done":
            previous.state = "skipped"
            results[name] = previous
        else:
            todo.append(name)
    if results:
        err.print(f"skipped {len(results)} finished episode(s) of {len(names)} in {output_dir} "
                  "(--rerun runs them again)", markup=False, highlight=False)
    if todo:
        err.print(f"watch and review it: dgym-tui {output_dir}", markup=False, highlight=False)

    executor = executor or LocalExecutor(workers)
    job = RunJob(config, output_dir, policy_factory, benchmark)
    try:
        with RunProgress(len(todo), console=err, enabled=progress) as bar:
            executor.run(job, todo, results, bar)
    except KeyboardInterrupt:
        write_run_summary(output_dir, names, results)
        raise

    summary = write_run_summary(output_dir, names, results)
    out.print(summary_table(summary))
    for status in summary.statuses:
        if status.error:
            out.print(f"{status.task}: {status.error}", markup=False, highlight=False)
    return summary


def write_run_summary(output_dir: Path, names: list[str],
                      results: dict[str, TaskStatus]) -> RunSummary:
    """Write the run's ``summary.json``: the statuses of ``names`` that have one, in that order.

    Args:
        output_dir: the run folder.
        names: task names in run order.
        results: task name -> status (tasks without one are left out).

    Returns:
        The :class:`RunSummary` written.
    """
    summary = RunSummary(output_dir, [results[name] for name in names if name in results])
    write_json(output_dir / "summary.json", [s.to_dict() for s in summary.statuses])
    return summary


def summary_table(summary: RunSummary) -> Any:
    """Return a ``rich.table.Table``: per task resolved, score, steps, tokens, cost,
    wall time and state; a total row at the bottom."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=Text(f"dgym run: {summary.output_dir}"), show_footer=False)
    table.add_column("task", justify="left", no_wrap=True)
    for column, justify in (("resolved", "center"), ("score", "right"),
                            ("steps", "right"), ("tokens", "right"), ("cost $", "right"),
                            ("wall s", "right"), ("state", "left")):
        table.add_column(column, justify=justify, no_wrap=True,
                         min_width=10 if column == "state" else None)
    tokens = cost = wall = steps = 0
    for s in summary.statuses:
        used = s.prompt_tokens + s.completion_tokens
        tokens, cost, wall, steps = tokens + used, cost + s.cost, wall + s.wall_time, steps + s.steps
        table.add_row(Text(one_line(s.task)),  # a task folder's name: never markup
                      "yes" if s.resolved else "no", f"{s.score}/{s.max_score}",
                      str(s.steps), str(used), f"{s.cost:.4f}", f"{s.wall_time:.1f}", s.state)
    total = len(summary.statuses)
    table.add_section()
    table.add_row("total", f"{summary.resolved}/{total}", "", str(steps), str(tokens),
                  f"{cost:.4f}", f"{wall:.1f}", f"{summary.errors} error(s)")
    return table
