"""``textual-serve``'s web server, made to end its apps when it stops (``dgym-tui --serve``).

Imports ``textual-serve`` (the optional extra ``serve``): :mod:`dgym_tui.tui.serve` imports
this module only when it serves.
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from aiohttp import web
from aiohttp.web_runner import GracefulExit
from textual_serve.server import Server


class TabServer(Server):
    """``textual-serve``'s :class:`~textual_serve.server.Server` that ends its apps' tabs
    when it stops.

    On SIGTERM / SIGINT it ends every open tab's websocket handler (which sends the
    tab's app ``quit`` and waits for it to end), gives the handlers ``grace`` seconds,
    and stops. (``textual-serve`` alone waited up to aiohttp's 60 s for open tabs, and
    left their apps running.) The caller kills any app still running afterwards
    (:func:`dgym_tui.tui.serve.end_children`).

    Args:
        *args, **kwargs: :class:`~textual_serve.server.Server`'s.
        grace: seconds the open tabs' apps get to quit once the server stops.
    """

    def __init__(self, *args: Any, grace: float = 4.0, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.grace = grace
        self._tabs: set[asyncio.Task] = set()

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """``textual-serve``'s handler of one tab, remembered while it runs."""
        task = asyncio.current_task()
        if task is not None:
            self._tabs.add(task)
        try:
            return await super().handle_websocket(request)
        finally:
            self._tabs.discard(task)

    def request_exit(self) -> None:
        """SIGTERM / SIGINT: end every tab's handler (each quits its app), then stop."""
        for task in list(self._tabs):
            task.cancel()
        raise GracefulExit()

    def serve(self, debug: bool = False) -> None:
        """Serve until SIGTERM / SIGINT (``textual-serve``'s own, with a ``grace`` seconds
        shutdown instead of aiohttp's 60)."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, self.request_exit)
        web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False,
                    loop=loop, print=lambda *args: None, shutdown_timeout=self.grace)
