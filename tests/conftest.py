"""Shared fixtures: terminal kinds, the sandbox image, small repositories on disk.

- ``terminal_kind``: parametrized over ``"local"`` and ``"docker"``. The docker
  variant carries ``pytest.mark.docker``; it skips when the daemon or the
  sandbox image is not reachable, except under ``CI=true`` where it fails.
- ``sandbox_image``: the image tag (env ``DGYM_TEST_IMAGE``, default
  ``dgym-tui/sandbox:test``).
- ``fixture_image``: the image of the offline SWE-bench fixture instance, built
  once (cached by tag); skips without Docker, fails under ``CI=true``.
- ``make_repo(files) -> Path``: writes ``{relative path: text}`` into a fresh
  folder under ``tmp_path``.
- ``open_repo(path, policy, mode, ...) -> Session``: an episode on a folder, opened
  like the front ends open it (replayable header).
- ``make_env(path, **kwargs) -> RepoEnv``: a ``RepoEnv`` on ``terminal_kind``,
  closed at the end of the test.
- ``calc_session(policy, mode, out, **env_kwargs) -> Session``: an app test's
  episode on ``calc_repo``.
- ``no_leaked_processes`` (autouse, app tests ``test_tui_*.py``): fails the test
  that leaves a child process of pytest running (e.g. a pdb session).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import psutil
import pytest
from process_helpers import alive

# A suite started in the background by a non-interactive shell (`bash .ci/run &`, nohup)
# inherits SIGINT ignored, and so would every process it starts: the tests of Ctrl-C
# (the runner's interrupt, the bash tool's and pdb's timeouts) would test nothing real.
# Python's own handler, as in a terminal.
signal.signal(signal.SIGINT, signal.default_int_handler)

#: The scripted LLM server fixture ``llm_server`` (tests/llm_stub.py) for every test.
pytest_plugins = ["llm_stub"]

#: A pytest command that starts fast: no third-party plugins, no cache folder.
FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"


#: Seconds an app test's child processes get to end after its teardown.
LEAK_GRACE = 3.0


@pytest.fixture(autouse=True)
def no_leaked_processes(request):
    """Fail an app test (``test_tui_*.py``) that leaves a process it started running.

    The processes started during the test (children of pytest, at any depth)
    get :data:`LEAK_GRACE` seconds after the test's teardown to end; the ones
    still running are killed (so later tests are not disturbed) and named in
    the failure. Other test modules are not checked: their module- and
    session-scoped fixtures keep processes across tests on purpose.
    """
    if not request.module.__name__.startswith("test_tui_"):
        yield
        return
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    yield
    deadline = time.monotonic() + LEAK_GRACE
    while True:
        left = [p for p in me.children(recursive=True) if p.pid not in before and alive(p.pid)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if left:
        names = []
        for proc in left:
            try:
                names.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
                proc.kill()
            except psutil.NoSuchProcess:
                continue
        pytest.fail(f"the test left {len(left)} process(es) running:\n" + "\n".join(names))


def _docker_problem(image: str) -> str | None:
    """Return why Docker tests cannot run (one line), or None when they can."""
    try:
        from dgym_tui.core.terminals import docker as dockermod
        from dgym_tui.core.terminals.base import TerminalError
    except ImportError as exc:
        return f"DockerTerminal not importable: {exc}"
    try:
        dockermod.get_client().images.get(image)
    except TerminalError as exc:
        return str(exc)
    except Exception as exc:  # noqa: BLE001  image missing, API error, ...
        return f"image {image} not usable: {exc}"
    return None


@pytest.fixture(scope="session")
def sandbox_image() -> str:
    """Tag of the sandbox image the Docker tests use."""
    return os.environ.get("DGYM_TEST_IMAGE", "dgym-tui/sandbox:test")


@pytest.fixture(scope="session")
def docker_ready(sandbox_image) -> str:
    """Skip (fail under CI=true) unless the Docker daemon and the sandbox image are usable."""
    problem = _docker_problem(sandbox_image)
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Docker tests cannot run under CI: {problem}")
        pytest.skip(problem)
    return sandbox_image


@pytest.fixture(scope="session")
def fixture_image() -> str:
    """Build (once, cached by tag) the image of our offline SWE-bench instance; skip without Docker."""
    from dgym_tui.benchmarks.swebench import SWEBenchError, build_fixture_image
    from dgym_tui.core.terminals.base import TerminalError

    try:
        return build_fixture_image()
    except (TerminalError, SWEBenchError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"SWE-bench fixture image cannot be built under CI: {exc}")
        pytest.skip(str(exc))


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def terminal_kind(request) -> str:
    """``"local"`` or ``"docker"``; the docker variant needs a daemon and the image."""
    if request.param == "docker":
        request.getfixturevalue("docker_ready")
    return request.param


@pytest.fixture(scope="session")
def bwrap_ready() -> None:
    """Skip (fail under CI=true) unless bubblewrap works on this machine."""
    from dgym_tui.core.terminals.bwrap import bwrap_problem

    problem = bwrap_problem()
    if problem:
        if os.environ.get("CI") == "true":
            pytest.fail(f"bwrap tests cannot run under CI: {problem}")
        pytest.skip(problem)


#: ``every_terminal``'s name for bwrap with an overlay working copy (``make_env`` turns it
#: into ``terminal="bwrap", terminal_options={"overlay": True}``; its "bwrap" is the copy).
BWRAP_OVERLAY = "bwrap-overlay"


@pytest.fixture(params=["local", "bwrap", BWRAP_OVERLAY,
                        pytest.param("docker", marks=pytest.mark.docker)])
def every_terminal(request) -> str:
    """``"local"``, ``"bwrap"``, ``"bwrap-overlay"`` or ``"docker"``: for probes that must hold
    on every terminal (and both kinds of bwrap working copy).

    bwrap skips only where it is missing (fails under CI=true); docker as in ``terminal_kind``.
    """
    if request.param == "docker":
        request.getfixturevalue("docker_ready")
    if request.param in ("bwrap", BWRAP_OVERLAY):
        request.getfixturevalue("bwrap_ready")
    return request.param


@pytest.fixture
def fast_pytest() -> str:
    """The entrypoint prefix tests use to run pytest quickly (append test files)."""
    return FAST_PYTEST


@pytest.fixture
def make_repo(tmp_path):
    """Return ``make(files: dict[str, str], name="repo") -> Path`` writing a small repo."""

    def make(files: dict[str, str], name: str = "repo") -> Path:
        root = tmp_path / name
        root.mkdir(parents=True, exist_ok=True)
        for rel, text in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return root

    return make


@pytest.fixture
def make_env(request, sandbox_image):
    """Return ``make(path, **kwargs) -> RepoEnv`` on the test's ``terminal_kind`` / ``every_terminal``.

    Without either parameter the local terminal is used. Every
    environment made is closed when the test ends.
    """
    from dgym_tui.core.env import RepoEnv

    kind = "local"
    for name in ("terminal_kind", "every_terminal"):
        if name in request.fixturenames:
            kind = request.getfixturevalue(name)
    made: list[RepoEnv] = []

    def make(path, **kwargs) -> RepoEnv:
        if "terminal" not in kwargs and kind == "bwrap":  # the copy; "bwrap-overlay" the overlay
            kwargs["terminal_options"] = {"overlay": False, **kwargs.get("terminal_options", {})}
        kwargs.setdefault("terminal", kind)
        if kwargs["terminal"] == BWRAP_OVERLAY:
            kwargs["terminal"] = "bwrap"
            kwargs["terminal_options"] = {**kwargs.get("terminal_options", {}), "overlay": True}
        if kwargs["terminal"] == "docker":
            kwargs.setdefault("image", sandbox_image)
        env = RepoEnv(path, **kwargs)
        made.append(env)
        return env

    yield make
    for env in made:
        env.close()


@pytest.fixture
def open_repo():
    """Return ``open(path, policy=None, mode="human", *, trajectory=None, name=None,
    max_steps=50, entrypoint=None, **overrides) -> Session``: an episode on a folder,
    built the way the front ends build it (``episode.open_session`` on the folder's
    ``local`` task), so its trajectory can be replayed and forked. Every
    environment is closed when the test ends.
    """
    from dgym_tui.benchmarks.local import folder_task
    from dgym_tui.launch.open import open_session

    opened = []

    def open_(path, policy=None, mode="human", *, trajectory=None, name=None, max_steps=50,
              entrypoint=None, **overrides):
        task = folder_task(path, entrypoint=entrypoint, name=name)
        session = open_session(task, policy, mode, max_steps, trajectory, overrides)
        opened.append(session.env)
        return session

    yield open_
    for env in opened:
        env.close()


@pytest.fixture
def calc_repo(make_repo) -> Path:
    """The app tests' small repository (tests/tui_helpers.py): ``average`` divides by
    one too few, so test_single fails inside calc.py."""
    from tui_helpers import CALC, TESTS

    return make_repo({"calc.py": CALC, "test_calc.py": TESTS})


@pytest.fixture
def calc_session(calc_repo, tmp_path):
    """Return ``make(policy=None, mode="human", out=None, *, task_name="", **env_kwargs)
    -> Session``: a live episode on ``calc_repo`` (the app tests' entrypoint, ``env_kwargs``
    for the ``RepoEnv``) recording to ``out`` (default ``t.jsonl`` in ``tmp_path``); not
    started. The app under test closes it."""
    from tui_helpers import ENTRYPOINT

    from dgym_tui.core.env import RepoEnv
    from dgym_tui.episode.session import Session

    def make(policy=None, mode="human", out=None, *, task_name="", **env_kwargs):
        env = RepoEnv(calc_repo, **{"entrypoint": ENTRYPOINT, **env_kwargs})
        return Session(env, policy, mode=mode, trajectory_path=out or tmp_path / "t.jsonl",
                       task_name=task_name)

    return make


@pytest.fixture
def tiny(monkeypatch, tmp_path):
    """The benchmark ``tiny`` (tests/scripted.py: two one-bug tasks) registered; its folder."""
    from dgym_tui.benchmarks import REGISTRY

    monkeypatch.setitem(REGISTRY, "tiny", "scripted:TinyBenchmark")
    return tmp_path / "tasks"
