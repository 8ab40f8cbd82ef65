"""The adversarial suite: each test is one promise of docs/security.md, attacked from inside.

Every probe runs a real episode (``RepoEnv``) on a real sandbox in a program of
its own (``sandbox_probe.py``), started the way a person starts dgym:

- ``root``: as this test process's user when it is root (CI, containers);
- ``user``: as the unprivileged user :data:`TEST_USER` (created with
  ``useradd --system`` when missing), through ``setpriv``; for ``docker`` the
  user also gets the Docker socket's group, as a member of ``docker`` would.
  When the tests do not run as root, ``user`` is this process's own user and
  ``root`` is skipped.

Fixtures: ``prober`` (``bwrap`` and ``docker``, each as ``root`` and
``user``), ``bwrap_prober`` (``bwrap`` only, for what only it does); both
give a :class:`Prober` whose ``run(files, commands, ...)`` returns the
commands' results. ``sandbox``: ``(terminal name, image)`` for tests that
open their episodes in this process. Probes are bounded in time (each command has a timeout)
and in amount (caps are shown with small limits and small overshoots).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import pwd
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

import dgym_tui
from dgym_tui.core.fdtree import remove_tree

#: The unprivileged user the ``user`` probes run as (created when missing).
TEST_USER = "dgymtest"
#: What the host's environment holds that no sandbox may show.
HOST_SECRET = "sk-dgym-probe-7d1f3a"
PROBE = Path(__file__).with_name("sandbox_probe.py")
PACKAGE_ROOT = str(Path(dgym_tui.__file__).resolve().parent.parent)
_counter = itertools.count(1)
#: (who, terminal) -> (interpreter, PYTHONPATH) the probe program runs with.
_PYTHONS: dict[tuple[str, str], tuple[str | None, str]] = {}


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.adversarial)


@dataclasses.dataclass
class Result:
    """One command's outcome inside the sandbox."""

    exit_code: int | None
    output: str
    timed_out: bool


@dataclasses.dataclass
class Probe:
    """What one probe program reported."""

    results: list[Result]
    workdir: str
    host_root: str
    run_as: list[int] | None
    #: what ``env.step`` returned for each of ``run(steps=...)``: observation, resolved,
    #: error, done
    steps: list[dict] = dataclasses.field(default_factory=list)

    def __getitem__(self, i: int) -> Result:
        return self.results[i]


def _user_ids() -> tuple[int, int]:
    """uid / gid of :data:`TEST_USER`, creating the user when missing (root only)."""
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
                        TEST_USER], check=True, capture_output=True, timeout=60)
        entry = pwd.getpwnam(TEST_USER)
    return entry.pw_uid, entry.pw_gid


@pytest.fixture(scope="session")
def adversarial_base():
    """A folder every probe user can enter (pytest's own tmp folders are 0700)."""
    base = tempfile.mkdtemp(prefix="dgym-adv-", dir="/tmp")
    os.chmod(base, 0o755)
    yield Path(base)
    remove_tree(base)  # what probes leave: unreadable folders, chains deeper than rmtree goes


def _python_for(prefix: list[str], env: dict[str, str]) -> str | None:
    """An interpreter ``prefix`` (a user) can run dgym with; None when there is none."""
    for exe in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        try:
            res = subprocess.run([*prefix, exe, "-c", "import dgym_tui.core.env"], env=env,
                                 capture_output=True, timeout=120, cwd="/")
        except (OSError, subprocess.TimeoutExpired):
            continue
        if res.returncode == 0:
            return exe
    return None


@dataclasses.dataclass
class Prober:
    """Runs probes on ``terminal`` as ``who``."""

    terminal: str
    who: str
    base: Path
    image: str | None
    overlay: bool = False  # an overlay working copy (bwrap's option; docker's default as root)

    def _identity(self) -> tuple[list[str], int | None, int | None, dict[str, str]]:
        """(command prefix, uid, gid, host environment) of the probe program."""
        env = {"LANG": "C.UTF-8", "OPENAI_API_KEY": HOST_SECRET, "AWS_SECRET_ACCESS_KEY": HOST_SECRET,
               "PYTHONDONTWRITEBYTECODE": "1"}
        for name in ("DOCKER_HOST", "CI"):
            if name in os.environ:
                env[name] = os.environ[name]
        if self.who == "root" or os.geteuid() != 0:
            env.update(PATH=os.environ.get("PATH", "/usr/bin:/bin"),
                       HOME=os.environ.get("HOME", "/root"))
            return [], None, None, env
        uid, gid = _user_ids()
        home = self.base / "home"
        home.mkdir(exist_ok=True)
        os.chown(home, uid, gid)
        env.update(PATH="/usr/local/bin:/usr/bin:/bin", HOME=str(home), USER=TEST_USER)
        groups = "--clear-groups"
        if self.terminal == "docker":
            sock = "/var/run/docker.sock"
            if os.path.exists(sock):
                groups = f"--groups={os.stat(sock).st_gid}"
        return (["setpriv", f"--reuid={uid}", f"--regid={gid}", groups, "--"], uid, gid, env)

    def run(self, commands: list[str], files: dict[str, str] | None = None,
            options: dict | None = None, host_env: dict[str, str] | None = None,
            timeout: float = 60, setup=None, background: str = "",
            entrypoint: str = "", steps: list[dict] | None = None) -> Probe:
        """Open an episode on a repository of ``files`` and run ``commands`` in its sandbox.

        Args:
            commands: shell lines, run one after the other; ``{repo}`` stands for the
                original repository's host path.
            files: the repository (relative path -> text); ``.debugreadonly`` /
                ``.debugignore`` among them take effect.
            options: the terminal options (``limits``, ``network``, ...).
            host_env: variables added to the probe program's own environment.
            timeout: seconds per command.
            setup: called with the repository's folder before the episode opens.
            background: a command started (``spawn``) before ``commands``, ended after.
            entrypoint: the episode's entrypoint (default ``true``).
            steps: tool calls (``{"name", "arguments"}``) run after ``commands``.
        """
        prefix, uid, gid, env = self._identity()
        if self.terminal == "bwrap":  # both kinds of working copy, whatever the default
            options = {**(options or {}), "overlay": self.overlay}
        folder = self.base / f"probe-{next(_counter)}"
        repo = folder / "repo"
        repo.mkdir(parents=True)
        for rel, text in (files or {"app.py": "x = 1\n"}).items():
            path = repo / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        if setup is not None:
            setup(repo)
        if uid is not None:
            subprocess.run(["chown", "-R", f"{uid}:{gid}", str(folder)], check=True, timeout=60)
        os.chmod(folder, 0o755)
        commands = [c.replace("{repo}", str(repo)) for c in commands]
        spec = folder / "spec.json"
        spec.write_text(json.dumps({"repo": str(repo), "terminal": self.terminal,
                                    "image": self.image, "options": options or {},
                                    "commands": commands, "timeout": timeout,
                                    "background": background, "entrypoint": entrypoint,
                                    "steps": steps or []}))
        os.chmod(spec, 0o644)
        env.update(host_env or {})
        key = (self.who, self.terminal)
        if key not in _PYTHONS:
            env["PYTHONPATH"] = PACKAGE_ROOT
            python = _python_for(prefix, env)
            if python is None:  # e.g. this interpreter lives under /root: the system's, with
                paths = sysconfig.get_paths()  # this environment's packages
                env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT, paths["purelib"],
                                                     paths["platlib"]])
                python = _python_for(prefix, env)
            _PYTHONS[key] = (python, env["PYTHONPATH"])
        python, env["PYTHONPATH"] = _PYTHONS[key]
        if python is None:
            pytest.skip(f"no Python that {self.who} can run dgym with")
        res = subprocess.run([*prefix, python, str(PROBE), str(spec)], env=env, cwd="/",
                             capture_output=True, text=True,
                             timeout=120 + timeout * (len(commands) + 1))
        if res.returncode != 0 or not res.stdout.strip():
            pytest.fail(f"the probe program failed ({res.returncode}):\n{res.stderr[-3000:]}")
        report = json.loads(res.stdout.strip().splitlines()[-1])
        return Probe([Result(**r) for r in report["results"]], report["workdir"],
                     report["host_root"], report["run_as"], report.get("steps", []))


    def host_folder(self) -> Path:
        """A new host folder outside every sandbox that the probe's user could write."""
        folder = Path(tempfile.mkdtemp(prefix="host-", dir=self.base))
        os.chmod(folder, 0o755)
        if self.who == "user" and os.geteuid() == 0:
            uid, gid = _user_ids()
            os.chown(folder, uid, gid)
        return folder


def _prober(request, terminal: str, who: str) -> Prober:
    overlay = terminal == "bwrap-overlay" or (terminal == "docker" and who == "root")
    terminal = "bwrap" if terminal == "bwrap-overlay" else terminal
    if who == "root" and os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    image = None
    if terminal == "docker":
        image = request.getfixturevalue("docker_ready")
    else:
        request.getfixturevalue("bwrap_ready")
    return Prober(terminal, who, request.getfixturevalue("adversarial_base"), image, overlay)


_BOTH = [pytest.param((t, w), id=f"{t}-{w}") for t in ("bwrap", "bwrap-overlay")
         for w in ("root", "user")] + [
    pytest.param(("docker", w), id=f"docker-{w}", marks=pytest.mark.docker)
    for w in ("root", "user")]


@pytest.fixture(params=_BOTH)
def prober(request) -> Prober:
    """Probes on ``bwrap`` and ``docker``, each started as root and as a user."""
    return _prober(request, *request.param)


@pytest.fixture(params=[(t, w) for t in ("bwrap", "bwrap-overlay") for w in ("root", "user")],
                ids=lambda p: f"{p[0]}-{p[1]}")
def bwrap_prober(request) -> Prober:
    """Probes on ``bwrap`` (a copy, and an overlay working copy), started as root and as a user."""
    return _prober(request, *request.param)


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox(request) -> tuple[str, str | None]:
    """``(terminal name, Docker image or None)`` for each sandbox; skips where one is unusable."""
    if request.param == "docker":
        return request.param, request.getfixturevalue("docker_ready")
    request.getfixturevalue("bwrap_ready")
    return request.param, None


@pytest.fixture(params=["root", "user"])
def local_prober(request) -> Prober:
    """Probes on the ``local`` terminal (not a sandbox) with its default working copy, an
    overlay, started as root and as a user."""
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("the tests do not run as root")
    return Prober("local", request.param, request.getfixturevalue("adversarial_base"), None,
                  overlay=True)
