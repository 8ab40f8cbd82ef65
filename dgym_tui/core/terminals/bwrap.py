"""BwrapTerminal: local processes inside a bubblewrap sandbox (Debian package ``bubblewrap``).

Each command runs as::

    bwrap --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net
          --die-with-parent --cap-drop ALL [--new-session]
          --unshare-user --disable-userns                          # dgym runs as a user
          | --cap-add CAP_SETUID --cap-add CAP_SETGID --cap-add CAP_SETPCAP
            --cap-add CAP_DAC_READ_SEARCH                          # dgym runs as root
          --ro-bind-fd FD /usr ... --symlink usr/bin /bin ...      # system folders
          --ro-bind-fd FD /etc/ld.so.cache ...                     # a few /etc entries
          --ro-bind-fd FD /etc/passwd ...                          # written by the terminal
          --proc /proc --dev /dev --size T --tmpfs /tmp --size S --tmpfs /dev/shm
          --ro-bind-fd FD PREFIX ...                               # the Python of the tests
          --bind-fd FD WORK --bind-fd FD SCRATCH --ro-bind-fd FD PLUGIN
          --ro-bind-fd FD WORK/ro ...                              # .debugreadonly
          --ro-bind-fd EMPTY WORK/f | --tmpfs WORK/d --remount-ro WORK/d   # .debugignore
          --remount-ro /                                           # the sandbox's own root
          --seccomp FD --chdir WORK --
    [setpriv --reuid=U --regid=G --clear-groups --inh-caps=-all --bounding-set=-all
             --no-new-privs --]                                    # dgym runs as root
    prlimit --core=0:0 --nproc=N:N --as=B:B --cpu=S:S --fsize=F:F -- sh -c COMMAND

What the sandbox sees is an allow-list (:mod:`.allowlist`): system folders,
a few ``/etc`` entries, the Python that runs the tests, the working copy, the
scratch folder and the report plugin's folder; never ``/``, ``$HOME``,
``/var``, ``/root``, ``/run`` or the original repository. Every mount source
is a descriptor the host opened itself: the working copy's entries are
opened with ``O_PATH | O_NOFOLLOW`` one component at a time from a descriptor
of the working copy, at every start, so a link the sandbox planted is never
followed (the mount is left out instead).

Nobody inside is root. When dgym runs as a user, bwrap runs as that user and
maps only that uid into the sandbox's user namespace. When dgym runs as root,
bwrap runs as root (an unprivileged bwrap could not reach a Python under
``/root``, and bwrap started by root with ``--unshare-user`` maps the sandbox
to host root), binds the descriptors directly, and the first program inside,
``setpriv``, drops to the episode's own unprivileged uid / gid
(:mod:`.identity`) with no capability left and ``no_new_privs`` before
anything of the episode runs; the working copy and scratch folder are handed
to that uid. The environment is an allow-list
(:mod:`.environ`); a seccomp filter refuses what tests never need
(:mod:`.seccomp`); ``prlimit`` caps processes, memory, CPU time and file size
inside the sandbox's own user namespace (:mod:`.limits`).

Which Python runs the tests: the first ``python`` on the host's ``PATH``
(kept inside), so an activated virtualenv's interpreter and its site-packages
(shown read-only, also when the virtualenv lives in the repository and is
ignored) run them, as with ``--terminal local``.

``--die-with-parent`` is tied to the *thread* that started bwrap (Linux's
parent-death signal); commands are therefore started from one long-lived
thread of this module, not from short-lived worker threads (Textual workers).
``--new-session`` is used for batch commands; interactive sessions keep their
own pseudo-terminal as controlling terminal (Ctrl-C must reach pdb), where
``TIOCSTI`` is refused by the seccomp filter instead.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from dgym_tui.core import fdtree, tempdirs

from . import allowlist, hostview, identity, seccomp
from .base import TerminalError, holding_lock
from .environ import SANDBOX_HOME, SANDBOX_USER_NAME, sandbox_environ
from .limits import Limits
from .local import Launch, LocalTerminal
from .mounts import normalized

T = TypeVar("T")

_launcher: ThreadPoolExecutor | None = None
log = logging.getLogger(__name__)
#: uid / gid of bwrap_problem's and host_view_works's probe sandboxes when dgym runs as root.
UID_PROBE = identity.UID_RANGE.start
#: Seconds a probe sandbox (it runs ``true``) may take before it counts as not starting.
PROBE_TIMEOUT = 20.0

#: Namespace and privilege flags of every sandbox.
ISOLATION = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
             "--die-with-parent", "--cap-drop", "ALL"]
#: Added when dgym runs as a user: bwrap makes a user namespace (mapping that user only)
#: and forbids further ones.
AS_USER = ["--unshare-user", "--disable-userns"]
#: Added when dgym runs as root: bwrap sets up the mounts as root (no user namespace,
#: which would map the sandbox to root). ``setpriv``, the first program inside, uses the
#: first three to drop to the sandbox's uid and loses them all in doing so; the last one
#: lets bwrap enter the working copy (the sandbox's, mode 0700) for ``--chdir``.
AS_ROOT = ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
           "--cap-add", "CAP_DAC_READ_SEARCH"]


def isolation(ids: tuple[int, int] | None) -> list[str]:
    """bwrap's namespace and privilege flags for a sandbox whose commands run as ``ids``."""
    return [*ISOLATION, *(AS_ROOT if ids is not None else AS_USER)]


def _launcher_pool() -> ThreadPoolExecutor:
    global _launcher
    if _launcher is None:
        _launcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dgym-bwrap-parent")
    return _launcher


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why the bwrap terminal cannot be used here (one line), or None when it works.

    Runs a minimal sandbox once per process (cached), as the sandbox's uid
    when this process is root, and builds the seccomp filter.
    """
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        ids = identity.sandbox_ids()
    except ValueError as exc:
        return str(exc)
    if ids is not None and shutil.which("setpriv") is None:
        return "setpriv (util-linux) is missing: dgym runs as root and must drop to a user"
    why = seccomp.problem()
    if why:
        return why
    try:
        res = _run_probe(_probe_argv(exe, ids))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap does not start: {exc}"
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or [f"exit code {res.returncode}"])[0]
        return f"bwrap does not work here ({why}); unprivileged user namespaces may be off"
    return None


def _probe_argv(exe: str, ids: tuple[int, int] | None) -> list[str]:
    """A minimal sandbox running ``true`` (system folders only).

    Without ``--die-with-parent``: the probe ends on its own, and a bwrap killed as it
    starts leaves its child waiting forever for it (bubblewrap's open issue #633): this
    process killed during the probe (an app closed as it starts) left such a child behind.
    """
    system = []
    for path in allowlist.SYSTEM:
        if os.path.islink(path):
            system += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            system += ["--ro-bind", path, path]
    flags = [flag for flag in isolation(ids) if flag != "--die-with-parent"]
    return [exe, *flags, *system, "--proc", "/proc", "--dev", "/dev", "--unshare-net",
            "--", *identity.drop_argv(ids), "true"]


def _run_probe(argv: list[str],
               preexec: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    """Run a probe sandbox ``argv`` in a process group of its own, its output captured.

    Args:
        argv: the probe's command line (:func:`_probe_argv`).
        preexec: run in the child before bwrap starts (``subprocess``'s ``preexec_fn``).

    Returns:
        The finished probe (return code, stdout and stderr as text).

    Raises:
        OSError: bwrap (or ``preexec``) could not be started.
        subprocess.TimeoutExpired: it ran ``PROBE_TIMEOUT`` seconds; the whole group was
            killed then (bwrap's own children too, not bwrap alone as ``subprocess.run``
            does: they would wait forever for it).
    """
    with subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, start_new_session=True,
                          preexec_fn=preexec) as proc:
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


@functools.lru_cache(maxsize=1)
def host_view_works() -> bool:
    """Whether bwrap starts here inside :mod:`.hostview`'s read-only view of the host (cached).

    It may not, as a user, where unprivileged user namespaces are allowed to bwrap only
    (Ubuntu's AppArmor restriction): bwrap then sees the host as the user does, and a
    raced mount point can create empty files where the user may write (logged once).
    """
    ids = None if os.geteuid() != 0 else (UID_PROBE, UID_PROBE)
    own = None if os.geteuid() == 0 else (os.getuid(), os.getgid())
    preexec = functools.partial(hostview.read_only_host, [], hostview.host_mounts(), own)
    try:
        works = _run_probe(_probe_argv(shutil.which("bwrap") or "bwrap", ids),
                           preexec).returncode == 0
    except (OSError, subprocess.SubprocessError):
        works = False
    if not works:
        log.warning("bwrap runs without a read-only view of the host here (a user and mount "
                    "namespace of our own cannot be made)")
    return works


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


def open_entry(root_fd: int, rel: str) -> int | None:
    """Open the working copy's entry ``rel`` with ``O_PATH``, never following a link.

    Every component is opened ``O_PATH | O_NOFOLLOW`` relative to the previous
    one's descriptor (folders with ``O_DIRECTORY``): a component that is a
    link, missing, or not a folder ends the walk.

    Args:
        root_fd: a descriptor of the working copy (trusted).
        rel: a normalised relative POSIX path (no ``..``).

    Returns:
        A descriptor of a regular file or folder (caller closes it), or None.
    """
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None
    fd = root_fd
    try:
        for i, name in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC | (0 if last else os.O_DIRECTORY)
            try:
                nxt = os.open(name, flags, dir_fd=fd)
            except OSError:
                return None
            if fd != root_fd:
                os.close(fd)
            fd = nxt
        mode = os.fstat(fd).st_mode
        if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
            result, fd = fd, root_fd
            return result
        return None
    finally:
        if fd != root_fd:
            os.close(fd)


class BwrapTerminal(LocalTerminal):
    """Runs the episode's commands in a bubblewrap sandbox on this machine.

    Args:
        readonly: workspace-relative paths (files or folders) bound read-only.
        ignored: workspace-relative paths masked (hidden from every command).
        hidden: host paths masked as well when they lie in a folder the
            sandbox shows (e.g. the original repository's ignored files in a
            Python prefix kept inside it).
        network: keep the host's network (default: none, only a private ``lo``).
        source: the original repository (host path): never shown, except a
            Python prefix (virtualenv) inside it.
        limits: caps (:class:`.limits.Limits`, or a dict of its fields);
            defaults when None.
        overlay: the working copy's overlay (``dgym_tui.core.fs.overlay.Overlay``)
            when it is one: every command joins its mount namespace, where the
            merged view is mounted at the working copy's path, and its merged
            folder descriptor is the one bound and masked. None for a copy.
        run_as: with ``overlay`` when dgym runs as root: the uid / gid the
            overlay shows the original's files as (the commands run as them;
            nothing is handed over with ``chown``).

    Attributes:
        workdir: the working copy's host path (commands see the same path).
        scratch: a host folder, writable by the commands and private to the
            episode (outside the working copy); deleted at ``close()``.
        plugin_dir: a host folder the commands read but cannot write (shown
            read-only at the same path).
        run_as: ``(uid, gid)`` the commands run as on the host when dgym runs
            as root; None when they keep this process's own uid.

    Raises:
        TerminalError: from ``start()`` when bwrap is missing or does not work.
        ValueError: ``limits`` holds a value that is not a whole number >= 0.
    """

    def __init__(self, readonly: Iterable[str] = (), ignored: Iterable[str] = (),
                 hidden: Iterable[str] = (), network: bool = False, source: str | None = None,
                 limits: Limits | dict | None = None, overlay=None,
                 run_as: tuple[int, int] | None = None) -> None:
        super().__init__(overlay)
        self._given_ids = run_as
        self.readonly = [str(p) for p in readonly]
        self.ignored = [str(p) for p in ignored]
        self.hidden = [str(p) for p in hidden]
        self.network = network
        self.source = os.path.realpath(source) if source else None
        self.limits = limits if isinstance(limits, Limits) else Limits.from_options(limits)
        self.run_as: tuple[int, int] | None = None
        self._support = ""
        self._static: list[str] = []   # arguments fixed for the terminal's life
        self._fds: list[int] = []      # descriptors they name (open until close())
        self._readonly: list[str] = []
        self._ignored: list[str] = []
        self._root_fd = -1
        self._empty = ""  # an empty read-only file of the terminal's own (masks)

    @holding_lock
    def start(self, host_root: str) -> None:
        """Check bwrap, hand the working copy to the sandbox's user, open the mount sources.

        Raises:
            TerminalError: the working copy is missing, a path escapes it, or
                bwrap is unusable (message says what to do).
        """
        problem = bwrap_problem()
        if problem:
            raise TerminalError(f"{problem}; or use terminal='local' for trusted code")
        self._readonly, self._ignored = normalized(self.readonly), normalized(self.ignored)
        super().start(host_root)
        try:
            self.run_as = identity.sandbox_ids() if self.overlay is None else self._given_ids
            if self.run_as is not None:
                if self.overlay is None:  # an overlay shows the files as run_as's already
                    identity.chown_tree(self.workdir, *self.run_as)
                identity.chown_tree(self.scratch, *self.run_as)
            self._support = tempdirs.make("sandbox")
            os.chmod(self._support, 0o755)
            self._static = self._static_args()
        except BaseException:
            self.close()
            raise

    # -- mounts fixed for the terminal's life ------------------------------
    def _fd(self, path: str, flags: int = 0) -> str:
        """Open a trusted host path ``O_PATH`` (kept until close); its number as text."""
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC | flags)
        self._fds.append(fd)
        return str(fd)

    def _support_file(self, name: str, text: str) -> str:
        path = os.path.join(self._support, name)
        with open(path, "x", encoding="utf-8") as f:
            f.write(text)
        os.chmod(path, 0o444)
        return path

    def _static_args(self) -> list[str]:
        made: set[str] = {"/"}

        def parents(dest: str) -> list[str]:
            """``--dir`` (mode 0755) for the folders above ``dest`` not made yet."""
            if not os.path.isabs(dest):  # ("" would never reach "/")
                raise TerminalError(f"mount point {dest!r} is not an absolute path")
            out: list[str] = []
            folder = os.path.dirname(dest)
            todo = []
            while folder not in made and folder not in ("/tmp", "/dev"):
                todo.append(folder)
                folder = os.path.dirname(folder)
            for folder in reversed(todo):
                made.add(folder)
                out += ["--perms", "0755", "--dir", folder]
            return out

        args: list[str] = []
        for path in allowlist.SYSTEM:
            if os.path.islink(path):
                args += ["--symlink", os.readlink(path), path]
            elif os.path.isdir(path):
                args += ["--ro-bind-fd", self._fd(path), path]
        uid, gid = self.run_as or (os.getuid(), os.getgid())
        users, groups = allowlist.passwd_text(uid, gid, SANDBOX_USER_NAME, SANDBOX_HOME)
        generated = {"/etc/passwd": self._support_file("passwd", users),
                     "/etc/group": self._support_file("group", groups)}
        if not self.network:
            generated["/etc/hosts"] = self._support_file("hosts", allowlist.HOSTS)
        etc = allowlist.etc_entries()
        if self.network:
            etc += [p for p in ("/etc/hosts", "/etc/resolv.conf") if os.path.exists(p)]
        for path in etc:
            args += parents(path)
            if os.path.islink(path) and path != "/etc/resolv.conf":
                args += ["--symlink", os.readlink(path), path]
            else:
                args += ["--ro-bind-fd", self._fd(os.path.realpath(path)), path]
        for dest, path in generated.items():
            args += ["--ro-bind-fd", self._fd(path), dest]
        limits = self.limits
        args += ["--proc", "/proc", "--dev", "/dev"]
        for mount, size in (("/tmp", limits.tmp_size), ("/dev/shm", limits.shm_size)):
            args += ["--perms", "1777", *(["--size", str(size)] if size else []), "--tmpfs", mount]
        home = os.path.expanduser("~")
        excluded = [self.workdir, self.scratch, *([self.source] if self.source else [])]
        shown = allowlist.python_folders(os.environ, home, excluded)
        for path in shown:
            args += [*parents(path), "--ro-bind-fd", self._fd(path, os.O_DIRECTORY), path]
        self._empty = self._support_file("empty", "")
        for path in self.hidden:
            real = os.path.realpath(path)
            if not any(allowlist.within(real, s) for s in shown) \
                    or any(allowlist.within(s, real) for s in shown):
                continue  # not shown anyway, or it holds the Python that runs the tests
            if os.path.isdir(real) and not os.path.islink(real):
                args += ["--tmpfs", real, "--remount-ro", real]
            elif os.path.lexists(real):
                args += ["--ro-bind-fd", self._fd(self._empty), real]  # one descriptor per use
        if self.overlay is not None:  # the merged view (the host's workdir is an empty folder)
            self._root_fd = os.dup(self.overlay.root_fd)
            self._fds.append(self._root_fd)
        else:
            self._root_fd = int(self._fd(self.workdir, os.O_DIRECTORY | os.O_NOFOLLOW))
        args += [*parents(self.workdir), "--bind-fd", str(self._root_fd), self.workdir]
        for path, option in ((self.scratch, "--bind-fd"), (self.plugin_dir, "--ro-bind-fd")):
            args += [*parents(path), option, self._fd(path, os.O_DIRECTORY | os.O_NOFOLLOW), path]
        return args

    # -- one sandbox start -------------------------------------------------
    def _masks(self) -> tuple[list[str], list[int]]:
        """Read-only binds and masks of the working copy's entries, opened now without links."""
        args: list[str] = []
        opened: list[int] = []
        work = self.workdir
        for rel in self._readonly:
            fd = open_entry(self._root_fd, rel)
            if fd is not None:
                opened.append(fd)
                args += ["--ro-bind-fd", str(fd), os.path.join(work, rel)]
        for rel in self._ignored:
            fd = open_entry(self._root_fd, rel)
            if fd is None:
                continue  # gone, or replaced by a link: nothing of it to hide
            is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
            os.close(fd)
            path = os.path.join(work, rel)
            if is_dir:
                args += ["--tmpfs", path, "--remount-ro", path]
            else:  # bwrap closes each descriptor it binds: one per mask
                empty = os.open(self._empty, os.O_PATH | os.O_CLOEXEC)
                opened.append(empty)
                args += ["--ro-bind-fd", str(empty), path]
        return args, opened

    @contextlib.contextmanager
    def launch_spec(self, command: str, env: dict[str, str] | None = None,
                    interactive: bool = False) -> Iterator[Launch]:
        if not self._static:
            raise TerminalError("terminal not started; call start() first")
        masks, opened = self._masks()
        try:
            opened.append(seccomp.open_filter())
        except OSError as exc:
            for fd in opened:
                os.close(fd)
            raise TerminalError(f"{exc}; or use terminal='local' for trusted code") from None
        try:
            argv = ["bwrap", *isolation(self.run_as),
                    *([] if self.network else ["--unshare-net"]),
                    *([] if interactive else ["--new-session"]),
                    *self._static, *masks, "--remount-ro", "/", "--seccomp", str(opened[-1]),
                    "--chdir", self.workdir, "--", *identity.drop_argv(self.run_as),
                    *self.limits.prlimit_argv(), "sh", "-c", command]
            # bwrap creates mount points following links: it sees the host read-only
            preexec = None
            as_user = None if self.run_as is not None else (os.getuid(), os.getgid())
            join = self.overlay.enter if self.overlay is not None else None
            if host_view_works():
                writable = [os.fsencode(self.workdir), os.fsencode(self.scratch)]
                preexec = functools.partial(hostview.read_only_host, writable,
                                            hostview.host_mounts(), as_user, join)
            elif join is not None:
                preexec = functools.partial(hostview.join_only, join, as_user is not None)
            fds = (*self._fds, *opened, *(self.overlay.fds if self.overlay is not None else ()))
            yield Launch(argv, self._env(env), fds, preexec)
        finally:
            for fd in opened:
                os.close(fd)

    def _launch_key(self) -> object:
        """The working copy's read-only entries (by inode) and masked ones, as
        :meth:`_masks` would bind them now: a preloaded spare started under
        other mounts is not used."""
        key: list[tuple] = []
        for rel in self._readonly + self._ignored:
            fd = open_entry(self._root_fd, rel) if self._root_fd >= 0 else None
            if fd is None:
                key.append((rel,))
                continue
            st = os.fstat(fd)
            os.close(fd)
            key.append((rel, st.st_dev, st.st_ino, stat.S_ISDIR(st.st_mode)))
        return tuple(key)

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        return sandbox_environ(os.environ, self._defaults(), extra)

    def _launch(self, start: Callable[[], T]) -> T:
        # Started from a thread that lives as long as the program: bwrap's
        # --die-with-parent fires when the starting *thread* ends.
        return _launcher_pool().submit(start).result()

    @holding_lock
    def close(self) -> None:
        super().close()
        fds, self._fds = self._fds, []
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._static, self._root_fd = [], -1
        if self._support:
            fdtree.remove_tree(self._support)
            self._support = ""
