"""``dgym-tui --serve``: the same app in a web browser, through ``textual-serve``.

``textual-serve`` (Textual's own web server) starts the app as a subprocess
for each browser tab that connects (the command :func:`served_command`
builds: the same ``dgym-tui`` arguments without the serving options) and
relays its screen and keys over a websocket. Every tab gets its own app.
The package is the optional extra ``serve`` (``pip install 'dgym-tui[serve]'``).
"""

from __future__ import annotations

import os
import shlex
import socket
import sys

#: The ``dgym-tui`` options that configure the server, not the served app (option -> takes a value).
SERVER_OPTIONS = {"--serve": False, "--host": True, "--port": True}


def served_command(argv: list[str]) -> str:
    """The shell command each browser tab runs: this Python, ``-m dgym_tui.cli.tui`` and ``argv``
    without ``--serve``, ``--host H`` and ``--port P`` (also in ``--opt=value`` form)."""
    kept: list[str] = []
    args = iter(argv)
    for arg in args:
        name = arg.split("=", 1)[0]
        if name not in SERVER_OPTIONS:
            kept.append(arg)
        elif SERVER_OPTIONS[name] and "=" not in arg:
            next(args, None)  # the option's value
    return shlex.join([sys.executable, "-m", "dgym_tui.cli.tui", *kept])


def page_url(host: str, port: int) -> str:
    """The URL the served page and its websocket use: ``http://host:port``, with this
    machine's name (``socket.getfqdn()``) for a wildcard ``host`` (``0.0.0.0``, ``::``)."""
    return f"http://{socket.getfqdn() if host in ('0.0.0.0', '::', '') else host}:{port}"


def is_served() -> bool:
    """True inside an app process that ``textual-serve`` started (Textual's web driver)."""
    return "web_driver" in os.environ.get("TEXTUAL_DRIVER", "")


def serve(argv: list[str], host: str, port: int) -> int:
    """Serve ``dgym-tui argv`` on ``http://host:port`` until interrupted (Ctrl+C or SIGTERM).

    Args:
        argv: the ``dgym-tui`` arguments (server options are dropped, see :func:`served_command`).
        host: the address to listen on (``127.0.0.1``: this machine only; ``0.0.0.0`` or
            ``::``: every interface). The page's script connects back to ``host``; for a
            wildcard address it uses this machine's name (``socket.getfqdn()``) instead.
        port: the TCP port.

    Returns:
        0 after the server stopped; 2 when ``textual-serve`` is not installed.
    """
    try:
        from textual_serve.server import Server
    except ImportError:
        print("dgym-tui: error: --serve needs textual-serve: pip install 'dgym-tui[serve]'",
              file=sys.stderr)
        return 2
    Server(served_command(argv), host=host, port=port, title="dgym-tui",
           public_url=page_url(host, port)).serve()
    return 0
