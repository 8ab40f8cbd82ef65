"""The Terminal protocol: where commands of an episode run.

A terminal runs shell commands in the episode's working copy and opens
interactive sessions (pdb) driven by pexpect. The working copy always lives on
the host (``Workspace.root``); a Docker terminal bind-mounts it into its
container at ``workdir``.
"""

from __future__ import annotations

import abc
import functools
import os
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

#: Default cap on the output a command may return, in bytes. Past it the output
#: keeps its head and tail and says how much was cut (memory stays bounded).
DEFAULT_MAX_OUTPUT = 64 * 1024


F = TypeVar("F", bound=Callable[..., Any])


def holding_lock(method: F) -> F:
    """Run ``method`` holding its terminal's ``self._lock`` (a ``threading.RLock``).

    ``start`` and ``close`` are wrapped so they never interleave: a ``close()`` from
    another thread (a give-up while the episode starts) waits until ``start()`` has
    made its folders and descriptors, then removes all of them, instead of removing
    them under the running ``start()``.
    """
    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked  # type: ignore[return-value]


class TerminalError(RuntimeError):
    """A terminal cannot be used (daemon unreachable, image missing, ...).

    The message is one line that says what to do.
    """


@dataclass
class RunResult:
    """Outcome of :meth:`Terminal.run`.

    Attributes:
        exit_code: the command's exit status; None when it timed out.
        output: stdout and stderr interleaved, decoded as UTF-8 (errors replaced),
            truncated to the terminal's cap with a note saying how much was cut.
        timed_out: the command ran longer than its timeout and was killed.
        truncated_bytes: how many bytes of output were dropped (0 if none).
        start: ``"preloaded"`` when a spare that imported pytest ahead of time
            became the command (:meth:`Terminal.prewarm`), else ``"cold"``.
    """

    exit_code: int | None
    output: str
    timed_out: bool = False
    truncated_bytes: int = 0
    start: str = "cold"


class Terminal(abc.ABC):
    """Runs commands for one episode. Use as a context manager or call close().

    Attributes:
        workdir: the working copy's path as commands see it (host path for the
            local terminal, the mount point inside the container for Docker).
        scratch: see the class attribute below.
    """

    workdir: str
    #: A host folder private to the episode, outside the working copy, that
    #: commands may write (the eval's test report goes there); "" when the
    #: terminal has none (the eval then reads no structured report).
    scratch: str = ""
    #: A host folder the commands can read but not write (the eval's pytest
    #: plugin goes there, written by the host); "" when the terminal has none.
    #: Commands see it at :meth:`plugin_path`.
    plugin_dir: str = ""
    #: ``(uid, gid)`` the commands run as on the host when dgym runs as root
    #: (files the host adds to the working copy should be handed to it); None
    #: when they run as this process's own user (or as root in a container).
    run_as: tuple[int, int] | None = None
    #: Messages from start() for the episode's first observation (e.g. a setup
    #: line that failed); empty when all went well.
    notes: tuple[str, ...] = ()

    def scratch_path(self) -> str:
        """The ``scratch`` folder's path as commands see it (the host path by default)."""
        return self.scratch

    def plugin_path(self) -> str:
        """The ``plugin_dir`` folder's path as commands see it (the host path by default)."""
        return self.plugin_dir

    def write_plugin_file(self, name: str, data: bytes) -> str:
        """Write ``data`` as file ``name`` into :attr:`plugin_dir`, unless it is there.

        The folder is the terminal's own (read-only to the commands); the file is created
        ``O_EXCL | O_NOFOLLOW`` through the folder's descriptor, mode 0644.

        Args:
            name: a file name (no folder).
            data: the file's bytes; a file already there is kept as it is.

        Returns:
            The file's path as commands see it; "" when the terminal has no plugin folder.

        Raises:
            OSError: the folder cannot be written.
        """
        if not self.plugin_dir:
            return ""
        folder = os.open(self.plugin_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
                         | os.O_CLOEXEC)
        try:
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o644, dir_fd=folder)
            except FileExistsError:
                return posixpath.join(self.plugin_path(), name)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(name, 0o644, dir_fd=folder)  # whatever the umask
        finally:
            os.close(folder)
        return posixpath.join(self.plugin_path(), name)

    @abc.abstractmethod
    def start(self, host_root: str) -> None:
        """Prepare to run commands in the working copy at ``host_root`` (a host path).

        Raises:
            TerminalError: the terminal cannot start (message says what to do).
        """

    @abc.abstractmethod
    def run(self, command: str, timeout: float = 60.0, max_output: int = DEFAULT_MAX_OUTPUT,
            env: dict[str, str] | None = None) -> RunResult:
        """Run ``command`` through ``sh -c`` in ``workdir`` and wait for it.

        Args:
            command: a shell command line.
            timeout: seconds before the command (and its children) are killed.
            max_output: cap on returned output in bytes (head and tail kept).
            env: extra environment variables.
        """

    @abc.abstractmethod
    def spawn(self, command: str, env: dict[str, str] | None = None):
        """Start ``command`` interactively in ``workdir`` and return a pexpect spawn.

        The returned object supports ``expect``, ``sendline``, ``before``,
        ``isalive()`` and ``close(force=True)`` (``pexpect.spawn`` or
        ``pexpect.fdpexpect.fdspawn``); it is opened with ``encoding="utf-8"``.
        """

    def prewarm(self, command: str, env: dict[str, str] | None = None,
                interactive: bool = False) -> bool:
        """Start a spare of ``command`` ahead of a later ``run`` (``spawn`` when
        ``interactive``) of the same command; see :mod:`.preload`.

        Returns:
            True when a spare was started; this terminal starts none (False).
        """
        return False

    @abc.abstractmethod
    def close(self) -> None:
        """Stop every process (and container) this terminal started. Idempotent."""

    def to_relative(self, path: str) -> str | None:
        """Map a path as commands see it to a workspace-relative path.

        Returns None when ``path`` lies outside the working copy.
        """
        import posixpath

        norm = posixpath.normpath(path)
        root = posixpath.normpath(self.workdir)
        if norm == root:
            return "."
        if norm.startswith(root + "/"):
            return norm[len(root) + 1:]
        return None

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def child_alive(child) -> bool:
    """True while a process returned by :meth:`Terminal.spawn` runs (False for None,
    a closed one, or one whose connection broke)."""
    if child is None or getattr(child, "closed", False):
        return False
    try:
        return bool(child.isalive())
    except Exception:  # noqa: BLE001  a broken connection means not alive
        return False
