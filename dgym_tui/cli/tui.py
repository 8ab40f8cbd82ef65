"""The ``dgym-tui`` command line: parse the arguments, open the episode, run the app.

Usage::

    dgym-tui PATH [--entrypoint CMD]            debug your own repository
    dgym-tui --task [BENCH/]TASK                a benchmark task (plain TASK: mini)
    dgym-tui ... --agent debug_agent --llm NAME an agent proposes, you approve
    dgym-tui --replay TRAJ.jsonl                browse a recorded trajectory (f forks)
    dgym-tui RUN_DIR [RUN_DIR ...]              browse and review the episodes of dgym runs
                                                (or the saved sessions of a folder of them)
    dgym-tui ... --serve [--host H --port P]    the same app in a web browser (textual-serve)

Errors a user can cause (missing path, bad config, no Docker, unknown task)
print one line ``dgym-tui: error: ...`` and exit with code 2. Textual is
imported only when the app is built.
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

from dgym_tui.core.errors import first_line
from dgym_tui.core.terminals import cleanup
from dgym_tui.episode.session import DEFAULT_MAX_STEPS
from dgym_tui.launch.open import UsageError, load_task, open_session

PROG = "dgym-tui"


def build_parser() -> argparse.ArgumentParser:
    """Return the ``dgym-tui`` argument parser."""
    p = argparse.ArgumentParser(prog=PROG, description=(
        "Debug a Python repository with pdb in a sandbox, alone or with an agent."))
    p.add_argument("path", nargs="?", help="repository folder to debug, or a dgym run folder "
                   "(or several, or the folder of saved sessions) to browse its episodes")
    p.add_argument("more_runs", nargs="*", metavar="RUN_DIR", help="more run folders to browse")
    add_episode_arguments(p)
    p.add_argument("--agent", help="agent spec that proposes actions, e.g. debug_agent")
    p.add_argument("--llm", help="LLM name for --agent (from llm.yaml)")
    p.add_argument("--llm-config", metavar="FILE", help="the llm.yaml to read --llm from "
                   "(default: $DGYM_LLM_CONFIG, else ~/.config/dgym-tui/llm.yaml)")
    p.add_argument("--mode", choices=("human", "approve", "auto"),
                   help="start mode (default: approve with --agent, else human)")
    p.add_argument("--replay", metavar="TRAJ.jsonl", help="open a recorded trajectory")
    p.add_argument("--theme", default="dgym-dark", help="start theme (dgym-dark, dgym-light, "
                   "or any Textual theme)")
    p.add_argument("--study", metavar="STUDY.yaml",
                   help="work through a study's task queue (see README: Running a study)")
    p.add_argument("--participant", metavar="ID",
                   help="pseudonymous participant id for --study (asked for when missing)")
    p.add_argument("--no-apply-prompt", action="store_true",
                   help="do not offer to apply the patch when the episode ends")
    p.add_argument("--reviewer", metavar="NAME", help="run browser: the name your review "
                   "verdicts are saved under (default: $DGYM_REVIEWER, else asked once)")
    p.add_argument("--serve", action="store_true", help="serve the app to web browsers "
                   "(textual-serve; each tab gets its own app) instead of running it here")
    p.add_argument("--host", default="127.0.0.1", help="--serve: address to listen on "
                   "(default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="--serve: TCP port (default 8000)")
    return p


def add_episode_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options that say which episode to open and how: ``--entrypoint``, ``--task``,
    ``--benchmark``, ``--max-steps``, ``--terminal``, ``--image``, ``--bash``, ``--trajectory``
    (``dgym-tui`` and ``dgym mcp`` share them; :func:`open_episode` reads them)."""
    p.add_argument("--entrypoint", help="command that runs the tests (default: the folder's "
                   "dgym.yaml/task.yaml 'entrypoint', else pytest)")
    p.add_argument("--task", metavar="[BENCH/]TASK",
                   help="a benchmark task, e.g. mini/shopping_cart (plain TASK: mini)")
    p.add_argument("--benchmark", help="benchmark of a plain --task name (alias of BENCH/TASK)")
    p.add_argument("--max-steps", type=int, default=DEFAULT_MAX_STEPS,
                   help=f"step budget (default {DEFAULT_MAX_STEPS})")
    p.add_argument("--terminal", choices=("bwrap", "docker", "local"), help=(
        "where commands run: bwrap (the default for PATH where bubblewrap works: a sandbox "
        "without network, the system read-only, ignored files hidden), docker, or local "
        "(your own rights: only for code you trust)"))
    p.add_argument("--image", help="Docker image for --terminal docker")
    p.add_argument("--bash", action="store_true", help="also offer the bash tool: one shell "
                   "per episode, in the same sandbox (the app's console runs $ COMMAND)")
    p.add_argument("--trajectory", metavar="OUT.jsonl",
                   help="where to write the trajectory (default: a new "
                   "$XDG_DATA_HOME/dgym-tui/runs/<task>-<time>.jsonl)")


def default_trajectory_path(task: str) -> Path:
    """A new, unique ``<task>-<time>.jsonl`` in the user's data folder
    (:func:`dgym_tui.support.paths.unique_trajectory_path`), never inside the repository."""
    from dgym_tui.support.paths import runs_dir, unique_trajectory_path

    try:
        return unique_trajectory_path(task)
    except OSError as exc:
        raise UsageError(f"cannot write a trajectory under {runs_dir()} ({exc.strerror or exc}); "
                         "pass --trajectory OUT.jsonl") from None


def policy_from_args(args: argparse.Namespace) -> Any:
    """The LLM agent for ``--agent`` (None without it); imports the agent module only now."""
    if not args.agent:
        return None
    if not args.llm:
        raise UsageError("--agent needs --llm NAME (an entry of llm.yaml)")
    from dgym_tui.policies import PolicyError, make_policy

    try:
        return make_policy("agent", args.agent, args.llm, getattr(args, "llm_config", None))
    except PolicyError as exc:
        raise UsageError(str(exc)) from None


def task_from_args(args: argparse.Namespace) -> Any:
    """The task PATH or ``--task`` names (a folder is the ``local`` benchmark's task).

    Raises:
        UsageError: neither given, missing folder, bad folder config, unknown task.
    """
    if args.task:
        return load_task(args.task, args.benchmark)
    if not args.path:
        raise UsageError("give a repository folder (dgym-tui PATH), --task BENCH/TASK "
                         "or --replay FILE")
    from dgym_tui.benchmarks.local import folder_task

    try:
        return folder_task(args.path)
    except ValueError as exc:
        raise UsageError(first_line(exc)) from None


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
    probe = None
    if args.path and not (args.terminal or args.task or args.replay):
        # A folder's default terminal depends on whether bwrap works: its probe (a
        # process, ~0.1 s) runs while the app's modules are imported.
        from dgym_tui.core.terminals.bwrap import bwrap_problem

        probe = threading.Thread(target=bwrap_problem, name="dgym-bwrap-probe", daemon=True)
        probe.start()
    from dgym_tui.tui.app import DgymApp

    check_theme(args.theme)

    if args.replay:
        from dgym_tui.episode.trajectory import TrajectoryError, read_trajectory
        from dgym_tui.tui.replay_model import ReplayModel

        try:
            traj = read_trajectory(args.replay)
        except TrajectoryError as exc:
            raise UsageError(first_line(exc)) from None
        model = ReplayModel(traj)

        def fork(step: int) -> Any:
            from dgym_tui.launch.replay import fork as replay_fork

            out = Path(args.trajectory) if args.trajectory else default_trajectory_path(
                f"fork-{model.task_name}")  # reserved only when a fork happens
            return replay_fork(traj, step, None, output=out, mode="human", start=False,
                               terminal=args.terminal)

        return DgymApp(replay=model, fork=fork, ask_apply=not args.no_apply_prompt,
                       theme_name=args.theme)
    if args.max_steps < 1:
        raise UsageError("--max-steps must be at least 1")
    policy = policy_from_args(args)
    task = task_from_args(args)
    mode = args.mode or ("approve" if policy is not None else "human")
    if mode != "human" and policy is None:
        raise UsageError(f"--mode {mode} needs --agent NAME --llm NAME")
    options: dict[str, Any] = {}
    if policy is not None:  # the agent's own tools (e.g. bash) join the default set
        from dgym_tui.core.env import DEFAULT_TOOLS
        from dgym_tui.runs.runner import agent_env_options

        wanted = agent_env_options("agent", args.agent)
        extra = [t for t in wanted.get("tools", []) if t not in DEFAULT_TOOLS]
        if extra:
            options["tools"] = [*DEFAULT_TOOLS, *extra]
        if wanted.get("tool_options"):
            options["tool_options"] = wanted["tool_options"]
        if wanted.get("mcp_servers"):  # the spec's MCP servers' tools join too
            options["mcp_servers"] = wanted["mcp_servers"]
    config = {"mode": mode, "max_steps": args.max_steps, "agent": args.agent, "llm": args.llm,
              "front_end": "tui"}
    session = open_episode(args, task, policy, mode, config, probe, options=options)
    # A benchmark task's source is a scratch copy: there is nothing to apply a patch to.
    return DgymApp(session=session, ask_apply=not args.no_apply_prompt, theme_name=args.theme,
                   can_apply=task.benchmark == "local")


def open_episode(args: argparse.Namespace, task: Any, policy: Any, mode: str,
                 config: dict[str, Any], probe: threading.Thread | None = None,
                 prog: str = PROG, options: dict[str, Any] | None = None) -> Any:
    """Open the session of ``task`` with the :func:`add_episode_arguments` options.

    A folder without ``--terminal`` runs in bwrap where it works (else locally, with a
    notice on stderr); its own dgym.yaml may raise that sandbox, never lower it
    (:func:`dgym_tui.launch.sandbox.choose_terminal`); the trajectory goes to
    ``--trajectory`` or a new file in the user's runs folder. ``dgym-tui`` and ``dgym mcp``
    open their episodes here.

    Args:
        args: parsed arguments (the :func:`add_episode_arguments` options).
        task: the episode's :class:`~dgym_tui.benchmarks.base.Task` (:func:`task_from_args`).
        policy: who proposes actions (None: a person only).
        mode: the session's start mode.
        config: the front end's settings, kept in the trajectory header.
        probe: a running bwrap probe thread to join before the terminal is chosen.
        prog: the program name of notices.
        options: more ``RepoEnv`` settings (``tools``, ``tool_options``, ...).

    Returns:
        The :class:`~dgym_tui.episode.session.Session`, not started.

    Raises:
        UsageError: any user-fixable problem (unwritable trajectory folder, no Docker, ...).
    """
    label = task.name if task.benchmark == "local" else task.ref
    out = Path(args.trajectory) if args.trajectory else default_trajectory_path(label)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out.parent}: {exc.strerror}; pass --trajectory") from None
    overrides = {key: value for key, value in (("terminal", args.terminal), ("image", args.image),
                                               ("entrypoint", args.entrypoint)) if value}
    from dgym_tui.launch.sandbox import choose_terminal

    def default() -> tuple[str, str | None]:  # a sandbox where it works
        from dgym_tui.core.terminals.bwrap import default_terminal

        if probe is not None:
            probe.join()  # then default_terminal reads the probe's cached answer
        return default_terminal()

    terminal, notices = choose_terminal(task, args.terminal, default)  # a repository cannot lower it
    if terminal:
        overrides["terminal"] = terminal
    for notice in notices:
        print(f"{prog}: {notice}", file=sys.stderr)
    overrides.update(options or {})
    if getattr(args, "bash", False):
        from dgym_tui.core.env import DEFAULT_TOOLS

        tools = list(overrides.get("tools") or DEFAULT_TOOLS)
        overrides["tools"] = tools if "bash" in tools else [*tools, "bash"]
    try:
        session = open_session(task, policy, mode, args.max_steps, out, overrides, config=config,
                               check=True)
    except (ValueError, TypeError) as exc:
        raise UsageError(first_line(exc)) from None
    return session


def main(argv: list[str] | None = None) -> int:
    """Run ``dgym-tui``.

    Args:
        argv: arguments without the program name (None: ``sys.argv[1:]``).

    Returns:
        Exit code: 0 on a normal end, 2 on a usage problem (missing path,
        bad config, no Docker, episode that cannot start), 1 when the app crashed.
    """
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    # From the main thread: the episode starts in a worker thread, where no signal handler
    # can be installed. A closed terminal window (SIGHUP) or a SIGTERM then closes the
    # environment and its terminals (working copy, scratch and plugin folders, processes)
    # before the process ends, as a quit does.
    cleanup.install_handlers()
    if args.serve:
        from dgym_tui.tui.serve import serve

        return serve(argv, args.host, args.port)
    from dgym_tui.tui.serve import exit_with_server

    exit_with_server()  # a browser tab's app: it quits when its server dies
    if args.study:
        return _main_study(args)
    from dgym_tui.runs.index import is_run_folder

    runs = [args.path, *args.more_runs] if args.path else []
    if args.more_runs or (runs and not args.replay and not args.task and is_run_folder(runs[0])):
        missing = [p for p in runs if not is_run_folder(p)]
        if missing:
            print(f"{PROG}: error: {missing[0]} holds no dgym run (no episode folders); "
                  "give run folders only", file=sys.stderr)
            return 2
        from dgym_tui.runs.reviews import reviewer_name
        from dgym_tui.tui.screens.runs import browse_runs

        return browse_runs([Path(p) for p in runs], args.theme,
                           reviewer_name(args.reviewer) or None)
    try:
        app = build_app(args)
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
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
        for line in app.warnings.lines:  # shown as toasts, if the app was still drawing
            print(f"{PROG}: warning: {line}", file=sys.stderr)
        if (app.session is not None and app.session.trajectory_path
                and Path(app.session.trajectory_path).exists()):
            print(f"trajectory: {app.session.trajectory_path}", file=sys.stderr)
    if app.start_error is not None:
        print(app.start_error, file=sys.stderr)
        return 2
    return int(app.return_code or 0)


def _main_study(args: argparse.Namespace) -> int:
    """``dgym-tui --study``: check the study and the participant id, then run the queue."""
    from dgym_tui.study.plan import check_participant, load_study, open_results

    try:
        study = load_study(args.study)
        participant = args.participant
        if participant is None:
            participant = input("participant id (a pseudonym, e.g. P07): ").strip()
        check_participant(participant)
        open_results(study)
        check_theme(args.theme)
    except (UsageError, EOFError) as exc:
        print(f"{PROG}: error: {exc or 'no participant id given'}", file=sys.stderr)
        return 2
    from dgym_tui.tui.study_app import run_study

    try:
        return run_study(study, participant, theme_name=args.theme,
                         out=lambda line: print(line, file=sys.stderr))
    except UsageError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
