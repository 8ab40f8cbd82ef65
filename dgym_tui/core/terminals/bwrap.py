"""BwrapTerminal: local processes inside a bubblewrap sandbox (Debian package ``bubblewrap``).

Each command runs as::

    bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /run
          [--tmpfs $HOME, its folders holding Python and PATH entries bound back]
          [--ro-bind the Python and PATH entries that live under /tmp or /run]
          --bind WORK WORK [--bind SCRATCH SCRATCH]
          --ro-bind WORK/ro WORK/ro ...            # .debugreadonly
          --ro-bind EMPTY WORK/f | --tmpfs WORK/d  # .debugignore (masked)
          --unshare-pid --unshare-ipc --unshare-net --die-with-parent --cap-drop ALL
          --chdir WORK -- sh -c COMMAND

so the code under test sees the system read-only, writes only the working copy
(and a private ``/tmp``), cannot see ignored files, has no network, no
capabilities (no device nodes, no remounts), its own PID namespace (every
process dies with the sandbox's first process) and dies with its parent.

``--die-with-parent`` is tied to the *thread* that started bwrap (Linux's
parent-death signal); commands are therefore started from one long-lived
thread of this module, not from short-lived worker threads (Textual workers).
"""

from __future__ import annotations

import functools
import os
import shutil
import site
import subprocess
import sys
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from .base import TerminalError
from .local import LocalTerminal
from .mounts import inside_paths

T = TypeVar("T")

_launcher: ThreadPoolExecutor | None = None


def _launcher_pool() -> ThreadPoolExecutor:
    global _launcher
    if _launcher is None:
        _launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dgym-bwrap-parent")
    return _launcher


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why the bwrap terminal cannot be used here (one line), or None when it works.

    Runs ``bwrap ... true`` once per process (cached).
    """
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        res = subprocess.run([exe, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                              "--unshare-pid", "--unshare-net", "--die-with-parent",
                              "--cap-drop", "ALL", "true"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not start: {exc}"
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or [f"exit code {res.returncode}"])[0]
        return f"bwrap does not work here ({why}); unprivileged user namespaces may be off"
    return None


def default_terminal() -> tuple[str, str | None]:
    """The terminal for a user's own repository: ``bwrap`` where it works, else ``local``.

    Returns:
        ``(name, notice)``: ``("bwrap", None)``, or ``("local", one line saying
        the code runs unsandboxed and what to do)``.
    """
    problem = bwrap_problem()
    if problem is None:
        return "bwrap", None
    return "local", (f"no sandbox: {problem}; commands run with your own rights "
                     "(--terminal local), or use --terminal docker")


def _interpreter_paths() -> list[str]:
    """Folders the running Python needs (prefixes, user site-packages), real paths, existing."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
    if user_site:
        paths.add(user_site)
    return sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})


def _home_folders_to_keep(home: str) -> list[str]:
    """Top-level folders of ``home`` that hold the running Python or a ``PATH`` entry.

    (``~/.pyenv``, ``~/.local``, a virtualenv in ``~/venvs``, ...): the commands
    need them; the rest of the home folder (keys, tokens, other projects) stays hidden.
    """
    return sorted({os.path.join(home, os.path.relpath(path, home).split(os.sep)[0])
                   for path in _kept_under(home)})


def _kept_under(folder: str) -> list[str]:
    """The running Python's folders and the ``PATH`` entries inside ``folder`` (a folder the
    sandbox replaces with an empty tmpfs, e.g. ``/tmp``), outermost only: a virtualenv or a
    checkout under ``/tmp`` must still run the tests. Nothing else of ``folder`` shows."""
    found = set()
    for path in _interpreter_paths() + os.environ.get("PATH", "").split(os.pathsep):
        real = os.path.realpath(path) if path else ""
        if real and real != folder and _within(real, folder) and os.path.isdir(real):
            found.add(real)
    return sorted(p for p in found if not any(o != p and _within(p, o) for o in found))


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


class BwrapTerminal(LocalTerminal):
    """Runs the episode's commands in a bubblewrap sandbox on this machine.

    Args:
        readonly: workspace-relative paths (files or folders) bound read-only.
        ignored: workspace-relative paths masked (hidden from every command).
        hidden: host paths masked as well (e.g. the original repository's
            ignored files, which the read-only view of the system would show).
        network: keep the host's network (default: none, only a private ``lo``).

    Attributes:
        workdir: the working copy's host path (commands see the same path).
        scratch: a host folder, writable by the commands and private to the
            episode (outside the working copy); deleted at ``close()``.

    Raises:
        TerminalError: from ``start()`` when bwrap is missing or does not work.
    """

    def __init__(self, readonly: Iterable[str] = (), ignored: Iterable[str] = (),
                 hidden: Iterable[str] = (), network: bool = False) -> None:
        super().__init__()
        self.readonly = [str(p) for p in readonly]
        self.ignored = [str(p) for p in ignored]
        self.hidden = [str(p) for p in hidden]
        self.network = network
        self._prefix: list[str] = []

    def start(self, host_root: str) -> None:
        """Check bwrap and prepare the sandbox's command line for ``host_root``.

        Raises:
            TerminalError: the working copy is missing, a path escapes it, or
                bwrap is unusable (message says what to do).
        """
        problem = bwrap_problem()
        if problem:
            raise TerminalError(f"{problem}; or use terminal='local' for trusted code")
        super().start(host_root)
        try:
            self._prefix = self._command_line()
        except BaseException:
            self.close()
            raise

    def _command_line(self) -> list[str]:
        work = self.workdir
        empty = os.path.join(self.scratch, ".empty")
        with open(empty, "w"):
            pass
        os.chmod(empty, 0o444)
        args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--tmpfs", "/tmp", "--tmpfs", "/run"]
        home = os.path.realpath(os.path.expanduser("~"))
        covered = ["/tmp", "/run"]  # fresh tmpfs: nothing of the host shows there
        if home not in ("/", "") and os.path.isdir(home):  # its Python / PATH folders stay
            covered.append(home)
            args += ["--tmpfs", home]
            for keep in _home_folders_to_keep(home):
                args += ["--ro-bind", keep, keep]
        for folder in ("/tmp", "/run"):
            for keep in _kept_under(folder):
                args += ["--ro-bind", keep, keep]
        args += ["--bind", work, work, "--bind", self.scratch, self.scratch]
        for rel in inside_paths(work, self.readonly):
            path = os.path.join(work, rel)
            args += ["--ro-bind", path, path]
        masks = [os.path.join(work, rel) for rel in inside_paths(work, self.ignored)]
        interpreter = _interpreter_paths()
        for path in self.hidden:
            real = os.path.realpath(path)
            if (not os.path.lexists(real) or any(_within(real, c) for c in covered)
                    or any(_within(p, real) for p in interpreter)):
                continue  # already invisible, or the Python that runs the tests (an ignored .venv)
            masks.append(real)
        for path in masks:
            if os.path.isdir(path) and not os.path.islink(path):
                args += ["--tmpfs", path, "--remount-ro", path]
            else:
                args += ["--ro-bind", empty, path]
        args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
        if not self.network:
            args.append("--unshare-net")
        return [*args, "--chdir", work, "--"]

    def _argv(self, command: str) -> list[str]:
        if not self._prefix:
            raise TerminalError("terminal not started; call start() first")
        return [*self._prefix, "sh", "-c", command]

    def _launch(self, start: Callable[[], T]) -> T:
        # Started from a thread that lives as long as the program: bwrap's
        # --die-with-parent fires when the starting *thread* ends.
        return _launcher_pool().submit(start).result()

