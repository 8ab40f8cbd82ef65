"""``dgym mcp PATH``: one episode served to an MCP client (Claude Code, Codex CLI, Cursor, ...).

The episode is opened as ``dgym-tui PATH`` opens it (same options, bwrap where it
works); the client's tool calls are the steps of its trajectory, written where
the app writes its own. Without ``--approve`` each call runs at once; with it,
the app takes this terminal and a person approves, edits, rejects (the note is
the call's result) or takes over each call, so the server then listens on HTTP.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from dataclasses import dataclass
from typing import Any

from dgym_tui.cli.tui import add_episode_arguments, open_episode, task_from_args
from dgym_tui.core.errors import first_line
from dgym_tui.launch.open import UsageError

PROG = "dgym mcp"
DEFAULT_PORT = 8765
#: Environment variable holding the bearer token an HTTP client must send (unset: none).
TOKEN_VARIABLE = "DGYM_MCP_TOKEN"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add ``dgym mcp``'s arguments to its subcommand parser."""
    p.add_argument("path", nargs="?", help="repository folder to debug")
    add_episode_arguments(p)
    p.add_argument("--http", metavar="[HOST:]PORT", type=_http_address,
                   help="serve over streamable HTTP at http://HOST:PORT/mcp instead of stdio "
                        f"(HOST defaults to 127.0.0.1: this machine only; e.g. {DEFAULT_PORT}); "
                        f"with {TOKEN_VARIABLE} set, clients must send it as a bearer token")
    p.add_argument("--approve", action="store_true",
                   help="a person approves each call in the app (needs --http: the app "
                        "takes this terminal)")
    p.add_argument("--theme", default="dgym-dark", help="--approve: the app's theme")


def _http_address(text: str) -> tuple[str, int]:
    """argparse type of ``--http``: ``PORT``, ``:PORT``, ``HOST:PORT`` or ``[IPv6]:PORT``."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep else ""
    try:
        number = int(port)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected [HOST:]PORT, got {text!r}") from None
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port {number} is not between 0 and 65535")
    return host or "127.0.0.1", number


@dataclass
class McpEpisode:
    """What ``dgym mcp`` serves: the session, the policy its calls go to, the MCP server,
    and the HTTP server (None: stdio)."""

    session: Any
    policy: Any
    server: Any
    http: Any = None


def open_server(args: argparse.Namespace) -> McpEpisode:
    """Open the episode and build its MCP server (not serving yet, the session not started).

    Raises:
        UsageError: a user-fixable problem (no path, ``--approve`` without ``--http``, ...).
    """
    if args.approve and not args.http:
        raise UsageError("--approve needs --http [HOST:]PORT: the app takes this terminal, so "
                         "the client connects over HTTP")
    from dgym_tui.integrations.mcp_server import LOOPBACK, HttpServer, build_server
    from dgym_tui.policies.external import ExternalPolicy

    policy = ExternalPolicy()
    mode = "approve" if args.approve else "auto"
    config = {"mode": mode, "max_steps": args.max_steps, "front_end": "mcp",
              "transport": "http" if args.http else "stdio"}
    if not (args.path or args.task):
        raise UsageError("give a repository folder (dgym mcp PATH) or --task BENCH/TASK")
    session = open_episode(args, task_from_args(args), policy, mode, config, prog=PROG)
    policy.attach(session)
    server = build_server(session, policy)
    http = None
    if args.http:
        host, port = args.http
        token = os.environ.get(TOKEN_VARIABLE) or None
        if token is None:
            who = "other users of this machine" if host in LOOPBACK else f"anyone who reaches {host}"
            print(f"{PROG}: warning: {TOKEN_VARIABLE} is not set: {who} can call the episode's "
                  "tools", file=sys.stderr)
        http = HttpServer(server, host, port, token=token)
    return McpEpisode(session, policy, server, http)


def run(args: argparse.Namespace) -> int:
    """Run ``dgym mcp`` with parsed arguments.

    Returns:
        0 once the client went away (stdio) or the server was stopped (Ctrl-C, the app's
        quit); 2 when the app could not start the episode.

    Raises:
        UsageError: a user-fixable problem (no path, ``--approve`` without ``--http``, ...).
    """
    episode = open_server(args)
    session = episode.session
    try:
        if args.approve:
            return _approve(args, episode)
        return _serve(episode)
    finally:
        session.env.close()
        if session.trajectory_path and os.path.exists(session.trajectory_path):
            print(f"trajectory: {session.trajectory_path}", file=sys.stderr)


def _serve(episode: McpEpisode) -> int:
    """Every call runs at once: the session's auto loop in a thread, the server here."""
    from dgym_tui.integrations.mcp_server import serve_stdio
    from dgym_tui.policies.external import PolicyClosed

    session, policy, http = episode.session, episode.policy, episode.http

    def loop() -> None:
        # The episode starts while the server already answers: a client that starts the
        # server waits for its first reply only so long (calls wait in the policy's queue).
        try:
            session.start()
        except Exception as exc:  # noqa: BLE001  every call then says why
            policy.close(f"the episode could not start: {first_line(exc)}")
            print(f"{PROG}: error: the episode could not start: {first_line(exc)}",
                  file=sys.stderr)
            return
        try:
            session.run()
        except PolicyClosed:
            pass
        except Exception as exc:  # noqa: BLE001  the episode ends; the server says so
            session.finish(f"error: {first_line(exc)}")

    runner = threading.Thread(target=loop, name="dgym-mcp-episode", daemon=True)
    if http is not None:
        http.start()  # OSError (one line) when the port is taken, before the episode starts
        print(f"{PROG}: serving {session.task_name} at {http.url}", file=sys.stderr)
    runner.start()
    try:
        if http is None:
            serve_stdio(episode.server)
        else:
            http.wait()
    except KeyboardInterrupt:
        pass
    finally:
        if http is not None:
            http.stop()
        policy.close("the server stopped")
        runner.join(30)
        if session.initial is not None and not session.done:
            session.finish("quit")
    return 0


def approve_app(episode: McpEpisode, theme: str = "dgym-dark") -> Any:
    """The app in which a person decides each call (the session is in ``approve`` mode).

    Raises:
        UsageError: unknown theme.
    """
    from dgym_tui.cli.tui import check_theme
    from dgym_tui.tui.app import DgymApp

    check_theme(theme)
    session = episode.session
    return DgymApp(session=session, theme_name=theme,
                   can_apply=session.task_record.get("benchmark") == "local")


def _approve(args: argparse.Namespace, episode: McpEpisode) -> int:
    """A person decides each call in the app; the server runs in a thread beside it."""
    app = approve_app(episode, args.theme)
    episode.http.start()
    print(f"{PROG}: serving {episode.session.task_name} at {episode.http.url}", file=sys.stderr)
    try:
        app.run()
    finally:
        episode.policy.close("the person closed the app")
        app.close_session("quit")
        episode.http.stop()
    if app.start_error is not None:
        print(app.start_error, file=sys.stderr)
        return 2
    return int(app.return_code or 0)
