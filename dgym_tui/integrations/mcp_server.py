"""One episode served over MCP: every tool of the episode is an MCP tool of this server.

:func:`build_server` makes an MCP server (the official SDK's low-level
``Server``) whose tool list is the episode's tools, each with its JSON schema
and description. A ``tools/call`` becomes a call of an
:class:`~dgym_tui.policies.external.ExternalPolicy`: the session's turn loop
proposes it, runs it (at once, or after a person approved it in the app) and
records it as a step; the tool result the client reads is the step's
observation, the person's note after a rejection, or the result and the patch
after ``submit``. :func:`serve_stdio` and :class:`HttpServer` run it over the
two standard transports (stdio; streamable HTTP, loopback by default).
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import threading
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server

from dgym_tui import __version__
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.events import EpisodeStarted, SessionEvent
from dgym_tui.policies.external import CallOutcome, ExternalPolicy

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from dgym_tui.episode.session import Session

log = logging.getLogger(__name__)

#: Hosts whose HTTP server only this machine reaches (the SDK then also checks Host and Origin).
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def instructions_for(session: Session, policy: ExternalPolicy) -> str:
    """What an MCP client is told at initialize: the task and, once the episode started,
    its first observation (the initial eval)."""
    info = policy.info
    task = info.task if info is not None else (session.env.task or "")
    text = [f"You are debugging the repository of a dgym episode ({session.task_name}) in a "
            "sandbox, with pdb and the other tools of this server. Every call is one recorded "
            "step. Call submit when the tests pass: it returns the final result and the patch; "
            "the original repository is changed only by the person.",
            f"Task:\n{task}"]
    if info is not None and info.initial_observation:
        text.append(f"First observation:\n{info.initial_observation}")
    else:
        text.append("The episode is starting (its tests run once): call eval to see their "
                    "state.")
    return "\n\n".join(text)


def client_name(ctx: ServerRequestContext[Any]) -> str:
    """The MCP client's name (and version) from ``initialize``; ``"mcp client"`` when it gave none."""
    params = getattr(ctx.session, "client_params", None)
    info = getattr(params, "client_info", None)
    if info is None or not info.name:
        return "mcp client"
    return f"{info.name} {info.version}".strip() if info.version else info.name


def _result(outcome: CallOutcome) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.text)],
                                structured_content=outcome.data or None,
                                is_error=outcome.error)


def build_server(session: Session, policy: ExternalPolicy) -> Server:
    """Build the MCP server of one episode.

    Args:
        session: the episode's session (started or not; its policy is ``policy``).
        policy: the :class:`ExternalPolicy` the calls go to, attached to ``session``.

    Returns:
        An ``mcp.server.lowlevel.Server`` named ``dgym``; its instructions follow the
        episode (the initial observation is added once the session started).
    """
    tools = [types.Tool(name=schema["function"]["name"],
                        description=schema["function"].get("description") or "",
                        input_schema=schema["function"].get("parameters")
                        or {"type": "object", "properties": {}})
             for schema in session.env.tool_schemas()]
    names = {tool.name for tool in tools}

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in names:
            return _result(CallOutcome(f"unknown tool {params.name!r}; this episode's tools: "
                                       f"{', '.join(sorted(names))}", error=True))
        action = ToolCall(name=params.name, arguments=dict(params.arguments or {}))
        future = policy.call(action, client_name(ctx))
        return _result(await asyncio.wrap_future(future))

    server = Server("dgym", version=__version__, instructions=instructions_for(session, policy),
                    on_list_tools=list_tools, on_call_tool=call_tool)

    def follow(event: SessionEvent) -> None:
        if isinstance(event, EpisodeStarted):
            server.instructions = instructions_for(session, policy)

    session.subscribe(follow)
    return server


def serve_stdio(server: Server) -> None:
    """Serve ``server`` over this process's stdin / stdout until the client closes them.

    While serving, the SDK points file descriptor 1 at stderr, so stray output of
    this process cannot corrupt the protocol.
    """
    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def require_bearer(app: Any, token: str) -> Any:
    """Wrap an ASGI ``app``: an HTTP request without ``Authorization: Bearer TOKEN`` gets 401.

    Args:
        app: the ASGI application (the lifespan and other scopes pass through).
        token: the secret the client sends.

    Returns:
        The wrapping ASGI application.
    """
    expected = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body",
                            "body": b"this dgym mcp server needs Authorization: Bearer <token>"})
                return
        await app(scope, receive, send)

    return guarded


class HttpServer:
    """``server`` over streamable HTTP at ``http://HOST:PORT/mcp`` (uvicorn).

    Args:
        server: the MCP server.
        host: address to listen on; a loopback address (the default) also makes the
            SDK refuse requests whose Host or Origin header is not local (DNS rebinding).
        port: TCP port (0: a free one, see :attr:`port` after :meth:`start`).
        token: when given, every request must carry ``Authorization: Bearer TOKEN``
            (other local users reach a loopback port too).

    Attributes:
        url: ``http://HOST:PORT/mcp`` once listening.
    """

    def __init__(self, server: Server, host: str = "127.0.0.1", port: int = 8765,
                 token: str | None = None) -> None:
        import uvicorn

        self.host = host
        self.port = port
        app: Any = server.streamable_http_app(host=host)
        if token:
            app = require_bearer(app, token)
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=port,
                                                     log_level="warning", lifespan="on"))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/mcp"

    def _serve(self) -> None:
        try:
            self._server.run()
        except SystemExit:  # uvicorn's answer to a port it cannot bind: start() reports it
            log.debug("the MCP HTTP server stopped at its start")

    def wait(self) -> None:
        """Block until the server stops (:meth:`stop`, or it failed); Ctrl-C reaches the
        caller meanwhile (the server thread installs no signal handler)."""
        while self._thread is not None and self._thread.is_alive():
            self._thread.join(0.5)

    def start(self, timeout: float = 30.0) -> None:
        """Serve in a background thread; return once it listens.

        Raises:
            OSError: it did not start listening within ``timeout`` seconds (port taken).
        """
        self._thread = threading.Thread(target=self._serve, name="dgym-mcp-http", daemon=True)
        self._thread.start()
        waited = 0.0
        while not self._server.started:
            if not self._thread.is_alive() or waited > timeout:
                raise OSError(f"the MCP server could not listen on {self.host}:{self.port}")
            self._thread.join(0.05)
            waited += 0.05
        sockets = [s for server in self._server.servers for s in server.sockets]
        if sockets:
            self.port = sockets[0].getsockname()[1]

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the thread (at most ``timeout`` seconds)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
