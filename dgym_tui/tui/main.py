"""``dgym-tui``: command-line front door of the Textual app.

Usage::

    dgym-tui PATH [--entrypoint CMD]            debug your own repository
    dgym-tui --task NAME [--benchmark B]        a benchmark task (default benchmark: mini)
    dgym-tui ... --agent debug_agent --llm NAME an agent proposes, you approve
    dgym-tui --replay TRAJ.jsonl                browse a recorded trajectory (f forks)

Errors a user can cause (missing path, bad config, no Docker, unknown task)
print one line and exit with code 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

DEFAULT_ENTRYPOINT = "python -m pytest -q"
CONFIG_FILES = ("dgym.yaml", "task.yaml")


class UsageError(Exception):
    """A problem the user can fix; the message is one line saying how."""


def build_parser() -> argparse.ArgumentParser:
    """Return the ``dgym-tui`` argument parser."""
    p = argparse.ArgumentParser(prog="dgym-tui", description=(
        "Debug a Python repository with pdb in a sandbox, alone or with an agent."))
    p.add_argument("path", nargs="?", help="repository folder to debug")
    p.add_argument("--entrypoint", help="command that runs the tests "
                   f"(default: the folder's dgym.yaml/task.yaml 'entrypoint', else "
                   f"'{DEFAULT_ENTRYPOINT}')")
    p.add_argument("--task", help="task name of a benchmark (see --benchmark)")
    p.add_argument("--benchmark", default="mini", help="benchmark of --task (default: mini)")
    p.add_argument("--agent", help="agent spec that proposes actions, e.g. debug_agent")
    p.add_argument("--llm", help="LLM name for --agent (from llm.yaml)")
    p.add_argument("--mode", choices=("human", "approve", "auto"),
                   help="start mode (default: approve with --agent, else human)")
    p.add_argument("--max-steps", type=int, default=50, help="step budget (default 50)")
    p.add_argument("--replay", metavar="TRAJ.jsonl", help="open a recorded trajectory")
    p.add_argument("--terminal", choices=("bwrap", "docker", "local"), help=(
        "where commands run: bwrap (the default for PATH where bubblewrap works: a sandbox "
        "without network, the system read-only, ignored files hidden), docker, or local "
        "(your own rights: only for code you trust)"))
    p.add_argument("--image", help="Docker image for --terminal docker")
    p.add_argument("--trajectory", metavar="OUT.jsonl",
                   help="where to write the trajectory (default: a new "
                   "$XDG_DATA_HOME/dgym-tui/runs/<task>-<time>.jsonl)")
    p.add_argument("--theme", default="dgym-dark", help="start theme (dgym-dark, dgym-light, "
                   "or any Textual theme)")
    p.add_argument("--no-apply-prompt", action="store_true",
                   help="do not offer to apply the patch when the episode ends")
    return p


def read_folder_config(folder: Path) -> dict[str, Any]:
    """Read ``dgym.yaml`` or ``task.yaml`` in ``folder`` ({} when neither exists).

    Raises:
        UsageError: the file is not valid YAML or not a mapping.
    """
    import yaml

    for name in CONFIG_FILES:
        path = folder / name
        if path.is_file():
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError) as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise UsageError(f"bad config {path}: {first}; fix the YAML") from None
            if not isinstance(data, dict):
                raise UsageError(f"bad config {path}: expected a mapping like "
                                 "'entrypoint: python -m pytest -q'")
            return data
    return {}


def default_trajectory_path(task: str) -> Path:
    """A new, unique ``<task>-<time>.jsonl`` in the user's data folder
    (:func:`dgym_tui.paths.unique_trajectory_path`), never inside the repository."""
    from dgym_tui.paths import runs_dir, unique_trajectory_path

    try:
        return unique_trajectory_path(task)
    except OSError as exc:
        raise UsageError(f"cannot write a trajectory under {runs_dir()} ({exc.strerror or exc}); "
                         "pass --trajectory OUT.jsonl") from None


def check_docker(image: str | None = None) -> None:
    """Raise UsageError when the Docker daemon is not reachable or ``image`` is missing.

    Args:
        image: a local image tag to look for (None: only ping the daemon).
    """
    try:
        import docker

        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as exc:  # noqa: BLE001  any failure means "no Docker"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"Docker is not reachable ({first[:120]}); start the Docker daemon "
                         "or use --terminal local") from None
    if image:
        from docker.errors import ImageNotFound

        try:
            client.images.get(image)
        except ImageNotFound:
            raise UsageError(f"Docker image {image} not found; build or pull it, "
                             "or pass another --image") from None
        except Exception:  # noqa: BLE001, S110  other failures surface when the container starts
            pass


def make_policy(args: argparse.Namespace) -> Any:
    """Build the LLM agent for ``--agent`` (imports the agent module only now)."""
    if not args.agent:
        return None
    if not args.llm:
        raise UsageError("--agent needs --llm NAME (an entry of llm.yaml)")
    from dgym_tui.agent import AgentSpecError
    from dgym_tui.agent_factory import make_agent
    from dgym_tui.llm import LLMConfigError

    try:
        return make_agent(args.agent, llm=args.llm)
    except (AgentSpecError, LLMConfigError, KeyError, ValueError, FileNotFoundError) as exc:
        msg = exc.args[0] if exc.args else str(exc)
        raise UsageError(f"cannot build agent {args.agent!r}: {msg}") from None


def make_env(args: argparse.Namespace) -> tuple[Any, str, dict[str, Any]]:
    """Build the (not reset) RepoEnv for PATH or --task.

    Returns:
        ``(env, task_name, task_info)``.

    Raises:
        UsageError: missing folder, bad config, unknown task, no Docker.
    """
    overrides: dict[str, Any] = {}
    if args.terminal:
        overrides["terminal"] = args.terminal
    if args.image:
        overrides["image"] = args.image
    if args.task:
        from dgym_tui.benchmarks import get_benchmark

        try:
            task = get_benchmark(args.benchmark).load(args.task)
        except (KeyError, ValueError, FileNotFoundError) as exc:
            raise UsageError(str(exc.args[0] if exc.args else exc).splitlines()[0]) from None
        if args.entrypoint:
            overrides["entrypoint"] = args.entrypoint
        if overrides.get("terminal") == "docker":
            check_docker(overrides.get("image") or getattr(task, "image", None))
        try:
            env = task.make_env(**overrides)
        except (ValueError, TypeError) as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
        return env, f"{task.benchmark}/{task.name}", {
            "benchmark": task.benchmark, "task_name": task.name, "name": task.name}
    if not args.path:
        raise UsageError("give a repository folder (dgym-tui PATH), --task NAME or --replay FILE")
    folder = Path(args.path).expanduser()
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{args.path} is a file, not a folder; give the repository folder "
                         "that holds it")
    if not folder.is_dir():
        raise UsageError(f"no such folder: {args.path}; give the path of a repository folder")
    config = read_folder_config(folder)
    entrypoint = args.entrypoint or config.get("entrypoint") or DEFAULT_ENTRYPOINT
    terminal = overrides.get("terminal") or config.get("terminal")
    if not terminal:
        from dgym_tui.core.terminals.bwrap import default_terminal

        terminal, notice = default_terminal()
        if notice:
            print(f"dgym-tui: {notice}", file=sys.stderr)
    image = overrides.get("image") or config.get("image")
    if terminal == "docker":
        if not image:
            raise UsageError("--terminal docker needs an image: pass --image TAG "
                             "or set 'image' in dgym.yaml")
        check_docker(str(image))
    kwargs: dict[str, Any] = {"entrypoint": str(entrypoint), "terminal": terminal}
    if image:
        kwargs["image"] = image
    for key in ("debug_entrypoint", "ignore", "readonly", "setup_commands"):
        if config.get(key) is not None:
            kwargs[key] = config[key]
    if config.get("description"):
        kwargs["task"] = str(config["description"])
    from dgym_tui.core.env import RepoEnv

    try:
        env = RepoEnv(folder.resolve(), **kwargs)
    except (ValueError, TypeError) as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    return env, folder.resolve().name, {"name": folder.resolve().name}


def check_theme(name: str) -> None:
    """Raise UsageError unless ``name`` is one of ours or a Textual built-in theme."""
    from textual.theme import BUILTIN_THEMES

    from dgym_tui.tui.themes import load_themes

    names = [t.name for t in load_themes()] + sorted(BUILTIN_THEMES)
    if name not in names:
        raise UsageError(f"unknown theme {name!r}; pick one of: {', '.join(names)}")


def build_app(args: argparse.Namespace) -> Any:
    """Build the DgymApp for parsed arguments (live session or replay).

    Raises:
        UsageError: any user-fixable problem.
    """
    from dgym_tui.tui.app import DgymApp

    check_theme(args.theme)

    if args.replay:
        from dgym_tui.trajectory import TrajectoryError, read_trajectory
        from dgym_tui.tui.replay_model import ReplayModel

        try:
            traj = read_trajectory(args.replay)
        except TrajectoryError as exc:
            raise UsageError(str(exc).splitlines()[0]) from None
        model = ReplayModel(traj)

        def fork(step: int) -> Any:
            from dgym_tui.replay import fork as replay_fork

            out = Path(args.trajectory) if args.trajectory else default_trajectory_path(
                f"fork-{model.task_name}")  # reserved only when a fork happens
            return replay_fork(traj, step, None, output=out, mode="human", start=False)

        return DgymApp(replay=model, fork=fork, ask_apply=not args.no_apply_prompt,
                       theme_name=args.theme)
    if args.max_steps < 1:
        raise UsageError("--max-steps must be at least 1")
    policy = make_policy(args)
    env, task_name, task_info = make_env(args)
    from dgym_tui.session import Session

    mode = args.mode or ("approve" if policy is not None else "human")
    if mode != "human" and policy is None:
        raise UsageError(f"--mode {mode} needs --agent NAME --llm NAME")
    out = Path(args.trajectory) if args.trajectory else default_trajectory_path(task_name)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out.parent}: {exc.strerror}; pass --trajectory") from None
    from dgym_tui.paths import hidden_patterns

    # a trajectory written inside the repository must never reach the agent
    env.ignore.extend(p for p in hidden_patterns(env.path, [out]) if p not in env.ignore)
    config = {"mode": mode, "max_steps": args.max_steps, "agent": args.agent, "llm": args.llm,
              "front_end": "tui"}
    session = Session(env, policy, mode=mode, max_steps=args.max_steps, trajectory_path=out,
                      task_name=task_name, config=config, task_info=task_info)
    # A benchmark task's source is a scratch copy: there is nothing to apply a patch to.
    return DgymApp(session=session, ask_apply=not args.no_apply_prompt, theme_name=args.theme,
                   can_apply=not args.task)


def main(argv: list[str] | None = None) -> int:
    """Run ``dgym-tui``.

    Args:
        argv: arguments without the program name (None: ``sys.argv[1:]``).

    Returns:
        Exit code: 0 on a normal end, 2 on a usage problem (missing path,
        bad config, no Docker, episode that cannot start), 1 when the app crashed.
    """
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        app = build_app(args)
    except UsageError as exc:
        print(f"dgym-tui: {exc}", file=sys.stderr)
        return 2
    reason = "quit"
    try:
        app.run()
    except BaseException:
        reason = "error: the app crashed"
        raise
    finally:
        if app.return_code not in (0, None) and reason == "quit":
            reason = "error" if app.start_error is None else "error: could not start"
        app.close_session(reason)
        if (app.session is not None and app.session.trajectory_path
                and Path(app.session.trajectory_path).exists()):
            print(f"trajectory: {app.session.trajectory_path}", file=sys.stderr)
    if app.start_error is not None:
        print(app.start_error, file=sys.stderr)
        return 2
    return int(app.return_code or 0)


if __name__ == "__main__":
    sys.exit(main())
