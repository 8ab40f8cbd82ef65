"""Tools of external MCP servers in an episode's toolbox (the ``mcp_servers:`` settings).

Each server entry names a stdio command or an HTTP URL; the environment connects
to it (the official SDK's ``Client``) when its first episode starts, lists its
tools and offers the allowed ones as tools of its own, named ``PREFIX + tool``,
with the server's JSON schema and description. A call is a step like any
other: the result's text is the observation (bounded by ``max_output``). The
servers run on the host side, outside the sandbox, with the rights of whoever
started dgym: their output is untrusted data like any observation, and only
servers the person configured are ever started.

A server entry (:func:`parse_servers` checks it)::

    name: docs                          # letters, digits, _ and -
    command: [python, docs_server.py]   # stdio: the command (a list, or a string split
    env: {KEY: value}                   #   like a shell would); its extra environment
                                        #   (${NAME} in a value: dgym's NAME, read at start)
    url: http://127.0.0.1:9000/mcp      # or streamable HTTP
    transport: stdio | http             # default: stdio with command, http with url
    prefix: docs_                       # default: NAME_
    tools: [search, fetch]              # allow-list of the server's tools; default: all
    timeout: 30                         # seconds to connect, list and per call (default 30)
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shlex
import tempfile
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from dgym_tui.core.terminals.output import BoundedOutput
from dgym_tui.core.tools.base import Tool, ToolError, ToolOutput

if TYPE_CHECKING:
    pass

log = logging.getLogger(__name__)

#: Seconds to connect to a server, list its tools, and answer one call, unless the entry says.
DEFAULT_TIMEOUT = 30.0
_KEYS = {"name", "command", "env", "url", "transport", "prefix", "tools", "timeout"}
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")  # not allowed in an LLM provider's function name


class McpServerError(RuntimeError):
    """An MCP server cannot be reached, or its tools cannot join the toolbox (one line)."""


@dataclass(frozen=True)
class McpServerSpec:
    """One checked ``mcp_servers`` entry (see the module docstring for the keys)."""

    name: str
    transport: str
    command: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    prefix: str = ""
    tools: tuple[str, ...] | None = None
    timeout: float = DEFAULT_TIMEOUT

    def to_dict(self) -> dict[str, Any]:
        """The entry as settings (JSON-ready, what :func:`parse_servers` reads back)."""
        data: dict[str, Any] = {"name": self.name, "transport": self.transport,
                                "prefix": self.prefix, "timeout": self.timeout}
        if self.command:
            data["command"] = list(self.command)
        if self.env:
            data["env"] = dict(self.env)
        if self.url:
            data["url"] = self.url
        if self.tools is not None:
            data["tools"] = list(self.tools)
        return data


def parse_servers(entries: Any, source: str = "mcp_servers") -> list[McpServerSpec]:
    """Check ``mcp_servers`` settings.

    Args:
        entries: a list of mappings (or None / empty: no servers).
        source: what to name in error messages.

    Returns:
        The entries, checked, in order.

    Raises:
        ValueError: one line naming the entry and the key that is wrong.
    """
    if not entries:
        return []
    if not isinstance(entries, (list, tuple)):
        raise ValueError(f"{source} must be a list of servers, each a mapping with a name")
    specs: list[McpServerSpec] = []
    for index, entry in enumerate(entries):
        specs.append(_parse_one(entry, f"{source}[{index}]"))
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"{source}: server name(s) {', '.join(twice)} used twice")
    return specs


def _parse_one(entry: Any, where: str) -> McpServerSpec:
    if isinstance(entry, McpServerSpec):
        return entry
    if not isinstance(entry, dict):
        raise ValueError(f"{where} must be a mapping (name, command or url, ...)")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; known keys: "
                         f"{', '.join(sorted(_KEYS))}")
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"{where}: name must be 1-40 letters, digits, _ or -, got {name!r}")
    command, url = entry.get("command"), entry.get("url")
    transport = entry.get("transport") or ("http" if url and not command else "stdio")
    if transport not in ("stdio", "http"):
        raise ValueError(f"{where}: transport must be stdio or http, got {transport!r}")
    if transport == "stdio":
        if isinstance(command, str):
            command = shlex.split(command)
        if (not isinstance(command, list) or not command
                or not all(isinstance(part, str) and part for part in command)):
            raise ValueError(f"{where}: a stdio server needs command: [program, arg, ...]")
    elif not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ValueError(f"{where}: an http server needs url: http(s)://HOST:PORT/PATH")
    env = entry.get("env") or {}
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        raise ValueError(f"{where}: env must map variable names to values")
    prefix = entry.get("prefix", f"{name}_")
    if not isinstance(prefix, str) or _UNSAFE.search(prefix):
        raise ValueError(f"{where}: prefix may hold letters, digits, _ and - only, got {prefix!r}")
    tools = entry.get("tools")
    if tools is not None and (not isinstance(tools, list)
                              or not all(isinstance(t, str) for t in tools)):
        raise ValueError(f"{where}: tools must be a list of the server's tool names")
    timeout = entry.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
        raise ValueError(f"{where}: timeout must be a number of seconds > 0, got {timeout!r}")
    return McpServerSpec(name=name, transport=transport,
                         command=tuple(command or ()) if transport == "stdio" else (),
                         env={k: str(v) for k, v in env.items()},
                         url=str(url) if transport == "http" else "", prefix=prefix,
                         tools=tuple(tools) if tools is not None else None,
                         timeout=float(timeout))


class McpConnection:
    """A connection to one MCP server, usable from any thread (the SDK is asynchronous:
    the connection lives in an event loop of its own thread).

    Args:
        spec: the server entry.

    Attributes:
        tools: the server's tools after :meth:`open` (``mcp_types.Tool`` objects).
    """

    def __init__(self, spec: McpServerSpec) -> None:
        self.spec = spec
        self.tools: list[Any] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name=f"dgym-mcp-{spec.name}")
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._done: Any = None
        #: the stdio server's stderr (its last lines explain a failed start)
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")

    def open(self) -> None:
        """Connect, and list the server's tools.

        Raises:
            McpServerError: the server did not start, answer or list its tools in time.
        """
        self._thread.start()
        self._done = asyncio.run_coroutine_threadsafe(self._hold(), self._loop)
        ready: Any = asyncio.run_coroutine_threadsafe(self._ready(), self._loop)
        try:
            self.tools = ready.result(self.spec.timeout)
        except FutureTimeout:
            self.close()
            raise McpServerError(f"MCP server {self.spec.name!r} did not answer within "
                                 f"{self.spec.timeout:g} s") from None
        except Exception as exc:  # noqa: BLE001  one line, whatever the transport raised
            said = self.stderr_tail()
            self.close()
            raise McpServerError(f"MCP server {self.spec.name!r} cannot be reached: "
                                 f"{_first_line(exc)}" + (f" (its stderr: {said})" if said else "")
                                 ) from None

    def stderr_tail(self, limit: int = 300) -> str:
        """The last ``limit`` characters of a stdio server's stderr, on one line ("" if none)."""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()
        except (OSError, ValueError):
            return ""
        return " ".join(text.split())[-limit:]

    async def _ready(self) -> list[Any]:
        while self._client is None:
            if self._done.done():
                self._done.result()  # raises what the connection raised
                raise McpServerError("the connection closed")
            await asyncio.sleep(0.01)
        listed = await self._client.list_tools()
        return list(listed.tools)

    async def _hold(self) -> None:
        """Enter the SDK client's context and hold it until :meth:`close`."""
        from mcp import Client, StdioServerParameters

        spec = self.spec
        if spec.transport == "stdio":
            from mcp.client.stdio import get_default_environment, stdio_client

            # ${NAME} in a value is read from dgym's environment now: the settings (and
            # the trajectory header that keeps them) hold the reference, not the secret
            env = {key: os.path.expandvars(value) for key, value in spec.env.items()}
            params = StdioServerParameters(command=spec.command[0], args=list(spec.command[1:]),
                                           env={**get_default_environment(), **env})
            # its stderr goes to a file of its own, not to a screen the app may be drawing
            target: Any = stdio_client(params, errlog=self._errlog)
        else:
            target = spec.url
        self._stop = asyncio.Event()
        async with Client(target, read_timeout_seconds=spec.timeout) as client:
            self._client = client
            await self._stop.wait()

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call the server's tool ``name``; returns its ``CallToolResult``.

        Raises:
            McpServerError: not connected, no answer within the timeout, or a failed call.
        """
        if self._client is None:
            raise McpServerError(f"MCP server {self.spec.name!r} is not connected")
        future = asyncio.run_coroutine_threadsafe(self._client.call_tool(name, arguments),
                                                  self._loop)
        try:
            return future.result(self.spec.timeout + 1)
        except FutureTimeout:
            future.cancel()
            raise McpServerError(f"MCP server {self.spec.name!r} did not answer within "
                                 f"{self.spec.timeout:g} s") from None
        except Exception as exc:  # noqa: BLE001  the step reports it
            raise McpServerError(f"MCP server {self.spec.name!r} failed: "
                                 f"{_first_line(exc)}") from None

    def close(self, timeout: float = 10.0) -> None:
        """Leave the connection (a stdio server's process ends) and stop the thread. Idempotent."""
        if not self._thread.is_alive():
            self._errlog.close()
            return
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._done is not None:
            try:
                self._done.result(timeout)
            except Exception:  # noqa: BLE001  closing goes on
                log.debug("closing MCP server %s", self.spec.name, exc_info=True)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout)
        self._client = None
        self._errlog.close()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def result_text(result: Any) -> str:
    """The text of a ``CallToolResult``: its text parts, and a one-line note for each
    other part (image, audio, resource)."""
    parts = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'uri', '')}]")
        elif kind == "resource":
            resource = getattr(block, "resource", None)
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str)
                         else f"[binary resource: {getattr(resource, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content: {getattr(block, 'mime_type', '')}]")
    if not parts and result.structured_content is not None:
        import json

        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


class McpTool(Tool):
    """A tool of an MCP server; :func:`remote_tools` makes one subclass per remote tool.

    Attributes:
        server: the server entry's name. remote_name: the tool's name on the server.
    """

    remote_name: ClassVar[str] = ""
    connection: ClassVar[McpConnection | None] = None

    def run(self, **arguments: Any) -> ToolOutput:
        """Call the remote tool; its text is the observation (its head and tail when
        longer than ``max_output`` bytes).

        Raises:
            ToolError: the server failed, timed out, or answered with an error.
        """
        if self.connection is None:
            raise ToolError(f"MCP server {self.server!r} is not connected")
        try:
            result = self.connection.call(self.remote_name, arguments)
        except McpServerError as exc:
            raise ToolError(str(exc)) from None
        out = BoundedOutput(self.env.max_output)  # bytes, head and tail: as every tool
        out.feed(result_text(result).encode("utf-8", "replace"))
        text = out.text()
        if result.is_error:
            raise ToolError(f"{self.server} {self.remote_name} failed: {text}")
        return ToolOutput(text, data={"mcp_server": self.server})


def remote_tools(connection: McpConnection, taken: set[str]) -> list[type[McpTool]]:
    """One :class:`McpTool` subclass per allowed tool of an open connection.

    Args:
        connection: an open connection.
        taken: tool names the environment already has.

    Returns:
        The classes, in the server's order, named ``prefix + tool`` (characters an LLM
        provider refuses in a function name become ``_``; at most 64 characters).

    Raises:
        McpServerError: an allow-listed tool the server lacks, or a name already taken.
    """
    spec = connection.spec
    offered = {tool.name: tool for tool in connection.tools}
    if spec.tools is not None:
        missing = [t for t in spec.tools if t not in offered]
        if missing:
            raise McpServerError(f"MCP server {spec.name!r} has no tool {', '.join(missing)}; "
                                 f"it offers: {', '.join(offered) or 'none'}")
    classes: list[type[McpTool]] = []
    for remote, tool in offered.items():
        if spec.tools is not None and remote not in spec.tools:
            continue
        name = _UNSAFE.sub("_", spec.prefix + remote)[:64]
        if name in taken:
            raise McpServerError(f"MCP server {spec.name!r}: tool name {name!r} is taken; "
                                 "give the server another prefix")
        taken.add(name)
        schema = dict(tool.input_schema or {}) or {"type": "object", "properties": {}}
        description = (tool.description or tool.title or remote).strip()
        classes.append(type(f"McpTool_{name}", (McpTool,), {
            "name": name, "server": spec.name, "remote_name": remote, "connection": connection,
            "instructions": f"{description} (from the MCP server {spec.name})",
            "parameters": schema}))
    return classes
