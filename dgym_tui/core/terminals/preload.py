"""Preloaded starts: a spare Python that imported pytest ahead of time, ready for the next run.

What a user waits for in an eval or a pdb start is mostly Python, pytest and
its plugins starting. A terminal can start a *spare* of a command ahead of
time (:meth:`Preloading.prewarm`): the same shell lines, environment,
sandbox, limits and user, but its last line, ``python -m pytest ARGS`` or
``python -m pdb ARGS``, replaced by ``python dgym_preload.py CHANNEL ROOT
-- -m pytest ARGS``. That script (:mod:`.preload_spare`, copied into the
terminal's read-only plugin folder) imports pytest, the plugins pytest would
import and pdb, never a module of the working copy, and waits. When the same
command is asked for with the same environment and mounts, the terminal hands
it over and the spare becomes that run through the interpreter's own ``-m``
machinery; otherwise the command starts cold, as before.

Why a spare per run and not a fork server: each run still gets a process and,
on ``bwrap``, a sandbox of its own (a fresh ``/tmp``, PID namespace and string
hash seed, nothing left by an earlier run), so a run is a cold run whose
imports happened earlier; nothing of the code under test can reach the next
run through a long-lived server.

The host trusts nothing the spare sends: the control socket (CHANNEL) is a
``socketpair`` whose other end only that sandbox holds (``local``, ``bwrap``:
CHANNEL is its descriptor number), or, where no descriptor can cross into the
sandbox (``docker exec``), a Unix socket the host listens on in a folder of its
own mounted read-only in the sandbox (CHANNEL is its path there): the host
accepts one connection, from a process of the spare's own start only (its
process id, as the kernel gives it, checked by the terminal), then removes
the socket. The host reads single bytes from it (``R`` ready, ``U`` unfit,
``P`` proceeding; ``F``, ``S`` or ``W`` stale, each for a reason of ``_WHY``)
and any other byte, an end of file, or no answer in time means "start cold". No
descriptor or path comes back from the sandbox.

Turned off by ``DGYM_PRELOAD=0`` in the environment (read when a terminal is
made) or ``terminal.preload = False``.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import re
import selectors
import shlex
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The spare script's file name in the terminal's plugin folder.
SCRIPT = "dgym_preload.py"
#: Environment variable that turns preloading off ("0", "off", "no", "false").
SWITCH = "DGYM_PRELOAD"
log = logging.getLogger(__name__)

#: Longest wait for a spare to finish its imports when it is asked for, in seconds;
#: past it the command starts cold.
READY_WAIT = 30.0

#: A Python interpreter named on the command line (a name on PATH or a path).
_PYTHON = re.compile(r"(?:[A-Za-z0-9_./+-]*/)?python(?:3(?:\.\d+)?)?")
#: Characters of the shell the spare's line could not keep the meaning of: the last
#: line is served only when it holds none (quotes are fine: sh and shlex agree then).
_SHELL = frozenset("$`\\;&|<>(){}*?[]~#!\t\r")
#: ``NAME=value`` before the command (sh puts it in the command's environment).
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def enabled() -> bool:
    """Whether preloading is on for terminals made now (:data:`SWITCH` not set to off)."""
    return os.environ.get(SWITCH, "1").strip().lower() not in ("0", "off", "no", "false")


def spare_command(command: str, script: str, channel: int | str, root: str) -> str | None:
    """The spare's shell command for ``command``, or None when it cannot be served.

    Served: the last line of ``command`` is ``PYTHON -m pytest ARGS`` or
    ``PYTHON -m pdb ARGS`` (``-m pytest ...``, a script, another module), maybe
    after ``NAME=value`` words, with no
    shell syntax but quotes in ARGS (no variables, globs, redirections, ``;``);
    the lines before it are kept as they are (dgym's own exports).

    Args:
        command: the cold command (what ``sh -c`` would run).
        script: the spare script's path as commands see it.
        channel: the control socket's descriptor number in the spare, or the path
            (as commands see it) of a Unix socket it connects to.
        root: the working copy's path as commands see it (no module of it is preloaded).

    Returns:
        ``command`` with its last line's interpreter followed by
        ``SCRIPT CHANNEL ROOT --`` (the rest of the line verbatim), or None.
    """
    head, newline, last = command.rpartition("\n")
    if not last.strip() or any(c in _SHELL for c in last):
        return None
    try:
        words = shlex.split(last)
    except ValueError:
        return None
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    if len(words) < i + 3 or not _PYTHON.fullmatch(words[i]) or words[i + 1] != "-m":
        return None
    if words[i + 2] not in ("pytest", "pdb") or len(words) < i + 4 and words[i + 2] == "pdb":
        return None
    raw = last.split(None, i + 1)
    if raw[:i + 1] != words[:i + 1]:  # quotes before the module: not served
        return None
    spare = (f"{' '.join(raw[:i + 1])} {shlex.quote(script)} {shlex.quote(str(channel))} "
             f"{shlex.quote(root)} --")
    return f"{head}{newline}{spare} {raw[i + 1]}"


#: what a spare's answers other than the expected one mean
_WHY = {b"U": "unfit: a module of the working copy or an unknown command",
        b"F": "stale: a file it imported or a folder on its sys.path changed",
        b"S": "stale: the current folder holds a module named like one it imported",
        b"W": "stale: the plugin set or the configuration changed"}


@dataclass
class Channel:
    """How a spare about to start reaches the host (made by a terminal's ``_spare_channel``).

    Attributes:
        host: the host's end of a ``socketpair``, or a listening Unix socket the
            spare connects to.
        arg: what the spare is told: the descriptor number of its end, or the
            listening socket's path as commands see it.
        pass_fds: descriptors the spare's process inherits (its end of the pair).
        path: the listening socket's host path ("" for a pair); removed once the
            spare connected, or when the spare is given up.
    """

    host: socket.socket
    arg: str
    pass_fds: tuple[int, ...] = ()
    path: str = ""

    def close(self) -> None:
        """Close the host's socket and remove a listening socket's file."""
        _shut(self.host, self.path)


def _shut(sock: socket.socket, path: str) -> None:
    """Close ``sock``; remove the file ``path`` of a listening socket ("" for none)."""
    with contextlib.suppress(OSError):
        sock.close()
    if path:
        with contextlib.suppress(OSError):
            os.unlink(path)


@dataclass
class Spare:
    """One spare process and the host's end of its control socket.

    Attributes:
        command: the cold command it stands in for.
        key: what must be equal when it is used (environment, the terminal's mounts).
        process: what the terminal started (``subprocess.Popen``, a pexpect spawn, a
            docker exec).
        control: the host's end of the control socket, or (``path`` set) the socket
            the spare connects to, until it did.
        path: the listening socket's host path while it listens, else "".
        peer_ok: called with the process id (as this host sees it) of what connected
            to a listening ``control``; the connection is used only when it says True.
    """

    command: str
    key: Any
    process: Any
    control: socket.socket
    path: str = ""
    peer_ok: Callable[[int], bool] | None = None
    #: why :meth:`hand_over` said no ("" after a yes)
    why: str = ""

    def _accept(self) -> bool:
        """Take the spare's connection from the listening ``control`` (it is readable),
        stop listening and remove the socket's file. False (``why`` says) when what
        connected is not the spare's or the connection failed."""
        listener, path = self.control, self.path
        self.path = ""
        try:
            conn, _ = listener.accept()
        except OSError:
            self.why = "it did not connect"
            return False
        finally:
            _shut(listener, path)
        try:
            pid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                      struct.calcsize("3i")))[0]
            ok = self.peer_ok is None or self.peer_ok(pid)
        except Exception:  # noqa: BLE001  an unknown peer is not the spare
            ok = False
        conn.setblocking(True)
        self.control = conn
        if not ok:
            self.why = "another process connected in its place"
        return ok

    def hand_over(self, deadline: float, drain: tuple[int, Callable[[], bool]] | None = None
                  ) -> bool:
        """Wait until the spare is ready, tell it to go, and read its answer.

        Args:
            deadline: ``time.monotonic()`` value after which the answer counts as "no".
            drain: ``(fd, read)`` of the spare's output to keep reading meanwhile
                (``read()`` returns False at the end of file).

        Returns:
            True when the spare became the run; False when it is unfit, stale,
            gone, silent or said anything else (the caller starts cold).
        """
        expected = b"R"
        self.why = "no answer in time"
        with selectors.DefaultSelector() as sel:
            control = self.control.fileno()
            sel.register(control, selectors.EVENT_READ)
            if drain is not None:
                sel.register(drain[0], selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                for key, _ in sel.select(min(left, 1.0)):
                    if drain is not None and key.fd == drain[0]:
                        if not drain[1]():
                            self.why = "its output ended"
                            return False
                        continue
                    if self.path:  # the spare connected
                        sel.unregister(control)
                        if not self._accept():
                            return False
                        control = self.control.fileno()
                        sel.register(control, selectors.EVENT_READ)
                        continue
                    try:
                        data = os.read(control, 16)
                    except OSError:
                        data = b""
                    if not data:
                        self.why = "it ended"
                        return False
                    for byte in data:
                        if bytes([byte]) != expected:
                            self.why = _WHY.get(bytes([byte]), "it said something else")
                            return False
                        if expected == b"P":
                            self.why = ""
                            return True
                        try:
                            self.control.sendall(b"G")
                        except OSError:
                            self.why = "it ended"
                            return False
                        expected = b"P"

    def ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the spare to say it is ready; does not consume
        the answer (a listening ``control`` takes the spare's connection). True when its
        next byte is ``R``."""
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        try:
            if self.path:
                sel.register(self.control.fileno(), selectors.EVENT_READ)
                if not sel.select(timeout):
                    return False
                sel.unregister(self.control.fileno())
                if not self._accept():
                    return False
            sel.register(self.control.fileno(), selectors.EVENT_READ)
            if not sel.select(max(0.0, deadline - time.monotonic())):
                return False
            return self.control.recv(1, socket.MSG_PEEK) == b"R"
        except OSError:
            return False
        finally:
            sel.close()

    def close(self) -> None:
        """Close the host's end of the control socket (the spare then exits if unused)."""
        _shut(self.control, self.path)
        self.path = ""


class Preloading:
    """The spares of one terminal: started by :meth:`prewarm`, each used by one ``run``
    (``_take_batch_spare``) or ``spawn`` (``_take_interactive_spare``), ended otherwise.

    A mixin for terminals; they set ``self._lock`` (a ``threading.RLock``),
    ``self.preload``, ``self._spares = {}``, ``workdir`` and ``plugin_dir``, and
    provide the hooks below (how a process starts, lives and ends differs).
    """

    preload: bool
    _spares: dict[bool, Spare]
    workdir: str
    plugin_dir: str
    _lock: Any

    # -- hooks ---------------------------------------------------------------
    def _spares_open(self) -> bool:
        """Whether the terminal is started and not closed (a spare may be kept)."""
        raise NotImplementedError

    def _spare_key(self, command: str, env: dict[str, str] | None) -> tuple:
        """What must be equal for a spare of ``command`` to be used (its environment,
        the sandbox's mounts)."""
        raise NotImplementedError

    def _spare_channel(self) -> contextlib.AbstractContextManager[Channel]:
        """A control channel for one spare; what the context opened for the start
        alone (the spare's end of a pair) is closed when it ends."""
        raise NotImplementedError

    def _start_spare(self, line: str, env: dict[str, str] | None, interactive: bool,
                     pass_fds: tuple[int, ...]) -> Any:
        """Start the spare's command ``line`` as ``run`` (``spawn`` when ``interactive``)
        starts a command, the descriptors ``pass_fds`` inherited; its process."""
        raise NotImplementedError

    def _spare_peer(self, process: Any, pid: int) -> bool:
        """Whether the process ``pid`` (as this host sees it) belongs to the spare's
        ``process`` (for listening channels)."""
        return False

    def _spare_alive(self, process: Any) -> bool:
        """Whether the spare's process still runs (True when it cannot be told cheaply)."""
        raise NotImplementedError

    def _spare_drain(self, process: Any, out: Any) -> tuple[int, Callable[[], bool]]:
        """``(fd, read)``: the descriptor of the batch spare's output and a function that
        reads what is there into ``out`` (a ``BoundedOutput``) and returns False at its end."""
        raise NotImplementedError

    def _end_spare(self, process: Any) -> None:
        """Kill an unused spare's process and forget it."""
        raise NotImplementedError

    # -- the shared logic --------------------------------------------------
    def prewarm(self, command: str, env: dict[str, str] | None = None,
                interactive: bool = False) -> bool:
        """Start a spare of ``command`` now, for a later ``run`` (or ``spawn`` when
        ``interactive``) of the same command with the same environment.

        The spare replaces a previous one of the same kind. Never raises: a
        command that cannot be served (see :func:`spare_command`), a terminal
        not started, without a plugin folder or with preloading off get no spare.

        Returns:
            True when a spare was started.
        """
        if not self.preload or not self.plugin_dir or not self.workdir \
                or not self._spares_open():
            return False
        self._drop(self._spares.pop(interactive, None))
        channel = None
        try:
            script = self.write_plugin_file(  # type: ignore[attr-defined]
                SCRIPT, Path(__file__).with_name("preload_spare.py").read_bytes())
            with self._spare_channel() as channel:
                line = spare_command(command, script, channel.arg, self.workdir)
                if line is None:
                    channel.close()
                    return False
                key = self._spare_key(command, env)
                process = self._start_spare(line, env, interactive, channel.pass_fds)
        except Exception:  # noqa: BLE001  no spare: the command will start cold
            log.warning("could not start a preloaded spare", exc_info=True)
            if channel is not None:
                channel.close()
            return False
        spare = Spare(command, key, process, channel.host, channel.path,
                      functools.partial(self._spare_peer, process) if channel.path else None)
        with self._lock:
            if self._spares_open():
                self._drop(self._spares.pop(interactive, None))
                self._spares[interactive] = spare
                return True
        self._drop(spare)  # closed meanwhile
        return False

    def wait_spares(self, timeout: float) -> bool:
        """Wait until every spare has finished its imports (for benches: time a start
        without the next spare's imports running beside it).

        Returns:
            True when all are ready within ``timeout`` seconds (none counts as ready).
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            spares = list(self._spares.values())
        return all(spare.ready(max(0.0, deadline - time.monotonic())) for spare in spares)

    def _take_spare(self, command: str, env: dict[str, str] | None,
                    interactive: bool) -> Spare | None:
        """The spare of ``command`` if one was started under the same key (else None).

        A spare of another command (the bash tool's shell, a ``run`` of something
        else) stays for its own command; one of this command that does not match
        (environment, mounts) or has ended is ended."""
        with self._lock:
            spare = self._spares.get(interactive)
            if spare is None or spare.command != command:
                return None
            del self._spares[interactive]
        why = ("another environment or other mounts"
               if spare.key != self._spare_key(command, env)
               else "" if self._spare_alive(spare.process) else "its process ended")
        if why:  # (bwrap's own process ended: what it started may still answer; not used)
            log.info("preloaded spare not used: %s", why)
            self._drop(spare)
            return None
        return spare

    def _take_batch_spare(self, command: str, env: dict[str, str] | None, out: Any,
                          timeout: float) -> Any:
        """Hand ``command`` to its spare for ``run``; the spare's process (its output so
        far read into ``out``), or None (start cold)."""
        spare = self._take_spare(command, env, interactive=False)
        if spare is None:
            return None
        drain = self._spare_drain(spare.process, out)
        if spare.hand_over(time.monotonic() + min(timeout, READY_WAIT), drain):
            spare.close()
            return spare.process
        log.info("preloaded spare not used: %s", spare.why)
        self._drop(spare)
        return None

    def _take_interactive_spare(self, command: str, env: dict[str, str] | None) -> Any:
        """Hand ``command`` to its spare for ``spawn``; the spare's process with
        ``dgym_start = "preloaded"``, or None (start cold)."""
        spare = self._take_spare(command, env, interactive=True)
        if spare is None:
            return None
        if spare.hand_over(time.monotonic() + READY_WAIT):
            spare.close()
            spare.process.dgym_start = "preloaded"
            return spare.process
        log.info("preloaded spare not used: %s", spare.why)
        self._drop(spare)
        return None

    def _drop(self, spare: Spare | None) -> None:
        """End an unused spare and forget it."""
        if spare is None:
            return
        spare.close()
        self._end_spare(spare.process)

    def _forget_spares(self) -> list[Spare]:
        """Take every spare away (at close), their control sockets closed; the caller
        ends their processes."""
        with self._lock:
            spares, self._spares = list(self._spares.values()), {}
        for spare in spares:
            spare.close()
        return spares
