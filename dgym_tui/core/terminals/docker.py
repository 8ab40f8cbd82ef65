"""DockerTerminal: run the episode's commands in one sandbox container per episode.

The working copy stays on the host and is bind-mounted at ``workdir``: by
default (dgym running as root) an overlay of the original that the host
mounted for the container to bind (:mod:`dgym_tui.core.fs.overlay`, made
``bindable``; nothing copied, the original's files shown as the sandbox's uid
through an idmapped lower layer, and the overlay's host path unmounted once
the container holds it), else a copy. Each read-only file is bind-mounted
again, read-only, on top of it, so nothing in the container (pdb's
``!open(..., "w")`` or test code) can change it; each
ignored path is masked (an empty read-only file, or an empty read-only tmpfs
for a folder), so nothing in the container can read it. Commands run as an
unprivileged user (an episode's own random uid when this process is root, see
:mod:`.identity`, the working copy handed to it; else this process's own uid)
with every capability dropped and ``no-new-privileges``: no device nodes, no
mounts, no setuid escalation. The network is off by default; memory, process
count and CPU are capped, as are one process's CPU time, the size of a file
and core dumps (:mod:`.limits`); ``/tmp``, ``/var/tmp`` and ``/dev/shm`` are
size-capped tmpfs mounts. The environment is the image's plus
:data:`BASE_ENV` and the task's own: nothing of the host's. The only host
folders mounted are the working copy, a private host folder (``scratch``, at
``SCRATCH_MOUNT``) for results written by commands (the test report), and the
report plugin's folder (``plugin_dir``, read-only at ``PLUGIN_MOUNT``).

How processes are stopped: every command runs under a small shell wrapper that
records its process id in a pid file inside the container. The process is a
session leader (docker exec starts it in a new session), so killing its
process group through a second exec stops it and all its children. ``run``
does that when its timeout expires; the object returned by ``spawn`` does it
on ``close(force=True)``, ``terminate()`` and ``kill()``. Whatever escaped
(e.g. a daemon that called setsid) dies with the container at ``close()``.

Preloaded starts (:mod:`.preload`): after an eval, and after a pdb start, the
next one's spare is started as that command would be (an exec of the same
wrapped command line, environment, user, limits and folder in the same
container); no descriptor crosses ``docker exec``, so the spare connects to a
Unix socket the host listens on in ``plugin_dir/control`` (read-only inside),
and the host takes the connection only from a process of that exec (its
``Pid``, then the peer's parents). Spares die with the container at ``close()``.

Forks (``RepoEnv.fork``): creating and starting a container costs ~200 ms, so an
episode that was forked keeps *spare containers* (:data:`SPARES_KEPT`) for its
next forks, started one at a time in a background thread
(:meth:`DockerTerminal.prepare_fork_spare`; the option ``fork_spare``): the same
image, options, caps and labels, a user of its own, an empty folder at ``workdir``.
A fork's terminal adopts one (:meth:`DockerTerminal.adopt_spare`): the fork's
overlay is moved into it
(:mod:`.mountmove`, root only) instead of a new container being created. A spare
that does not fit or fails is removed and the fork creates its container as
before; a spare is removed with its episode's terminal.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import posixpath
import secrets
import selectors
import shlex
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psutil
from pexpect.fdpexpect import fdspawn

from dgym_tui.core import fdtree, tempdirs
from dgym_tui.core.errors import first_line

from . import cleanup, identity, mountmove, preload
from .base import DEFAULT_MAX_OUTPUT, RunResult, Terminal, TerminalError, holding_lock
from .environ import SANDBOX_HOME, SANDBOX_USER_NAME
from .limits import Limits
from .mounts import inside_paths
from .output import BoundedOutput

#: Label put on every container this module creates (value "1").
LABEL = "dgym-tui"
#: Label holding the owner's process id; with LABEL_HOST it tells stale containers apart.
LABEL_PID = "dgym-tui.pid"
#: Label holding the owner's host name.
LABEL_HOST = "dgym-tui.host"

#: Environment of every command in the container (same spirit as LocalTerminal).
BASE_ENV = {"PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "TERM": "dumb",
            "COLUMNS": "200", "LINES": "50", "PAGER": "cat", "LANG": "C.UTF-8"}

#: Pseudo-terminal size of interactive sessions (rows, columns).
PTY_SIZE = (50, 200)

#: The image used when none is given: the one scripts/setup_docker.sh builds.
DEFAULT_IMAGE = "dgym-tui/sandbox:test"

#: Seconds one ``root_setup`` line may run.
ROOT_SETUP_TIMEOUT = 600

#: Where the terminal's private host folder is mounted in the container.
SCRATCH_MOUNT = "/run/dgym"
#: Where the report plugin's folder is mounted, read-only.
PLUGIN_MOUNT = "/run/dgym-plugin"

#: Folder of ``plugin_dir`` holding the Unix sockets preloaded spares connect to
#: (``0o711``: commands reach a socket by its name but cannot list them).
CONTROL_DIR = "control"

#: Capabilities added back when the commands run as root (``user="root"``):
#: writing files of other owners in the working copy and handing them back.
ROOT_CAPS = ["CHOWN", "DAC_OVERRIDE", "FOWNER"]

#: When a docker episode starts the spare container its next fork adopts
#: (:meth:`DockerTerminal.prepare_fork_spare`): "lazy" after each fork of it (an
#: episode never forked costs nothing), "eager" also once its own container runs
#: (the first fork is fast too), "off" never.
FORK_SPARE_MODES = ("lazy", "eager", "off")
#: Spare containers an episode that was forked keeps ready (two back-to-back forks
#: are both served; each idle spare is ~14 MB of the machine's memory, see
#: docs/performance.md).
SPARES_KEPT = 2
#: Seconds a fork waits for a spare container that is starting (a start is ~0.2 s).
SPARE_WAIT = 60.0
#: Name of the empty folder (in the support folder) a spare binds at ``workdir``.
_PLACEHOLDER = "workdir"

_PID_DIR = "/tmp/.dgym-pids"
_counter = itertools.count(1)
_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()
_stale_checked = False
log = logging.getLogger(__name__)


def docker_base_url() -> str:
    """Return the Docker daemon address this process uses (``DOCKER_HOST`` or the default socket)."""
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _unreachable(detail: str = "") -> TerminalError:
    why = f" ({detail})" if detail else ""
    return TerminalError(f"Docker daemon not reachable at {docker_base_url()}{why}: start it "
                         "(sudo dockerd or scripts/setup_docker.sh) or use terminal='local'")


def get_client():
    """Return a shared ``docker.DockerClient`` for :func:`docker_base_url`, checked with a ping.

    Raises:
        TerminalError: the daemon does not answer.
    """
    import docker  # a dependency; imported here, where it is needed

    url = docker_base_url()
    with _clients_lock:
        client = _clients.get(url)
        if client is None:
            try:
                client = docker.from_env(timeout=60)
                client.ping()
            except Exception as exc:  # noqa: BLE001  DockerException, requests errors, ...
                raise _unreachable(first_line(exc, 160)) from None
            _clients[url] = client
        return client


def _forget_client() -> None:
    """Drop the shared client of :func:`docker_base_url` (after the daemon stopped answering)."""
    with _clients_lock:
        client = _clients.pop(docker_base_url(), None)
    if client is not None:
        client.close()


def remove_stale_containers(client=None) -> list[str]:
    """Remove dgym-tui containers left behind by processes of this host that no longer exist.

    (A process killed with SIGKILL cannot remove its container.)

    Args:
        client: a ``docker.DockerClient``; the shared one when None.

    Returns:
        The ids of the containers removed.

    Raises:
        TerminalError: the daemon is unreachable.
    """
    client = client or get_client()
    host = socket.gethostname()
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{LABEL_HOST}={host}"}):
        try:
            pid = int(container.labels.get(LABEL_PID, "0"))
        except ValueError:
            continue
        if pid > 0 and not psutil.pid_exists(pid):
            with contextlib.suppress(Exception):  # gone meanwhile: nothing to remove
                container.remove(force=True)
                removed.append(container.id)
    return removed


class DockerTerminal(preload.Preloading, Terminal):
    """Runs the episode's commands in a Docker container (one container per episode).

    Args:
        image: image tag, e.g. ``"dgym-tui/sandbox:test"`` or ``"python:3.12-slim"``;
            it must provide ``sh`` and coreutils (and python for pdb).
        readonly: workspace-relative paths (files or folders, already expanded
            from patterns) mounted read-only on top of the working copy.
            Paths that do not exist in the working copy are skipped.
        ignored: workspace-relative paths masked in the container (not visible).
        network: give the container a network (default: none, only ``lo``).
        mem_limit: memory cap, Docker syntax (``"2g"``, ``"512m"``); swap is not allowed.
        pids_limit: cap on processes and threads inside the container.
        cpus: CPU cap in cores (clamped to the number of CPUs of this machine).
        workdir: where the working copy is mounted inside the container (absolute).
        user: ``"auto"`` (an unprivileged uid, see the module docstring) or
            ``"root"`` for images whose tests need root (a few capabilities are
            then added back: ``ROOT_CAPS``).
        limits: caps beyond memory and processes (:class:`.limits.Limits` or a
            dict of its fields): CPU time of a process, file size, tmpfs sizes.
        root_setup: shell lines run as uid 0, in ``workdir``, once the container
            has started, before any other command (the setup an official
            harness runs as root, e.g. SWE-bench Django's ``locale-gen``). The
            container's capabilities stay as they are (none for the default
            user): root's own files in the image can change, nothing else. A
            line that fails (exit code not 0, or over ``ROOT_SETUP_TIMEOUT``
            seconds) is reported in ``notes``; the next lines still run.
        overlay: the working copy's overlay (``dgym_tui.core.fs.overlay.Overlay``,
            made ``bindable``) when it is one: the container binds its merged
            view at ``workdir`` (checked to be the same folder as the host's
            descriptor of it), then its host path is unmounted. None for a copy.
        run_as: with ``overlay`` and ``user="auto"`` when dgym runs as root:
            the uid / gid the overlay shows the original's files as; the
            commands run as them (nothing is handed over with ``chown``).
        fork_spare: when a spare container for this episode's next fork starts:
            one of :data:`FORK_SPARE_MODES` (default "lazy": after each fork);
            False means "off", True "eager".

    Attributes:
        workdir: the mount point of the working copy inside the container.
        container: the ``docker`` Container object while started, else None.
    """

    def __init__(self, image: str | None = DEFAULT_IMAGE, readonly=(), network: bool = False,
                 mem_limit: str = "2g", pids_limit: int = 512, cpus: float = 2.0,
                 workdir: str = "/workspace", ignored=(), user: str = "auto",
                 root_setup=(), limits: Limits | dict | None = None, overlay=None,
                 run_as: tuple[int, int] | None = None,
                 fork_spare: str | bool = "lazy") -> None:
        if not posixpath.isabs(workdir):
            raise TerminalError(f"workdir must be an absolute path inside the container, "
                                f"got {workdir!r}")
        if user not in ("auto", "root"):
            raise TerminalError(f"user must be 'auto' or 'root', got {user!r}")
        if isinstance(fork_spare, bool):  # YAML reads a bare `off` as False
            fork_spare = "eager" if fork_spare else "off"
        if fork_spare not in FORK_SPARE_MODES:
            raise TerminalError(f"fork_spare must be one of {', '.join(FORK_SPARE_MODES)}, "
                                f"got {fork_spare!r}")
        self.image = image or DEFAULT_IMAGE
        self.readonly = [str(p) for p in readonly]
        self.ignored = [str(p) for p in ignored]
        self.user = user
        self.root_setup = [str(line) for line in root_setup]
        self.network = network
        self.mem_limit = mem_limit
        self.pids_limit = pids_limit
        self.cpus = cpus
        self.limits = limits if isinstance(limits, Limits) else Limits.from_options(limits)
        self.workdir = posixpath.normpath(workdir)
        self.host_root: str | None = None
        self.container: Any = None
        self._client: Any = None
        uid = os.getuid()
        #: (uid, gid) the commands run as; None for root.
        self.run_as: tuple[int, int] | None = None
        self.overlay = overlay
        if user == "auto":
            self.run_as = ((run_as if overlay is not None else None) or identity.sandbox_ids()
                           or (uid, os.getgid()))
        #: (uid, gid) that files created in the container are handed back to at
        #: close(), so a non-root user can delete the working copy; None when not needed.
        self.owner: tuple[int, int] | None = (uid, os.getgid()) if uid != 0 and user == "root" \
            else None
        self.scratch = ""
        self.plugin_dir = ""
        self._support = ""
        self._spawned: list[DockerProcess] = []
        self._lock = threading.RLock()  # re-entered when a signal handler closes us
        #: start evals and pdb sessions from a spare that imported pytest ahead of time
        #: (:mod:`.preload`); off with ``DGYM_PRELOAD=0``
        self.preload = preload.enabled()
        self._spares: dict[bool, preload.Spare] = {}  # interactive? -> the spare
        #: when the spare container for this episode's next fork starts (FORK_SPARE_MODES)
        self.fork_spare = fork_spare
        #: True once this terminal's container came from a fork spare
        self.started_from_spare = False
        self._plain = False  # started, and no mask on top of the working copy
        self._spare_lock = threading.RLock()  # the fork spare's fields below (re-entered by a
        # signal handler's close); never held long
        self._spare_ready = threading.Condition(self._spare_lock)
        self._fork_spares: list[DockerTerminal] = []  # ready for the next forks
        self._spare_thread: threading.Thread | None = None  # starting them
        self._spare_closed = False  # close() ran: no spare may start or stay
        self._adopted: DockerTerminal | None = None  # given by adopt_spare, for start()

    # -- lifecycle ---------------------------------------------------------

    @holding_lock
    def start(self, host_root: str) -> None:
        """Create and start the episode's container with ``host_root`` mounted at ``workdir``.

        A spare given to :meth:`adopt_spare` is used instead when it fits (the
        working copy moved into it, see :mod:`.mountmove`); else, or when that
        fails, the spare is removed and a container created as without it.

        Args:
            host_root: host path of the working copy (must exist).

        Raises:
            TerminalError: the working copy is missing, the daemon is unreachable,
                the image is missing, or the container cannot start.
        """
        from docker.types import Mount

        if self.container is not None:
            raise TerminalError("terminal already started; close() it before starting again")
        if not os.path.isdir(host_root):
            raise TerminalError(f"working copy {host_root!r} does not exist")
        host_root = self._bind_source() if self.overlay is not None else os.path.realpath(host_root)
        spare, self._adopted = self._adopted, None
        if spare is not None and self._take_over(spare, host_root):
            return
        client = self._checked_client()
        try:  # a refused path (readonly / ignored) must not leave the folders behind
            empty = self._make_folders()
            if self.run_as is not None and os.getuid() == 0 and self.overlay is None:
                # an overlay shows the files as run_as's already
                identity.chown_tree(host_root, *self.run_as)  # the sandbox user writes them
            mounts = [Mount(self.workdir, host_root, type="bind"), *self._folder_mounts()]
            for rel in inside_paths(host_root, self.readonly):
                mounts.append(Mount(posixpath.join(self.workdir, rel), os.path.join(host_root, rel),
                                    type="bind", read_only=True))
            masks = inside_paths(host_root, self.ignored)
            for rel in masks:
                target, host = posixpath.join(self.workdir, rel), os.path.join(host_root, rel)
                if os.path.isdir(host) and not os.path.islink(host):
                    mounts.append(Mount(target, None, type="tmpfs", read_only=True,
                                        tmpfs_size=4096, tmpfs_mode=0o555))
                else:
                    mounts.append(Mount(target, empty, type="bind", read_only=True))
        except BaseException:
            self.close()
            raise
        self._plain = not masks  # no mask on top of the working copy: spares can serve
        self.host_root = host_root
        with self._closed_on_failure():
            self._create_container(client, mounts)
            if self.overlay is not None:
                self._check_overlay()
                self.overlay.detach()  # the container's mount and our descriptor hold it
            self.notes = tuple(self._run_root_setup())
        if self.fork_spare == "eager":
            self.prepare_fork_spare()

    def _checked_client(self):
        """The shared client, once the image is known to be there.

        Raises:
            TerminalError: the daemon is unreachable or the image is missing.
        """
        from docker.errors import ImageNotFound

        client = get_client()
        try:
            client.images.get(self.image)
        except ImageNotFound:
            raise TerminalError(f"image {self.image} not found: build it with "
                                "scripts/setup_docker.sh or pull it") from None
        except Exception as exc:  # noqa: BLE001  DockerException, requests' ConnectionError, ...
            _forget_client()  # the daemon may come back: ping again next time
            raise _unreachable(first_line(exc, 160)) from None
        return client

    def _make_folders(self) -> str:
        """Make ``scratch``, ``plugin_dir`` and the support folder (with its empty
        read-only file and empty folder); returns the empty file's path."""
        self.scratch = tempdirs.make("scratch")
        self.plugin_dir = tempdirs.make("plugin")
        os.chmod(self.plugin_dir, 0o755)
        self._support = tempdirs.make("sandbox")  # never writable inside
        empty = os.path.join(self._support, "empty")
        with open(empty, "w"):
            pass
        os.chmod(empty, 0o444)
        os.mkdir(os.path.join(self._support, _PLACEHOLDER), 0o555)
        if self.run_as is not None and os.getuid() == 0:
            os.chown(self.scratch, *self.run_as)
        return empty

    def _folder_mounts(self) -> list:
        """The scratch and plugin folders' mounts."""
        from docker.types import Mount

        return [Mount(SCRATCH_MOUNT, self.scratch, type="bind"),
                Mount(PLUGIN_MOUNT, self.plugin_dir, type="bind", read_only=True)]

    def _create_container(self, client, mounts: list) -> None:
        """Create and start the container with ``mounts`` (``self.container``).

        Raises:
            docker.errors.APIError: the daemon refused.
        """
        from docker.errors import APIError

        global _stale_checked
        if not _stale_checked:  # once per process: containers of killed owners
            _stale_checked = True
            with contextlib.suppress(Exception):  # best effort; start() goes on
                remove_stale_containers(client)
        cpus = min(float(self.cpus), float(os.cpu_count() or 1))
        limits = self.limits
        tmpfs = {"/tmp": f"size={limits.tmp_size or 512 * 1024 * 1024},mode=1777,exec",
                 "/var/tmp": f"size={limits.tmp_size or 512 * 1024 * 1024},mode=1777,exec"}
        options = {
            "command": ["sleep", "infinity"],
            "init": True,  # docker-init reaps orphaned processes
            "mounts": mounts, "working_dir": self.workdir,
            # An unprivileged uid may have no home in the image's /etc/passwd.
            "environment": {**BASE_ENV, **({"HOME": SANDBOX_HOME, "USER": SANDBOX_USER_NAME,
                                            "LOGNAME": SANDBOX_USER_NAME}
                                           if self.run_as else {})},
            "tmpfs": tmpfs, "shm_size": limits.shm_size or None,
            "ulimits": limits.docker_ulimits(),
            "network_mode": None if self.network else "none",
            "mem_limit": self.mem_limit, "memswap_limit": self.mem_limit,
            "pids_limit": self.pids_limit, "nano_cpus": int(cpus * 1e9),
            "security_opt": ["no-new-privileges"],
            "cap_drop": ["ALL"], "cap_add": ROOT_CAPS if self.run_as is None else None,
            "user": "root" if self.run_as is None else "{}:{}".format(*self.run_as),
            "labels": {LABEL: "1", LABEL_PID: str(os.getpid()),
                       LABEL_HOST: socket.gethostname()},
        }
        self._client = client
        cleanup.register(self)  # before creating: a signal now still removes the container
        try:
            self._create_and_start(options)
        except APIError as exc:
            if "docker-init" not in str(exc):
                raise
            options["init"] = False  # this daemon has no init binary
            self._create_and_start(options)

    # -- spare containers for forks (see mountmove) ---------------------------

    def _spare_options(self) -> dict[str, Any]:
        """The constructor's options a spare is made with (:meth:`_make_fork_spares`)."""
        return {"image": self.image, "network": self.network, "mem_limit": self.mem_limit,
                "pids_limit": self.pids_limit, "cpus": self.cpus, "workdir": self.workdir,
                "user": self.user, "limits": self.limits}

    def _spare_fit(self) -> tuple:
        """What a spare must share with the terminal adopting it: its options and
        ``run_as``."""
        return (*self._spare_options().values(), self.run_as)

    def start_spare(self) -> None:
        """Create and start this terminal's container with an empty folder at ``workdir``
        (a spare, for :meth:`adopt_spare`): no working copy, no root setup.

        Raises:
            TerminalError: the daemon is unreachable, the image is missing, or the
                container cannot start (nothing is left behind).
        """
        from docker.types import Mount

        with self._lock:
            if self.container is not None:
                raise TerminalError("terminal already started")
            with self._closed_on_failure():
                client = self._checked_client()
                self._make_folders()
                placeholder = os.path.join(self._support, _PLACEHOLDER)
                self._create_container(client, [Mount(self.workdir, placeholder, type="bind"),
                                                *self._folder_mounts()])

    @contextlib.contextmanager
    def _closed_on_failure(self) -> Iterator[None]:
        """Close the terminal when the block raises; the daemon's refusal (``APIError``)
        becomes a :class:`TerminalError`."""
        from docker.errors import APIError

        try:
            yield
        except APIError as exc:
            self.close()
            raise TerminalError(f"cannot start a container from {self.image}: "
                                f"{first_line(exc, 160)}") from None
        except BaseException:
            self.close()
            raise

    def adopt_spare(self, spare: DockerTerminal) -> None:
        """Start with ``spare``'s container (from :meth:`take_fork_spare`) at the next
        :meth:`start`, when it fits; this terminal owns the spare from now on (it is
        removed at ``start`` when it does not serve, or at :meth:`close`)."""
        with self._spare_lock:
            previous, self._adopted = self._adopted, spare
        if previous is not None:
            previous.close()

    def _take_over(self, spare: DockerTerminal, host_root: str) -> bool:
        """Move the working copy (the overlay mounted at ``host_root``) into ``spare``'s
        container and make it this terminal's. False (the spare removed, nothing of
        it left) when the spare does not fit or anything fails: the caller starts a
        container of its own."""
        from docker.errors import DockerException

        fits = (self.overlay is not None and spare.container is not None
                and spare._spare_fit() == self._spare_fit() and mountmove.available()
                and not inside_paths(host_root, self.ignored))
        try:
            if fits:
                container = spare.container
                container.reload()  # State.Pid; the spare has run no command (no exec)
                state = container.attrs.get("State") or {}
                if state.get("Running") and not container.attrs.get("ExecIDs"):
                    mountmove.move_into(self.overlay.root_fd, container.id,
                                        int(state.get("Pid") or 0), self.workdir,
                                        os.path.join(spare._support, _PLACEHOLDER),
                                        inside_paths(host_root, self.readonly))
                    with spare._lock:  # the spare's container and folders are ours now
                        for attr in ("container", "_client", "scratch", "plugin_dir",
                                     "_support"):
                            setattr(self, attr, getattr(spare, attr))
                            setattr(spare, attr, None if attr in ("container", "_client")
                                    else "")
                        cleanup.unregister(spare)
                    cleanup.register(self)
                    self.host_root, self._plain = host_root, True
                    try:
                        self._check_overlay(reload=False)
                    except TerminalError:
                        self._drop_container()
                        raise
        except (OSError, DockerException, TerminalError, ValueError) as exc:
            log.info("a fork's spare container did not serve (%s); starting one",
                     first_line(exc, 160))
        if self.container is None:
            spare.close()
            return False
        self.overlay.detach()  # the container's mount and our descriptor hold it
        self.notes = tuple(self._run_root_setup())
        self.started_from_spare = True
        if self.fork_spare == "eager":
            self.prepare_fork_spare()
        return True

    def _drop_container(self) -> None:
        """Remove the container (and the folders that came with it) and forget it,
        leaving the terminal able to start again (a spare that did not serve)."""
        with self._lock:
            container, self.container = self.container, None
        if container is not None:
            with contextlib.suppress(Exception):  # gone already
                container.remove(force=True)
        self._remove_folders()
        cleanup.unregister(self)

    def prepare_fork_spare(self) -> None:
        """Start, in a background thread, the spare containers the next forks of this
        episode adopt (:meth:`take_fork_spare`), up to :data:`SPARES_KEPT` ready.

        Only where a spare can serve (dgym runs as root, the working copy is an
        overlay with no mask on top of it, ``fork_spare`` is not "off");
        a spare that cannot start is logged and forgotten (forks create their
        container as before). Never raises.
        """
        with self._spare_lock:
            if (self.fork_spare == "off" or self.container is None or self.overlay is None
                    or not self._plain or not mountmove.available() or self._spare_closed
                    or self._spare_thread is not None or len(self._fork_spares) >= SPARES_KEPT):
                return
            self._spare_thread = threading.Thread(target=self._make_fork_spares,
                                                  name="dgym-docker-spare", daemon=True)
            self._spare_thread.start()

    def _make_fork_spares(self) -> None:
        """The spare thread: start spares one at a time until SPARES_KEPT are ready."""
        left: DockerTerminal | None = None
        try:
            while True:
                with self._spare_lock:
                    if self._spare_closed or len(self._fork_spares) >= SPARES_KEPT:
                        return
                spare = DockerTerminal(**self._spare_options(), fork_spare=self.fork_spare)
                try:
                    spare.start_spare()
                except Exception as exc:  # noqa: BLE001  a head start only: forks make their own
                    log.info("no spare container for the next fork: %s", first_line(exc, 160))
                    return
                with self._spare_lock:
                    if self._spare_closed:  # nothing outlives the episode
                        left = spare
                        return
                    self._fork_spares.append(spare)
                    self._spare_ready.notify_all()
        finally:
            with self._spare_lock:
                self._spare_thread = None  # (under the lock: prepare_fork_spare starts another)
                self._spare_ready.notify_all()
            if left is not None:
                left.close()

    def take_fork_spare(self) -> DockerTerminal | None:
        """Hand a spare container over to a fork (it owns it from then on: give it to
        the fork's terminal's :meth:`adopt_spare`, or ``close()`` it); waits for one
        that is starting. None when there is none. Its ``run_as`` is the uid / gid the
        fork's working copy must show its files as."""
        with self._spare_lock:
            self._spare_ready.wait_for(
                lambda: self._fork_spares or self._spare_thread is None, SPARE_WAIT)
            return self._fork_spares.pop(0) if self._fork_spares else None

    def _close_fork_spares(self) -> None:
        """Remove the spares ready or given to :meth:`adopt_spare`; no new one starts. One
        still starting is removed by its thread once its start ends, without waiting
        for it here (the app closes an episode right after forking it), except when
        the process exits (:func:`.cleanup.closing_all`): then it is waited for."""
        with self._spare_lock:
            self._spare_closed = True
            spares = [*self._fork_spares, self._adopted]
            self._fork_spares, self._adopted = [], None
            thread = self._spare_thread
        if thread is not None and thread is not threading.current_thread() \
                and cleanup.closing_all():
            thread.join(SPARE_WAIT)  # its spare is removed by the thread itself
        for spare in spares:
            if spare is not None:
                spare.close()

    def _bind_source(self) -> str:
        """The host path of the overlay's merged view, checked to be mounted there now
        (the same folder as the host's descriptor of it: once unmounted, a path
        derived from that descriptor could name another folder).

        Raises:
            TerminalError: it is not mounted there (any more).
        """
        path = self.overlay.merged
        try:
            seen = os.stat(path, follow_symlinks=False)
        except OSError:
            seen = None
        ours = os.fstat(self.overlay.root_fd)
        if not self.overlay.attached or seen is None \
                or (seen.st_dev, seen.st_ino) != (ours.st_dev, ours.st_ino):
            raise TerminalError("the overlay working copy is bound by a container already "
                                "(a terminal starts once per working copy); reset the "
                                "environment")
        return path

    def _check_overlay(self, reload: bool = True) -> None:
        """Make sure the container's ``workdir`` is the overlay the host reads (the same
        folder as its descriptor): a daemon in another mount namespace would bind an
        empty folder instead.

        Args:
            reload: ask the daemon for the container's state first (False: it was
                just asked).

        Raises:
            TerminalError: it is another folder.
        """
        if reload:
            self.container.reload()
        pid = int(self.container.attrs.get("State", {}).get("Pid") or 0)
        try:
            fd = os.open(f"/proc/{pid}/root{self.workdir}",
                         os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return  # another pid namespace: nothing to compare (the first eval tells)
        try:
            seen, ours = os.fstat(fd), os.fstat(self.overlay.root_fd)
        finally:
            os.close(fd)
        if (seen.st_dev, seen.st_ino) != (ours.st_dev, ours.st_ino):
            raise TerminalError("the container does not see the working copy's overlay (is "
                                "dockerd in another mount namespace?); use terminal_options "
                                "{'overlay': False}")

    def _run_root_setup(self):
        """Run ``root_setup`` as uid 0; yield a note per line that failed."""
        for line in self.root_setup:
            code, output = self.container.exec_run(
                ["timeout", str(ROOT_SETUP_TIMEOUT), "sh", "-c", line], user="0",
                workdir=self.workdir, environment=BASE_ENV)
            if code != 0:
                text = output.decode("utf-8", "replace")[-2000:]
                yield f"Setup command failed (exit code {code}, as root): {line}\n{text}"

    def _create_and_start(self, options: dict) -> None:
        """Create and start the container (``self.container``); remove it if it does not start."""
        self.container = self._client.containers.create(self.image, detach=True, **options)
        try:
            self.container.start()
        except BaseException:
            container, self.container = self.container, None
            with contextlib.suppress(Exception):  # already failing: report the first error
                container.remove(force=True)
            raise

    @holding_lock
    def close(self) -> None:
        """Kill every process and remove the container (forced), and the fork spare.
        Idempotent; never raises."""
        self._close_fork_spares()
        with self._lock:
            container, self.container = self.container, None
            spawned, self._spawned = self._spawned, []
        for spare in self._forget_spares():  # their processes end with the container
            if isinstance(spare.process, _Exec):
                spare.process.release()
        for child in spawned:
            child._release()
        if container is not None:
            self._give_back_files(container)
            try:
                container.remove(force=True)
            except Exception as exc:  # noqa: BLE001  close() never raises
                from docker.errors import NotFound

                if not isinstance(exc, NotFound):
                    import sys

                    print(f"dgym-tui: could not remove container {container.short_id}: "
                          f"{first_line(exc, 160)}", file=sys.stderr)
        self._remove_folders()
        cleanup.unregister(self)

    def _remove_folders(self) -> None:
        """Delete the scratch, plugin and support folders (each once)."""
        for attr in ("scratch", "plugin_dir", "_support"):
            if getattr(self, attr):
                fdtree.remove_tree(getattr(self, attr))
                setattr(self, attr, "")

    def scratch_path(self) -> str:
        """The scratch folder's path as commands in the container see it."""
        return SCRATCH_MOUNT

    def plugin_path(self) -> str:
        """The plugin folder's path as commands in the container see it (read-only)."""
        return PLUGIN_MOUNT

    def _give_back_files(self, container) -> None:
        """chown the working copy to ``owner`` (commands in the container run as root)."""
        if self.owner is None:
            return
        uid, gid = self.owner
        self._exec_wait(container, ["chown", "-R", f"{uid}:{gid}", self.workdir])

    def _exec_wait(self, container, argv: list[str]) -> None:
        """Run a helper command in ``container`` and wait until it has ended; never raises.

        (Output is attached on purpose: without it the daemon answers before
        the command has finished.)
        """
        with contextlib.suppress(Exception):  # the container is gone: nothing left to do
            api = self._client.api
            exec_id = api.exec_create(container.id, argv, stdout=True, stderr=True)["Id"]
            api.exec_start(exec_id)

    # -- commands ----------------------------------------------------------

    def _wrap(self, command: str, pidfile: str, tty: bool) -> list[str]:
        """The shell line that records its pid (the process group to kill), then runs ``command``.

        Interactive commands replace the wrapper (``exec``) so that Ctrl-C reaches
        them alone; batch commands run as a child so the pid file is removed after.
        """
        prelude = f"mkdir -p {_PID_DIR} && echo $$ > {pidfile}; "
        quoted = shlex.quote(command)
        if tty:
            return ["sh", "-c", prelude + "stty -echo 2>/dev/null; exec sh -c " + quoted]
        # One pipe for stdout and stderr keeps their order, as on the host.
        return ["sh", "-c", prelude + f"exec 2>&1; sh -c {quoted}; s=$?; rm -f {pidfile}; exit $s"]

    def kill_pidfile(self, pidfile: str, sig: str = "KILL") -> None:
        """Kill the process group whose leader's pid is in ``pidfile`` (inside the container).

        Args:
            pidfile: path inside the container written by the command wrapper.
            sig: signal name without "SIG" (``"KILL"``, ``"INT"``, ``"TERM"``).
        """
        container = self.container
        if container is None:
            return
        script = (f"p=$(cat {pidfile} 2>/dev/null) || exit 0; "
                  f"kill -{sig} -$p 2>/dev/null || kill -{sig} $p 2>/dev/null; "
                  + (f"rm -f {pidfile}" if sig == "KILL" else "true"))
        self._exec_wait(container, ["sh", "-c", script])

    def kill_group_from_host(self, exec_id: str) -> bool:
        """SIGKILL the process group of the running exec ``exec_id`` from the host, without
        an exec in the container (``kill_pidfile`` starts one: ~70 ms of a docker pdb
        restart's ~160 ms here, against ~2 ms for this).

        Done only when it is safe: the exec's leader (its ``Pid`` as the daemon gives it)
        is opened as a pidfd, its ``/proc`` entry then shows this container's id in its
        cgroup (kernel data the sandbox cannot set) and it leads its own process group,
        and the pidfd says it still runs after those reads (so the entry read was that
        process: its pid cannot have been reused meanwhile). A process of the container
        cannot join a group of the host's, so the group holds the container's processes
        only. Anything else (not root, another pid namespace than the daemon's, an exec
        that ended, a daemon that cannot be asked) returns False and kills nothing.

        Returns:
            True when the group was sent SIGKILL.
        """
        container = self.container
        pidfd_open = getattr(os, "pidfd_open", None)
        send = getattr(signal, "pidfd_send_signal", None)
        if container is None or pidfd_open is None or send is None:
            return False
        try:
            info = self._client.api.exec_inspect(exec_id)
        except Exception:  # noqa: BLE001  the daemon or the container is gone
            return False
        pid = info.get("Pid")
        if not info.get("Running") or not isinstance(pid, int) or pid <= 1:
            return False
        try:
            pidfd = pidfd_open(pid)
        except OSError:
            return False
        try:
            with open(f"/proc/{pid}/cgroup", encoding="ascii", errors="replace") as f:
                cgroups = f.read()
            if len(container.id) != 64 or container.id not in cgroups \
                    or os.getpgid(pid) != pid:
                return False
            send(pidfd, 0)  # still the process whose entry was read (raises once it ended)
            os.killpg(pid, signal.SIGKILL)
            return True
        except OSError:
            return False
        finally:
            os.close(pidfd)

    def _start_exec(self, command: str, env: dict[str, str] | None,
                    tty: bool) -> tuple[str, Any, str]:
        """Create and start an exec of ``command`` (wrapped to record its pid) in ``workdir``.

        With ``tty`` the exec gets stdin and a pseudo-terminal of ``PTY_SIZE``; without,
        stdout and stderr come multiplexed on the socket.

        Returns:
            ``(exec_id, socket, pidfile)``: the socket as returned by ``exec_start``.

        Raises:
            TerminalError: not started, or the container is gone.
        """
        container = self.container
        if container is None:
            raise TerminalError("terminal not started; call start() first")
        api = self._client.api
        pidfile = f"{_PID_DIR}/{os.getpid()}-{next(_counter)}.pid"
        try:
            exec_id = api.exec_create(container.id, self._wrap(command, pidfile, tty=tty),
                                      stdout=True, stderr=True, stdin=tty, tty=tty,
                                      workdir=self.workdir, environment=dict(env or {}))["Id"]
            sock = api.exec_start(exec_id, socket=True, tty=tty)
        except Exception as exc:  # noqa: BLE001  any API failure means the container is unusable
            raise TerminalError(f"cannot start a command in the container: {first_line(exc, 160)}; "
                                "reset the environment") from None
        if tty:
            with contextlib.suppress(Exception):  # cosmetic: the default size also works
                api.exec_resize(exec_id, height=PTY_SIZE[0], width=PTY_SIZE[1])
        return exec_id, sock, pidfile

    def run(self, command: str, timeout: float = 60.0, max_output: int = DEFAULT_MAX_OUTPUT,
            env: dict[str, str] | None = None) -> RunResult:
        """Run ``command`` through ``sh -c`` in ``workdir`` inside the container and wait for it.

        Output (stdout and stderr interleaved) is streamed into a bounded buffer,
        so memory stays O(max_output) whatever the command prints.

        Args:
            command: a shell command line.
            timeout: seconds before the command and its process group are killed.
            max_output: cap on returned output in bytes (head and tail kept).
            env: extra environment variables.

        Returns:
            RunResult; ``exit_code`` is None and ``timed_out`` True after a timeout.

        Raises:
            TerminalError: not started, or the container is gone.
        """
        out = BoundedOutput(max_output)
        started, start = self._take_batch_spare(command, env, out, timeout), "preloaded"
        if started is None:
            out, start = BoundedOutput(max_output), "cold"
            started = _Exec(*self._start_exec(command, env, tty=False))
            started.reader = _FrameReader(started.raw, out)
        api = self._client.api
        deadline = time.monotonic() + timeout
        reader, pidfile = started.reader, started.pidfile
        try:
            timed_out = not reader.pump(deadline)
            if timed_out:
                self.kill_pidfile(pidfile)
                if not reader.pump(time.monotonic() + 2.0):
                    self.kill_pidfile(pidfile)  # the pid file may have come late
        finally:
            started.release()
        try:
            code = None if timed_out else _exit_code(api, started.exec_id)
        except Exception as exc:  # noqa: BLE001  container removed meanwhile, daemon gone
            raise TerminalError(f"lost the command's exit status: {first_line(exc, 160)}; "
                                "reset the environment") from None
        return RunResult(exit_code=code, output=out.text(), timed_out=timed_out,
                         truncated_bytes=out.dropped, start=start)

    def spawn(self, command: str, env: dict[str, str] | None = None) -> DockerProcess:
        """Start ``command`` interactively (with a pseudo-terminal) in ``workdir``.

        Args:
            command: a shell command line, e.g. ``"python -m pdb -m pytest -s"``.
            env: extra environment variables.

        Returns:
            A :class:`DockerProcess` (a ``pexpect.fdpexpect.fdspawn`` with
            ``encoding="utf-8"``); ``close(force=True)`` kills the process inside
            the container before closing the connection. Its ``dgym_start`` is
            ``"preloaded"`` (a spare of :meth:`prewarm` became it) or ``"cold"``.

        Raises:
            TerminalError: not started, or the container is gone.
        """
        child = self._take_interactive_spare(command, env)
        if child is None:
            exec_id, sock, pidfile = self._start_exec(command, env, tty=True)
            child = DockerProcess(self, sock, exec_id, pidfile)
            child.dgym_start = "cold"
        with self._lock:
            self._spawned = [c for c in self._spawned if not c.closed and c is not child] \
                + [child]
        return child

    # -- preloaded starts (the hooks of preload.Preloading) -------------------
    def _spares_open(self) -> bool:
        return self.container is not None

    def _spare_key(self, command: str, env: dict[str, str] | None) -> tuple:
        container = self.container
        return (command, tuple(sorted((env or {}).items())),
                container.id if container is not None else None)

    @contextlib.contextmanager
    def _spare_channel(self) -> Iterator[preload.Channel]:
        """A Unix socket listening in ``plugin_dir/control`` (the spare's user alone may
        connect to it), named at random."""
        folder = os.path.join(self.plugin_dir, CONTROL_DIR)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
            os.chmod(folder, 0o711)
        name = f"{secrets.token_hex(8)}.sock"
        path = os.path.join(folder, name)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel = preload.Channel(listener, posixpath.join(PLUGIN_MOUNT, CONTROL_DIR, name),
                                  path=path)
        try:
            listener.bind(path)
            if self.run_as is not None and os.getuid() == 0:
                os.chown(path, *self.run_as)  # a folder only this process writes
            os.chmod(path, 0o600)
            listener.listen(1)
            listener.setblocking(False)
        except BaseException:
            channel.close()
            raise
        yield channel

    def _start_spare(self, line: str, env: dict[str, str] | None, interactive: bool,
                     pass_fds: tuple[int, ...]):
        started = _Exec(*self._start_exec(line, env, tty=interactive))
        if not interactive:
            return started
        child = DockerProcess(self, started.sock, started.exec_id, started.pidfile)
        with self._lock:
            self._spawned.append(child)
        return child

    def _spare_peer(self, process, pid: int) -> bool:
        """True when ``pid`` is the spare's exec's process (``Pid`` of the exec, as the
        daemon's host sees it) or one of its descendants."""
        deadline = time.monotonic() + 5.0
        while True:  # the daemon may say Running before it has recorded the Pid
            info = self._client.api.exec_inspect(process.exec_id)
            leader = info.get("Pid")
            if leader or info.get("ExitCode") is not None or time.monotonic() > deadline:
                break  # (an exec that ended is not the spare's any more)
            time.sleep(0.01)
        if not leader:
            return False
        try:
            return pid == leader or any(p.pid == leader for p in psutil.Process(pid).parents())
        except psutil.Error:
            return False

    def _spare_alive(self, process) -> bool:
        if isinstance(process, DockerProcess):
            return process.isalive()
        return process.open()

    def _spare_drain(self, process, out: BoundedOutput) -> tuple[int, Callable[[], bool]]:
        process.reader = _FrameReader(process.raw, out)
        return process.raw.fileno(), process.reader.read_once

    def _end_spare(self, process) -> None:
        if isinstance(process, DockerProcess):
            with self._lock:
                if process in self._spawned:
                    self._spawned.remove(process)
            process.close(force=True)
        else:
            self.kill_pidfile(process.pidfile)
            process.release()


@dataclass
class _Exec:
    """A batch exec (a command started by ``run``, or a batch spare) and its connection.

    Attributes:
        exec_id: the exec's id.
        sock: the connection as ``exec_start(socket=True)`` returned it.
        pidfile: the wrapper's pid file inside the container.
        reader: the decoder of its output, once someone reads it.
    """

    exec_id: str
    sock: Any
    pidfile: str
    reader: _FrameReader | None = None

    @property
    def raw(self) -> socket.socket:
        return getattr(self.sock, "_sock", self.sock)

    def open(self) -> bool:
        """False once the output's end is waiting (the process ended); True otherwise,
        without reading anything."""
        raw = self.raw
        with selectors.DefaultSelector() as sel:  # (the socket may have a timeout set)
            sel.register(raw, selectors.EVENT_READ)
            if not sel.select(0):
                return True
        try:
            return bool(raw.recv(1, socket.MSG_PEEK))
        except OSError:
            return False

    def release(self) -> None:
        """Close the connection."""
        for s in (self.raw, self.sock):
            with contextlib.suppress(Exception):  # closing must go on
                s.close()


class _FrameReader:
    """Decodes Docker's multiplexed exec stream (8-byte header, then payload) into ``out``.

    Keeps partial frames between reads, so reading may stop and resume.
    """

    def __init__(self, sock, out: BoundedOutput) -> None:
        self.sock, self.out = sock, out
        self._buf = bytearray()
        self._payload = 0  # size of the frame being read; 0 while reading a header
        self.eof = False

    def _decode(self) -> None:
        buf = self._buf
        while True:
            if self._payload == 0:
                if len(buf) < 8:
                    return
                self._payload = struct.unpack(">BxxxL", bytes(buf[:8]))[1]
                del buf[:8]
            elif len(buf) >= self._payload:
                self.out.feed(bytes(buf[:self._payload]))
                del buf[:self._payload]
                self._payload = 0
            else:
                return

    def read_once(self) -> bool:
        """Read and decode what the socket holds (call when it is readable); False at
        the end of the stream."""
        try:
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self._buf += chunk
        self._decode()
        return True

    def pump(self, deadline: float) -> bool:
        """Read until end of stream (returns True) or until ``deadline`` (monotonic s; False)."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.sock, selectors.EVENT_READ)
            while not self.eof:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                if sel.select(min(left, 1.0)):
                    self.read_once()
        return True


def _exit_code(api, exec_id: str) -> int | None:
    """Exit status of a finished exec (waits briefly for the daemon to record it)."""
    for _ in range(50):
        info = api.exec_inspect(exec_id)
        if not info.get("Running") and info.get("ExitCode") is not None:
            return int(info["ExitCode"])
        time.sleep(0.01)
    return None


class DockerProcess(fdspawn):
    """An interactive process inside the container, driven like ``pexpect.spawn``.

    Created by :meth:`DockerTerminal.spawn`. Supports ``expect``, ``sendline``,
    ``before``, ``isalive()``, ``close(force=True)``, ``terminate()``,
    ``kill(sig)`` and ``sendintr()``; ``exitstatus`` is set once it has ended.
    """

    def __init__(self, terminal: DockerTerminal, sock, exec_id: str, pidfile: str) -> None:
        self._sock = sock
        self._raw = getattr(sock, "_sock", sock)
        self._raw.setblocking(True)
        super().__init__(os.dup(self._raw.fileno()), encoding="utf-8", codec_errors="replace",
                         use_poll=True)
        self.own_fd = True
        self.terminal = terminal
        self.exec_id = exec_id
        self.pidfile = pidfile
        self.exitstatus: int | None = None
        self.signalstatus = None
        self.name = f"<docker exec {exec_id[:12]}>"
        #: how it started: "preloaded" (a spare became it) or "cold"
        self.dgym_start = "cold"

    def _inspect(self) -> dict | None:
        try:
            return self.terminal._client.api.exec_inspect(self.exec_id)
        except Exception:  # noqa: BLE001  the daemon or the container is gone
            return None

    def isalive(self) -> bool:
        """True while the process runs inside the container.

        Cheap when nothing is pending on the connection (a local peek: open and
        quiet means alive); otherwise asks the daemon.
        """
        if self.child_fd == -1:
            return False
        try:
            pending = self._raw.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return True  # connection open, nothing to read: the process still runs
        except OSError:
            pending = b""
        if not pending:  # end of stream: the process has ended; fill exitstatus
            if self.exitstatus is None:
                with contextlib.suppress(Exception):  # the daemon or the container is gone
                    self.exitstatus = _exit_code(self.terminal._client.api, self.exec_id)
            return False
        info = self._inspect()
        if info is None:
            return False
        if info.get("Running"):
            return True
        if info.get("ExitCode") is not None:
            self.exitstatus = int(info["ExitCode"])
        return False

    def kill(self, sig: int) -> None:
        """Send signal ``sig`` (a number) to the process group inside the container."""
        import signal as _signal

        name = _signal.Signals(sig).name.removeprefix("SIG")
        self.terminal.kill_pidfile(self.pidfile, name)

    def sendintr(self) -> None:
        """Send Ctrl-C (through the pseudo-terminal)."""
        self.send("\x03")

    def terminate(self, force: bool = False) -> bool:
        """Stop the process: SIGINT-free hard stop (SIGKILL of its group). Returns True."""
        self.terminal.kill_pidfile(self.pidfile, "KILL")
        return True

    def close(self, force: bool = True) -> None:
        """Kill the process group inside the container, then close the connection.

        The group is killed from the host when that is safe
        (:meth:`DockerTerminal.kill_group_from_host`), else by ``kill_pidfile``.
        Idempotent. ``force`` is accepted for ``pexpect.spawn`` compatibility: the
        process is always killed, since a detached exec would live on.
        """
        if self.child_fd == -1:
            return
        if self.isalive() and not self.terminal.kill_group_from_host(self.exec_id):
            self.terminal.kill_pidfile(self.pidfile, "KILL")
        self._release()

    def _release(self) -> None:
        """Close the connection without asking the daemon (used when the container goes away)."""
        if self.child_fd != -1:  # type: ignore[has-type]  # pexpect is untyped
            with contextlib.suppress(OSError):
                os.close(self.child_fd)  # type: ignore[has-type]
            self.child_fd = -1
        self.closed = True
        for s in (self._raw, self._sock):
            with contextlib.suppress(Exception):  # closing must go on
                s.close()


__all__ = [
    "LABEL",
    "DockerProcess",
    "DockerTerminal",
    "docker_base_url",
    "get_client",
    "remove_stale_containers",
]
