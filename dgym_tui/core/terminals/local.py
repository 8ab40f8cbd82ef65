"""LocalTerminal: run the episode's commands as host subprocesses (trusted code only).

Commands run with the user's rights and see the whole machine: use the
``bwrap`` terminal (a sandbox of its own) or ``docker`` for code you do not trust.

When the working copy is an overlay of the original (the default where the
kernel allows it, :mod:`dgym_tui.core.fs.overlay`), each command joins the
overlay's namespaces before it starts (its mount namespace, where the merged
view is mounted at ``workdir``; as a user first its user namespace, which maps
only that user's uid and gid, so files of other owners show as ``nobody`` and
setuid programs such as ``sudo`` do not raise privileges) and keeps no
capability; everything else of the machine is as before.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import selectors
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import pexpect

from dgym_tui.core import fdtree, tempdirs

from . import cleanup, hostview, preload, procs
from .base import DEFAULT_MAX_OUTPUT, RunResult, Terminal, TerminalError, holding_lock
from .environ import local_environ
from .output import BoundedOutput

T = TypeVar("T")
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Launch:
    """How to start one command: program and arguments, environment, descriptors to pass.

    Attributes:
        argv: the program and its arguments.
        env: the complete environment of the program.
        pass_fds: descriptors the program inherits (valid until the ``launch_spec``
            context that made them ends).
        preexec: called in the child between fork and exec (None: nothing).
    """

    argv: list[str]
    env: dict[str, str]
    pass_fds: tuple[int, ...] = ()
    preexec: Callable[[], None] | None = None


class LocalTerminal(preload.Preloading, Terminal):
    """Runs commands on this machine, in the working copy, each in its own process group.

    Every process started here is killed at ``close()`` (and by the environment's
    exit handlers): the process groups it started, and every process carrying the
    episode's tag in its environment (:mod:`.procs`), so a daemon that called
    ``setsid`` or double-forked does not outlive the episode either. ``close()``
    may come from another thread (Ctrl-C in ``dgym run``): after it, ``run`` /
    ``spawn`` refuse to start anything until ``start()`` is called again.

    Args:
        overlay: the working copy's overlay (``dgym_tui.core.fs.overlay.Overlay``)
            when it is one: every command joins its namespaces and starts in
            the merged view (see the module docstring). None for a copy.

    Attributes:
        tag: value of ``DGYM_EPISODE`` in every command's environment.
        scratch: a private host folder (outside the working copy) made at
            ``start()`` and deleted at ``close()``.
    """

    def __init__(self, overlay=None) -> None:
        self.overlay = overlay
        self.workdir = ""
        self.tag = procs.new_tag()
        self._children: list = []
        # a child starts and is tracked atomically w.r.t. close(); reentrant: the SIGTERM
        # handler (cleanup) may close the terminal in the thread that is starting a child
        self._lock = threading.RLock()
        self._open = False
        #: start evals and pdb sessions from a spare that imported pytest ahead of time
        #: (:mod:`.preload`); off with ``DGYM_PRELOAD=0``
        self.preload = preload.enabled()
        self._spares: dict[bool, preload.Spare] = {}  # interactive? -> the spare

    @holding_lock
    def start(self, host_root: str) -> None:
        if not os.path.isdir(host_root):
            raise TerminalError(f"working copy {host_root!r} does not exist")
        self.workdir = os.path.realpath(host_root)
        with self._lock:
            self._open = True
        cleanup.register(self)
        if not self.scratch:
            self.scratch = tempdirs.make("scratch")
        if not self.plugin_dir:
            self.plugin_dir = tempdirs.make("plugin")
            os.chmod(self.plugin_dir, 0o755)

    # -- hooks for sandboxed subclasses -----------------------------------
    @contextlib.contextmanager
    def launch_spec(self, command: str, env: dict[str, str] | None = None,
                    interactive: bool = False) -> Iterator[Launch]:
        """How ``command`` is started through ``sh -c`` in ``workdir`` (as ``run`` / ``spawn`` do).

        Args:
            command: a shell command line.
            env: the command's own variables.
            interactive: for ``spawn`` (a pseudo-terminal) rather than ``run``.

        Yields:
            A :class:`Launch`; its descriptors are closed when the context ends.

        Raises:
            TerminalError: the terminal is not started.
        """
        if self.overlay is None:
            yield Launch(["sh", "-c", command], self._env(env))
            return
        join = functools.partial(_enter_overlay, self.overlay.enter, self.overlay.in_userns,
                                 os.fsencode(self.workdir))
        yield Launch(["sh", "-c", command], self._env(env), self.overlay.fds, join)

    def _launch(self, start: Callable[[], T]) -> T:
        """Call ``start()`` (which creates a process) and return its result."""
        return start()

    def _defaults(self) -> dict[str, str]:
        """Variables every command gets (over the host's), the episode's tag included."""
        return {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "TERM": "dumb",
                "COLUMNS": "200", "PAGER": "cat", procs.TAG_VARIABLE: self.tag}

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        env = local_environ(os.environ, self._defaults(), extra)
        env[procs.TAG_VARIABLE] = self.tag
        return env

    # -- commands -----------------------------------------------------------
    def run(self, command: str, timeout: float = 60.0, max_output: int = DEFAULT_MAX_OUTPUT,
            env: dict[str, str] | None = None) -> RunResult:
        out = BoundedOutput(max_output)
        proc, start = self._take_batch_spare(command, env, out, timeout), "preloaded"
        if proc is None:
            out, start = BoundedOutput(max_output), "cold"
            proc = self._track(lambda: self._popen(command, env))
        deadline = time.monotonic() + timeout
        timed_out = False
        fd = proc.stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not sel.select(min(left, 1.0)):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    break
                out.feed(chunk)
        if timed_out:
            _kill_group(proc.pid)
        proc.stdout.close()
        code = proc.wait()
        with self._lock:
            if proc in self._children:  # close() from another thread may have cleared the list
                self._children.remove(proc)
        return RunResult(exit_code=None if timed_out else code, output=out.text(),
                         timed_out=timed_out, truncated_bytes=out.dropped, start=start)

    def _popen(self, command: str, env: dict[str, str] | None,
               extra_fds: tuple[int, ...] = ()) -> subprocess.Popen:
        """Start ``command`` as ``run`` does (no input, output and errors on one pipe)."""
        with self.launch_spec(command, env) as spec:
            proc = subprocess.Popen(
                spec.argv, cwd=self.workdir, env=spec.env, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                pass_fds=(*spec.pass_fds, *extra_fds), preexec_fn=spec.preexec)
        os.set_blocking(proc.stdout.fileno(), False)
        return proc

    def _pty(self, command: str, env: dict[str, str] | None,
             extra_fds: tuple[int, ...] = ()) -> LocalProcess:
        """Start ``command`` on a pseudo-terminal as ``spawn`` does."""
        with self.launch_spec(command, env, interactive=True) as spec:
            return LocalProcess(spec.argv[0], spec.argv[1:], cwd=self.workdir, env=spec.env,
                                encoding="utf-8", codec_errors="replace", echo=False,
                                dimensions=(50, 200), pass_fds=(*spec.pass_fds, *extra_fds),
                                preexec=spec.preexec)

    def spawn(self, command: str, env: dict[str, str] | None = None):
        """As :meth:`Terminal.spawn`; the returned process has ``dgym_start`` set to
        ``"preloaded"`` (a spare of :meth:`prewarm` became it) or ``"cold"``."""
        spare = self._take_interactive_spare(command, env)
        if spare is not None:
            return spare
        child = self._track(lambda: self._pty(command, env))
        child.dgym_start = "cold"
        return child

    # -- preloaded starts (the hooks of preload.Preloading) -------------------
    def _launch_key(self) -> object:
        """What the sandbox of a command started now depends on besides its command and
        environment (a sandboxed subclass: its mounts); a spare made under another
        key is not used."""
        return None

    def _spares_open(self) -> bool:
        return bool(self.workdir) and self._open

    def _spare_key(self, command: str, env: dict[str, str] | None) -> tuple:
        return command, tuple(sorted(self._env(env).items())), self._launch_key()

    @contextlib.contextmanager
    def _spare_channel(self) -> Iterator[preload.Channel]:
        host, child = socket.socketpair()
        try:
            yield preload.Channel(host, str(child.fileno()), (child.fileno(),))
        finally:
            child.close()

    def _start_spare(self, line: str, env: dict[str, str] | None, interactive: bool,
                     pass_fds: tuple[int, ...]):
        make = self._pty if interactive else self._popen
        return self._track(lambda: make(line, env, pass_fds))

    def _spare_alive(self, process) -> bool:
        return _alive(process)

    def _spare_drain(self, process, out: BoundedOutput) -> tuple[int, Callable[[], bool]]:
        fd = process.stdout.fileno()

        def drain() -> bool:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                return True
            out.feed(chunk)
            return bool(chunk)

        return fd, drain

    def _end_spare(self, process) -> None:
        with self._lock:
            if process in self._children:
                self._children.remove(process)
        if isinstance(process, pexpect.spawn):
            with contextlib.suppress(Exception):
                process.close(force=True)
        else:
            _kill_group(process.pid)
            with contextlib.suppress(Exception):
                process.stdout.close()
                process.wait(timeout=5)

    def _track(self, start: Callable[[], T]) -> T:
        """Launch a child with ``start()`` and remember it, unless the terminal is closed.

        Raises:
            TerminalError: not started, or closed (possibly by another thread).
        """
        if not self.workdir:
            raise TerminalError("terminal not started; call start() first")
        with self._lock:
            if not self._open:
                raise TerminalError("terminal closed; reset the environment")
            child = self._launch(start)
            self._children.append(child)
        return child

    @holding_lock
    def close(self) -> None:
        with self._lock:
            self._open = False
            children, self._children = self._children, []
        self._forget_spares()  # their processes are among the children
        for child in children:
            if isinstance(child, pexpect.spawn):
                with contextlib.suppress(Exception):  # closing must go on
                    child.close(force=True)
            elif getattr(child, "pid", None):
                _kill_group(child.pid)
        procs.kill_tagged(self.tag)
        for attr in ("scratch", "plugin_dir"):
            if getattr(self, attr):
                fdtree.remove_tree(getattr(self, attr))
                setattr(self, attr, "")
        cleanup.unregister(self)


class LocalProcess(pexpect.spawn):
    """``pexpect.spawn`` whose ``close()`` kills the process group at once.

    pexpect's own close sends SIGHUP, SIGCONT, SIGINT, then SIGKILL with
    ptyprocess's sleeps (0.1 s each) in between; a pdb restart paid them. Here
    the group is SIGKILLed and its exit status collected first, so closing
    costs what the kernel needs. ``force`` is accepted for compatibility: the
    process is always killed.

    Args:
        pass_fds: descriptors the program inherits (besides the terminal's).
        preexec: called in the child before exec (after the descriptors are set).
        Other arguments as ``pexpect.spawn``.
    """

    def __init__(self, *args, pass_fds: tuple[int, ...] = (),
                 preexec: Callable[[], None] | None = None, **kwargs) -> None:
        self._pass_fds = tuple(pass_fds)
        self._preexec = preexec
        super().__init__(*args, **kwargs)

    def _spawnpty(self, args, **kwargs):
        if self._pass_fds or self._preexec:
            fds, then = self._pass_fds, self._preexec

            def prepare() -> None:  # in the child, after ptyprocess closed the others
                for fd in fds:
                    os.set_inheritable(fd, True)
                if then is not None:
                    then()

            kwargs["pass_fds"] = fds
            kwargs["preexec_fn"] = prepare
        return super()._spawnpty(args, **kwargs)

    def close(self, force: bool = True) -> None:
        if not self.closed and self.pid:
            _kill_group(self.pid)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):  # collected already
                self.ptyproc.wait()
        self.ptyproc.delayafterclose = self.ptyproc.delayafterterminate = 0.0
        super().close(force=True)


def _enter_overlay(join: Callable[[], None], drop: bool, workdir: bytes) -> None:
    """In a child before exec: join the overlay's namespaces (``drop``: a user namespace,
    whose capabilities are dropped again), then enter ``workdir`` in its mount namespace
    (joining one moves the working folder to its root)."""
    hostview.join_only(join, drop)
    os.chdir(workdir)


def _alive(process) -> bool:
    """Whether a process this terminal started (``Popen`` or a pexpect spawn) still runs."""
    if isinstance(process, subprocess.Popen):
        return process.poll() is None
    try:
        return bool(process.isalive())
    except Exception:  # noqa: BLE001  a closed spawn is not alive
        return False


def _kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (ignore if already gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
