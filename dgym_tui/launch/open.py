"""Open an episode: a :class:`~dgym_tui.benchmarks.base.Task` in, a session out.

The task is the one spec of an episode: a benchmark loads it (``--task
BENCH/TASK``), a bare folder is the ``local`` benchmark's task, and a
trajectory header holds it (``Task.to_dict``), so replay and fork rebuild the
same episode. :func:`open_session` is the one place that turns a task into an
environment and a :class:`~dgym_tui.episode.session.Session`; ``dgym run``, ``dgym
play``, ``dgym-tui`` (folder, ``--task``, ``--replay`` and fork) all use it.
"""

from __future__ import annotations

from dataclasses import fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dgym_tui.benchmarks.base import Task, get_benchmark
from dgym_tui.benchmarks.local import TERMINAL_REQUEST
from dgym_tui.core.errors import first_line
from dgym_tui.episode.session import DEFAULT_MAX_STEPS, Session
from dgym_tui.support.paths import hidden_patterns

if TYPE_CHECKING:
    from dgym_tui.episode.policy import Policy

#: The benchmark of a ``--task NAME`` without ``BENCH/``.
DEFAULT_BENCHMARK = "mini"
#: RepoEnv options recorded in a header's ``environment`` (the rest of the spec is the task).
ENV_OPTIONS = ("tools", "eval_timeout", "pdb_timeout", "max_output", "tool_options", "mcp_servers")
_TASK_FIELDS = frozenset(f.name for f in fields(Task))


class UsageError(Exception):
    """A problem the person at the command line can fix; the message is one line saying how.

    Front ends print it as ``PROG: error: MESSAGE`` and exit with status 2.
    """


def load_task(ref: str, benchmark: str | None = None) -> Task:
    """Load a task named on the command line.

    Args:
        ref: ``BENCH/TASK`` (e.g. ``mini/shopping_cart``), or a plain ``TASK``
            of ``benchmark``.
        benchmark: the benchmark of a plain name (``--task NAME --benchmark
            B``); None means ``mini``. A ``ref`` that starts with
            ``benchmark + "/"`` is accepted too.

    Raises:
        UsageError: a malformed reference, an unknown benchmark or task (the
            message lists close names), or a loader that cannot build it.
    """
    if benchmark:
        bench_name, task_name = benchmark, ref.removeprefix(f"{benchmark}/")
    else:
        bench_name, sep, task_name = ref.partition("/")
        if not sep:
            bench_name, task_name = DEFAULT_BENCHMARK, ref
    if not bench_name or not task_name:
        raise UsageError(f"--task needs BENCH/TASK or TASK (e.g. mini/shopping_cart), got {ref!r}")
    try:
        return get_benchmark(bench_name).load(task_name)
    except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:
        raise UsageError(first_line(exc)) from None


def task_from_header(header: dict[str, Any]) -> tuple[Task, dict[str, Any]]:
    """Rebuild the task and the environment options a trajectory was recorded with.

    A benchmark's task is loaded again (its recorded folder may be a scratch
    copy that is gone): the fresh load gives the ``path`` and what a record
    cannot hold (``grader``, ``meta``); every other setting stays as
    recorded. A ``local`` task is the record alone. Headers written before
    the task record (``task_name``, terminal / image under ``environment``)
    are read too.

    Args:
        header: a trajectory header (``Trajectory.header``).

    Returns:
        ``(task, options)``: options are :data:`ENV_OPTIONS` for ``RepoEnv``.

    Raises:
        TrajectoryError: the header holds no usable task, or its folder is gone
            and its benchmark cannot load it again.
    """
    from dgym_tui.episode.trajectory import TrajectoryError  # not before a first frame

    record = dict(header.get("task") or {})
    environment = dict(header.get("environment") or {})
    for key in ("terminal", "image"):  # older headers kept them with the environment
        if key in environment and record.get(key) is None:
            record[key] = environment[key]
    if record.get("task_name"):
        record["name"] = record["task_name"]
    record.setdefault("benchmark", "local")
    try:
        task = Task.from_dict(record)
    except TypeError:
        raise TrajectoryError("the header's task record lacks name, path or entrypoint; "
                              "it cannot be replayed") from None
    if task.benchmark != "local":
        try:
            fresh = get_benchmark(task.benchmark, **task.benchmark_options).load(task.name)
        except (KeyError, ValueError, TypeError, FileNotFoundError) as exc:
            if not task.path.is_dir():
                raise TrajectoryError(f"cannot rebuild task {task.ref!r}: {first_line(exc)}") from None
        else:  # the record's settings win; the loader adds what no record holds
            task = replace(task, path=fresh.path, grader=fresh.grader, meta=fresh.meta)
    elif not task.path.is_dir():
        raise TrajectoryError(f"cannot rebuild the environment: source folder "
                              f"{str(task.path)!r} is gone")
    # A trajectory may come from anyone: the terminal it recorded is a request that may
    # raise the person's sandbox, never lower it (launch.sandbox.choose_terminal).
    task = replace(task, meta={**task.meta, TERMINAL_REQUEST: "the trajectory"})
    return task, {key: environment[key] for key in ENV_OPTIONS if environment.get(key) is not None}


def open_session(task: Task, policy: Policy | None = None, mode: str = "human",
                 max_steps: int = DEFAULT_MAX_STEPS, trajectory: str | Path | None = None,
                 overrides: dict[str, Any] | None = None, *, config: dict[str, Any] | None = None,
                 stop_on_resolved: bool = False, check: bool = False) -> Session:
    """Build the environment and the session of one episode (not started yet).

    Args:
        task: the episode's spec.
        policy: who proposes actions (None: a person only).
        mode: ``"human"``, ``"approve"`` or ``"auto"``.
        max_steps: the step budget.
        trajectory: where the trajectory is written (None: nowhere); inside
            the repository, its folder is hidden from the agent.
        overrides: ``RepoEnv`` keyword arguments that win over the task's
            values (``terminal``, ``image``, ``entrypoint``, ``tools``,
            ``eval_timeout``, ...). Those that are task settings are written
            into the recorded task, so a replay uses them too.
        config: the front end's configuration, kept in the header.
        stop_on_resolved: end the episode as soon as a step is resolved.
        check: first check that Docker is reachable and the image present when
            the task runs in Docker (front ends: one clear line instead of a
            failed start).

    Returns:
        The :class:`Session`; ``session.start()`` resets the environment. The
        caller closes ``session.env``.

    Raises:
        UsageError: ``check`` found Docker unusable.
        ValueError: the environment refuses the settings (unknown tool,
            Docker without an image, ...), or a bad ``mode`` / ``max_steps``.
        TypeError: an override that is no ``RepoEnv`` argument.
    """
    spec = {key: value for key, value in (overrides or {}).items()
            if key in _TASK_FIELDS and (key != "terminal" or isinstance(value, str))}
    options = {key: value for key, value in (overrides or {}).items() if key not in spec}
    task = replace(task, **spec)
    if check and task.terminal == "docker":
        from dgym_tui.core.terminals.docker import DEFAULT_IMAGE

        check_docker(task.image or DEFAULT_IMAGE)  # no image named: the sandbox image
    if trajectory is not None:  # a trajectory written inside the repository: hidden from the agent
        hidden = [p for p in hidden_patterns(task.path, [trajectory]) if p not in task.ignore]
        task = replace(task, ignore=[*task.ignore, *hidden])
    env = task.make_env(**options)
    environment = {key: list(env.tools) if key == "tools" else getattr(env, key)
                   for key in ENV_OPTIONS}
    try:
        return Session(env, policy, mode=mode, max_steps=max_steps, trajectory_path=trajectory,
                       task_name=task.name if task.benchmark == "local" else task.ref,
                       config=config, stop_on_resolved=stop_on_resolved,
                       task=task.to_dict(), environment=environment)
    except BaseException:
        env.close()
        raise


def check_docker(image: str) -> None:
    """Raise UsageError when the Docker daemon is not reachable or ``image`` is missing.

    Args:
        image: the image tag the episode needs.
    """
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as exc:  # noqa: BLE001  any failure means "no Docker"
        raise UsageError(f"Docker is not reachable ({first_line(exc)[:120]}); start the Docker "
                         "daemon or use --terminal local") from None
    from docker.errors import ImageNotFound

    from dgym_tui.core.terminals.docker import DEFAULT_IMAGE

    try:
        client.images.get(image)
    except ImageNotFound:
        hint = "scripts/setup_docker.sh builds it" if image == DEFAULT_IMAGE else "build or pull it"
        raise UsageError(f"Docker image {image} not found ({hint}), "
                         "or pass another --image") from None
    except Exception:  # noqa: BLE001, S110  other failures surface when the container starts
        pass
