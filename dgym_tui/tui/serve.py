"""``dgym-tui --serve``: the same app in a web browser, through ``textual-serve``.

``textual-serve`` (Textual's own web server) starts the app as a subprocess
for each browser tab that connects (the command :func:`served_command`
builds: the same ``dgym-tui`` arguments without the serving options) and
relays its screen and keys over a websocket. Every tab gets its own app.
The package is the optional extra ``serve`` (``pip install 'dgym-tui[serve]'``).

Nothing outlives the server or its tab: a closed tab quits its app (``textual-serve``
sends it ``quit``); SIGTERM or SIGINT to the server quits every app, waits
:data:`GRACE` seconds, then kills what is left (:mod:`dgym_tui.tui.tab_server`); an app whose
server died (killed, crashed) quits itself (:func:`exit_with_server`).
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import sys
import threading
import time

#: Seconds an app gets to close its episode (trajectory footer, sandbox) once asked to quit,
#: before it is killed.
GRACE = 4.0

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
    # exec: the shell becomes the app, so the app is the server's own child (its signals
    # and its end reach the app, not a shell waiting for it)
    return "exec " + shlex.join([sys.executable, "-m", "dgym_tui.cli.tui", *kept])


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
        from dgym_tui.tui.tab_server import TabServer
    except ImportError:
        print("dgym-tui: error: --serve needs textual-serve: pip install 'dgym-tui[serve]'",
              file=sys.stderr)
        return 2
    server = TabServer(served_command(argv), host=host, port=port, title="dgym-tui",
                       public_url=page_url(host, port), grace=GRACE)
    try:
        server.serve()
    finally:
        end_children(GRACE)
    return 0


def end_children(grace: float) -> None:
    """End this process's child processes (the served apps) and what they started:
    SIGTERM to each app, up to ``grace`` seconds for them to close their episodes, then
    SIGKILL to every process of that tree still running."""
    import psutil

    me = psutil.Process()
    apps = me.children()
    everything = me.children(recursive=True)
    for proc in apps:
        try:
            proc.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(apps, timeout=grace)
    for proc in [*alive, *everything]:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(everything, timeout=grace)


def exit_with_server(poll: float = 0.5, grace: float = GRACE) -> threading.Thread | None:
    """In a served app (:func:`is_served`), watch for the server's end: when this
    process's parent changes (the server was killed and the app was handed to another
    parent), send this process SIGTERM (Textual's web driver quits the running app,
    which closes its episode) and, if the process still runs ``grace`` seconds later,
    end it with exit code 1.

    Args:
        poll: seconds between two looks at the parent.
        grace: seconds the app gets to quit.

    Returns:
        The watching thread (a daemon), or None outside a served app.
    """
    if not is_served():
        return None
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace)
        os._exit(1)

    thread = threading.Thread(target=watch, name="dgym-serve-parent", daemon=True)
    thread.start()
    return thread
