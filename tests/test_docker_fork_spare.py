"""Docker forks adopt a spare container started after the episode's last fork (real Docker).

A fork's working copy is moved into a container that already runs
(``dgym_tui.core.terminals.mountmove``) instead of one being created; a spare
that is gone, or anything unexpected, gives a fork that creates its container
as before. Root only for the adoption (moving a mount needs it); the fallback
is tested too.
"""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dgym_tui import ToolCall
from dgym_tui.core.terminals.docker import SPARES_KEPT

pytestmark = pytest.mark.docker

CODE = "def add(a, b):\n    return a - b\n"
TESTS = "from code import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a spare is adopted when dgym is root")


def _ours() -> dict[str, object]:
    """This process's containers (running or not), by id."""
    from dgym_tui.core.terminals.docker import LABEL_PID, get_client

    found = get_client().containers.list(all=True, filters={"label": f"{LABEL_PID}={os.getpid()}"})
    return {c.id: c for c in found}


def _wait_for_spare(known: set[str], timeout: float = 60.0) -> str | None:
    """The id of a running container of ours not in ``known`` (a spare), waiting for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for cid, container in _ours().items():
            if cid not in known and container.status == "running":
                return cid
        time.sleep(0.1)
    return None


def _none_left(timeout: float = 60.0) -> bool:
    """True once no container of ours is left (a spare still starting at its episode's
    close is removed when its start ends)."""
    deadline = time.monotonic() + timeout
    while _ours():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _ready(env, count: int = SPARES_KEPT, timeout: float = 60.0) -> list[str]:
    """The ids of the spares ``env`` keeps ready, once there are ``count`` (or the timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(env.terminal._fork_spares) < count:
        time.sleep(0.05)
    return [spare.container.id for spare in env.terminal._fork_spares]


def _created(container) -> float:
    """When the daemon created ``container`` (seconds since the epoch)."""
    container.reload()
    stamp = container.attrs["Created"].rstrip("Z")
    whole, _, frac = stamp.partition(".")
    when = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.UTC)
    return when.timestamp() + float(f"0.{frac or 0}")


def _run(env, line: str) -> str:
    res = env.terminal.run(line, timeout=30)
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture
def episode(make_repo, make_env, docker_ready, fast_pytest):
    """A reset docker episode with a change made, forked once (so a spare is starting)."""
    repo = make_repo({"code.py": CODE, "test_code.py": TESTS})
    env = make_env(repo, terminal="docker", entrypoint=f"{fast_pytest} test_code.py")
    env.reset()
    r = env.step(ToolCall(name="rewrite", arguments={
        "path": "code.py", "start": 1, "end": 1, "new_code": "def add(a, b):  # one\n"}))
    assert not r.error
    env.fork().close()
    return env


@needs_root
def test_a_fork_adopts_the_spare_started_after_the_last_fork(episode):
    assert _wait_for_spare({episode.terminal.container.id}) is not None, \
        "no spare container started after the first fork"
    spares = _ready(episode, 1)
    called = time.time()
    twin = episode.fork()
    try:
        assert twin.terminal.container.id == spares[0]
        assert _created(twin.terminal.container) < called  # created before the fork call
        assert _run(twin, "cat code.py") == "def add(a, b):  # one\n    return a - b\n"
        assert twin.step(ToolCall(name="eval", arguments={})).score == 0  # its tests run there
    finally:
        twin.close()


@needs_root
def test_the_adopting_twin_sees_exactly_its_files_and_not_the_parents_later_changes(episode):
    assert _wait_for_spare({episode.terminal.container.id}) is not None
    twin = episode.fork()
    try:
        assert twin.terminal.started_from_spare
        assert sorted(_run(twin, "ls -A").split()) == ["code.py", "test_code.py"]
        assert _run(twin, "stat -c %u code.py").strip() == str(twin.terminal.run_as[0])
        r = episode.step(ToolCall(name="rewrite", arguments={
            "path": "code.py", "start": 1, "end": 1, "new_code": "def add(a, b):  # parent\n"}))
        assert not r.error
        assert "# parent" not in _run(twin, "cat code.py")
        _run(twin, "echo twin > twin.txt")
        assert not (episode.workspace.root / "twin.txt").exists()
        assert twin.workspace.read_text("twin.txt") == "twin\n"
        assert twin.patch() != episode.patch()
        with open("/proc/self/mountinfo", encoding="utf-8") as f:
            host_mounts = f.read()
        assert str(twin.workspace.folder) not in host_mounts  # mounted in the container alone
        assert "dgym-sandbox-" not in host_mounts  # the move did not come back to the host
    finally:
        twin.close()


@needs_root
def test_closing_both_removes_the_parent_the_twin_and_the_spares(episode):
    assert _wait_for_spare({episode.terminal.container.id}) is not None
    first = _ready(episode, 1)[0]
    twin = episode.fork()
    assert twin.terminal.container.id == first
    spares = _ready(episode)  # the parent's next spares
    assert len(spares) == SPARES_KEPT and first not in spares
    assert set(_ours()) == {episode.terminal.container.id, first, *spares}
    twin.close()
    episode.close()
    assert _ours() == {}  # no spare was starting: all removed by close()


@needs_root
@pytest.mark.parametrize("how", ["kill", "remove"])
def test_a_spare_that_died_before_the_fork_gives_a_working_fork(episode, how):
    assert _wait_for_spare({episode.terminal.container.id}) is not None
    spares = _ready(episode)
    assert len(spares) == SPARES_KEPT
    for cid in spares:
        container = _ours()[cid]
        if how == "kill":
            container.kill()
        else:
            container.remove(force=True)
    twin = episode.fork()
    try:
        assert not twin.terminal.started_from_spare
        assert twin.terminal.container.id not in (*spares, episode.terminal.container.id)
        assert _run(twin, "cat code.py") == "def add(a, b):  # one\n    return a - b\n"
        assert not twin.step(ToolCall(name="rewrite", arguments={
            "path": "code.py", "start": 2, "end": 2, "new_code": "    return a + b\n"})).error
        assert twin.step(ToolCall(name="eval", arguments={})).resolved
    finally:
        twin.close()
    assert spares[0] not in _ours()  # the dead spare the fork took was removed
    episode.close()
    assert _none_left()  # the other one with its episode, and the one starting after it


@needs_root
def test_the_mount_goes_only_to_the_spares_init_and_its_placeholder(episode, tmp_path,
                                                                    request):
    from dgym_tui.core.terminals import mountmove

    assert _wait_for_spare({episode.terminal.container.id}) is not None
    spare_id = _ready(episode, 1)[0]
    spare = episode.terminal._fork_spares[0]
    spare.container.reload()
    pid = spare.container.attrs["State"]["Pid"]
    source = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)  # nothing of it may arrive
    request.addfinalizer(lambda: os.close(source))
    placeholder = os.path.join(spare._support, "workdir")
    with pytest.raises(OSError, match="not the init"):  # a process of the host
        mountmove.move_into(source, spare_id, os.getpid(), "/workspace", placeholder)
    with pytest.raises(OSError, match="not the init"):  # another container's init
        mountmove.move_into(source, episode.terminal.container.id, pid, "/workspace",
                            placeholder)
    with pytest.raises(OSError, match="placeholder"):  # a folder other than the placeholder
        mountmove.move_into(source, spare_id, pid, "/tmp", placeholder)
    (tmp_path / "evil").symlink_to("/etc")
    with pytest.raises(OSError):  # a read-only path reached through a link
        mountmove.move_into(source, spare_id, pid, "/workspace", placeholder, ["evil/passwd"])
    with pytest.raises(OSError):
        mountmove.move_into(source, spare_id, pid, "/workspace", placeholder, ["../x"])
    out = spare.container.exec_run(["sh", "-c", "find /workspace /tmp -mindepth 1 | wc -l"])
    assert out.output.decode().strip() == "0"  # nothing was mounted anywhere


@needs_root
@pytest.mark.parametrize("mode", ["eager", "off", False])
def test_fork_spare_option_eager_serves_the_first_fork_and_off_never_starts_one(
        make_repo, make_env, docker_ready, fast_pytest, mode):
    repo = make_repo({"code.py": CODE, "test_code.py": TESTS})
    env = make_env(repo, terminal="docker", entrypoint=f"{fast_pytest} test_code.py",
                   terminal_options={"fork_spare": mode})
    mode = mode or "off"  # False: what YAML makes of a bare `off`
    env.reset()
    spare = _wait_for_spare({env.terminal.container.id}, timeout=60 if mode == "eager" else 2)
    assert (spare is not None) == (mode == "eager")
    _ready(env, 1, timeout=60 if mode == "eager" else 0)
    twin = env.fork()
    try:
        assert twin.terminal.started_from_spare == (mode == "eager")
        assert _run(twin, "cat code.py") == CODE
        if mode == "off":
            time.sleep(1)
            assert set(_ours()) == {env.terminal.container.id, twin.terminal.container.id}
            assert env.terminal._fork_spares == []
    finally:
        twin.close()


@needs_root
def test_a_fork_of_a_task_with_read_only_files_adopts_a_spare_and_keeps_them_read_only(
        make_repo, make_env, docker_ready, fast_pytest):
    repo = make_repo({"code.py": CODE, "tests/test_code.py": "import sys\nsys.path.insert(0, '.')\n"
                      + TESTS, ".debugreadonly": "tests/\n"})
    env = make_env(repo, terminal="docker", entrypoint=f"{fast_pytest} tests")
    env.reset()
    env.fork().close()
    _ready(env, 1)
    twin = env.fork()
    try:
        assert twin.terminal.started_from_spare
        r = twin.step(ToolCall(name="eval", arguments={}))
        assert r.score == 0 and "1 failed" in r.observation  # the tests run there
        res = twin.terminal.run("echo x >> tests/test_code.py", timeout=30)
        assert res.exit_code != 0 and "Read-only file system" in res.output
        _run(twin, "echo '# x' >> code.py")  # the rest stays writable
        assert twin.workspace.read_text("tests/test_code.py") == \
            env.workspace.read_text("tests/test_code.py")
    finally:
        twin.close()


@needs_root
def test_an_episode_closed_or_ended_while_its_spare_starts_leaves_no_container(
        make_repo, episode, tmp_path):
    twin = episode.fork()  # the parent starts its next spares now
    twin.close()
    episode.close()  # does not wait for the spare starting; its thread removes it
    assert _none_left()

    script = tmp_path / "exit.py"  # a process that exits right after a fork, closing nothing
    repo = make_repo({"code.py": CODE, "test_code.py": TESTS}, name="exiting")
    script.write_text(
        "import os, sys\n"
        "from dgym_tui import RepoEnv\n"
        f"env = RepoEnv({str(repo)!r}, entrypoint='true', terminal='docker',"
        f" image={episode.image!r})\n"
        "env.reset()\n"
        "env.fork().close()\n"
        "twin = env.fork()\n"
        "print(os.getpid(), flush=True)\n"
        "sys.exit(0)\n")
    res = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": PACKAGE_ROOT})
    assert res.returncode == 0, res.stderr[-2000:]
    from dgym_tui.core.terminals.docker import LABEL_PID, get_client

    pid = res.stdout.split()[-1]
    left = get_client().containers.list(all=True, filters={"label": f"{LABEL_PID}={pid}"})
    assert left == []  # the exit handlers removed the episode, its fork and its spares
