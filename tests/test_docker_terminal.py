"""DockerTerminal against a real Docker daemon and the sandbox image.

Needs the daemon and the image built by scripts/setup_docker.sh. Without
them the tests skip, except under CI=true, where they fail (conftest's
``docker_ready``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc

import pexpect
import pytest

from dgym_tui.core.terminals import TerminalError, cleanup
from dgym_tui.core.terminals import docker as dockermod
from dgym_tui.core.terminals.docker import DockerTerminal

IMAGE = os.environ.get("DGYM_TEST_IMAGE", "dgym-tui/sandbox:test")


@pytest.fixture
def image(docker_ready) -> str:
    """The sandbox image tag (conftest's ``docker_ready`` skips, or fails under CI=true)."""
    return docker_ready


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "app.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests" / "test_app.py").write_text(
        "from app import add\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    return root


@pytest.fixture
def term(image, repo):
    t = DockerTerminal(image, readonly=["tests/test_app.py"])
    t.start(str(repo))
    yield t
    t.close()


def _processes(term: DockerTerminal) -> list[str]:
    """Command lines of every process in the container (no procps in the image)."""
    res = term.run("for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done")
    return [line for line in res.output.splitlines() if line.strip()]


def _container_exists(cid: str) -> bool:
    from docker.errors import NotFound

    try:
        dockermod.get_client().containers.get(cid)
        return True
    except NotFound:
        return False



@pytest.mark.docker
def test_run_output_exit_code_workdir_env(term, repo):
    res = term.run("pwd; echo out; echo err >&2; echo $GREETING; exit 3", env={"GREETING": "hi"})
    assert res.exit_code == 3 and not res.timed_out
    assert res.output.splitlines() == ["/workspace", "out", "err", "hi"]
    assert term.to_relative("/workspace/app.py") == "app.py"

    # Writes to ordinary files reach the host working copy, and back.
    assert term.run("echo 'x = 1' > new.py").exit_code == 0
    assert (repo / "new.py").read_text() == "x = 1\n"
    (repo / "host.txt").write_text("from host\n")
    assert term.run("cat host.txt").output == "from host\n"


@pytest.mark.docker
def test_pytest_runs_in_the_container(term):
    res = term.run("python -m pytest -q", timeout=60)
    assert res.exit_code == 1
    assert "1 failed" in res.output and "assert -1 == 5" in res.output


@pytest.mark.docker
def test_timeout_kills_the_process_group(term):
    start = time.monotonic()
    res = term.run("echo started; sleep 300 & sleep 301", timeout=1.0)
    elapsed = time.monotonic() - start
    assert res.timed_out and res.exit_code is None
    assert "started" in res.output
    assert elapsed < 5
    left = [p for p in _processes(term) if "sleep 30" in p and "/proc" not in p]
    assert left == []


@pytest.mark.docker
def test_output_of_many_small_writes_arrives_intact(term):
    script = "import sys\nfor i in range(50000):\n    sys.stdout.write(f'{i}\\n'); sys.stdout.flush()\n"
    res = term.run(f"python -c \"{script}\"", max_output=1 << 20, timeout=60)
    assert res.exit_code == 0 and res.truncated_bytes == 0
    assert res.output == "".join(f"{i}\n" for i in range(50000))


@pytest.mark.docker
def test_output_read_across_the_timeout_stays_well_formed(term):
    res = term.run("while :; do echo tick; sleep 0.01; done", timeout=1.0)
    assert res.timed_out
    lines = res.output.splitlines()
    assert len(lines) > 10
    assert set(lines) == {"tick"}


@pytest.mark.docker
def test_close_from_another_thread_ends_a_running_command(image, repo):
    import threading

    t = DockerTerminal(image)
    t.start(str(repo))
    outcome = {}

    def run():
        try:
            outcome["result"] = t.run("echo started; sleep 60", timeout=120)
        except TerminalError as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(1.0)
    t.close()
    worker.join(timeout=20)
    assert not worker.is_alive()
    if "result" in outcome:
        assert outcome["result"].exit_code != 0 and "started" in outcome["result"].output
    else:
        assert "reset the environment" in str(outcome["error"])


@pytest.mark.docker
def test_large_output_is_truncated_with_bounded_memory(term):
    tracemalloc.start()
    try:
        res = term.run("head -c 10000000 /dev/zero | tr '\\0' x; echo; echo THE-END",
                       max_output=65536, timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res.exit_code == 0
    total = 10_000_000 + len("\nTHE-END\n")
    assert res.truncated_bytes == total - 65536
    assert res.output.startswith("x" * 1000)
    assert res.output.rstrip().endswith("THE-END")
    assert "output truncated" in res.output
    assert len(res.output) < 65536 + 300
    assert peak < 4 * 1024 * 1024, f"peak Python memory {peak} bytes while reading 10 MB"


@pytest.mark.docker
def test_container_memory_limit(image, repo):
    with DockerTerminal(image, mem_limit="64m") as t:
        t.start(str(repo))
        res = t.run("python -c 'x = bytearray(300 * 1024 * 1024); print(len(x))'", timeout=60)
        assert res.exit_code != 0
        assert "314572800" not in res.output
        ok = t.run("python -c 'x = bytearray(8 * 1024 * 1024); print(len(x))'")
        assert ok.exit_code == 0 and ok.output.strip() == "8388608"


@pytest.mark.docker
def test_limits_labels_and_removal_at_close(image, repo):
    t = DockerTerminal(image, mem_limit="256m", pids_limit=64, cpus=1.0)
    t.start(str(repo))
    cid = t.container.id
    assert t in cleanup.live()
    attrs = dockermod.get_client().api.inspect_container(cid)
    host = attrs["HostConfig"]
    assert host["Memory"] == 256 * 1024 * 1024
    assert host["PidsLimit"] == 64
    assert host["NanoCpus"] == 1_000_000_000
    assert host["NetworkMode"] == "none"
    assert attrs["Config"]["Labels"][dockermod.LABEL] == "1"
    assert attrs["Config"]["Labels"][dockermod.LABEL_PID] == str(os.getpid())
    t.close()
    assert not _container_exists(cid)
    assert t not in cleanup.live()
    t.close()  # idempotent
    with pytest.raises(TerminalError, match="not started"):
        t.run("true")


@pytest.mark.docker
def test_readonly_files_cannot_be_changed_from_inside(term, repo):
    original = (repo / "tests" / "test_app.py").read_text()
    attempts = [
        "echo hacked > tests/test_app.py",
        "rm tests/test_app.py",
        "mv tests/test_app.py tests/moved.py",
        "python -c \"open('tests/test_app.py', 'w').write('x')\"",
        "python -c \"import os; os.truncate('tests/test_app.py', 0)\"",
        "cp app.py tests/test_app.py",
    ]
    for cmd in attempts:
        res = term.run(cmd)
        assert res.exit_code != 0, f"{cmd!r} succeeded: {res.output}"
    assert (repo / "tests" / "test_app.py").read_text() == original
    assert term.run("cat tests/test_app.py").output == original
    # Other files of the same folder stay writable.
    assert term.run("echo ok > tests/notes.txt").exit_code == 0
    assert (repo / "tests" / "notes.txt").read_text() == "ok\n"


@pytest.mark.docker
def test_files_made_in_the_container_go_back_to_the_owner(image, repo):
    t = DockerTerminal(image, user="root")
    t.owner = (4321, 4321)  # as if a non-root user ran the episode
    t.start(str(repo))
    assert t.run("mkdir -p .cache && echo x > .cache/made.txt").exit_code == 0
    assert (repo / ".cache" / "made.txt").stat().st_uid == 0
    t.close()
    assert (repo / ".cache" / "made.txt").stat().st_uid == 4321
    assert (repo / ".cache").stat().st_gid == 4321


@pytest.mark.docker
def test_readonly_paths_must_stay_inside(image, repo):
    t = DockerTerminal(image, readonly=["../outside.txt"])
    with pytest.raises(TerminalError, match="relative to the working copy"):
        t.start(str(repo))
    assert t.container is None
    # its scratch, plugin and support folders were deleted (each refused start left three)
    assert (t.scratch, t.plugin_dir, t._support) == ("", "", "")


@pytest.mark.docker
def test_readonly_symlinks_never_expose_host_files(image, repo, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret\n")
    (repo / "escape.txt").symlink_to(secret)
    (repo / "inner.txt").symlink_to(repo / "app.py")
    with DockerTerminal(image, readonly=["escape.txt", "inner.txt", "missing.txt"]) as t:
        t.start(str(repo))
        mounts = {m["Destination"]: m for m in t.container.attrs["Mounts"]}
        # the link is replaced by its target (and the private scratch and plugin folders)
        assert set(mounts) == {"/workspace", "/workspace/app.py", dockermod.SCRATCH_MOUNT,
                               dockermod.PLUGIN_MOUNT}
        assert mounts[dockermod.PLUGIN_MOUNT]["RW"] is False
        assert mounts["/workspace/app.py"]["RW"] is False
        assert "host secret" not in t.run("cat escape.txt").output
        assert t.run("echo x >> app.py").exit_code != 0


@pytest.mark.docker
def test_network_is_off_by_default(term, image, repo):
    assert term.run("ls /sys/class/net").output.split() == ["lo"]
    with DockerTerminal(image, network=True) as t:
        t.start(str(repo))
        assert len(t.run("ls /sys/class/net").output.split()) > 1


@pytest.mark.docker
def test_spawn_python_interactive_round_trip(term):
    child = term.spawn("python -q -i")
    assert isinstance(child, pexpect.spawnbase.SpawnBase)
    child.expect(">>> ", timeout=20)
    child.sendline("x = 6 * 7")
    child.expect(">>> ")
    child.sendline("print(x)")
    child.expect(">>> ")
    assert child.before.strip() == "42"  # no echo of the command sent
    assert child.isalive()
    child.close(force=True)
    assert not child.isalive()
    assert not any("python -q -i" in p and "/proc" not in p for p in _processes(term))


@pytest.mark.docker
def test_spawn_pdb_close_and_respawn(term):
    for _ in range(2):  # the pdb tool closes a session and spawns a new one
        child = term.spawn("python -m pdb -m pytest -q -s tests/test_app.py")
        child.expect(r"\(Pdb\) ", timeout=30)
        child.sendline("b app.py:2")
        child.expect(r"\(Pdb\) ")
        assert "Breakpoint 1 at /workspace/app.py:2" in child.before
        child.sendline("c")
        child.expect(r"\(Pdb\) ", timeout=30)
        assert "/workspace/app.py(2)add()" in child.before
        child.sendline("p a, b")
        child.expect(r"\(Pdb\) ")
        assert "(2, 3)" in child.before
        child.close(force=True)
        assert not child.isalive()
    assert not any("pdb" in p and "/proc" not in p for p in _processes(term))


@pytest.mark.docker
def test_closing_a_session_kills_its_whole_group_without_an_exec(term, monkeypatch):
    """A pdb restart closes the old session first: its process group (here a shell and
    two sleeps) is killed from the host, not by a second exec in the container (~70 ms of
    the restart); nothing of it is left. Where the host may not signal the container's
    processes (not root here), the exec still does it."""
    child = term.spawn("sleep 4711 & sleep 4712")
    deadline = time.monotonic() + 10
    while sum("sleep 471" in p for p in _processes(term)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    api = term._client.api
    made = []
    real_create = api.exec_create

    def counting(*args, **kwargs):
        made.append(args)
        return real_create(*args, **kwargs)

    monkeypatch.setattr(api, "exec_create", counting)
    child.close(force=True)
    monkeypatch.undo()
    assert child.closed and not child.isalive()
    deadline = time.monotonic() + 10
    while any("sleep 471" in p for p in _processes(term)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any("sleep 471" in p for p in _processes(term))
    if os.geteuid() == 0:
        assert made == []


@pytest.mark.docker
def test_spawn_sendintr_interrupts_running_code(term):
    child = term.spawn("python -q -i")
    child.expect(">>> ", timeout=20)
    child.sendline("import time; time.sleep(60)")
    time.sleep(0.3)
    start = time.monotonic()
    child.sendintr()
    child.expect(">>> ", timeout=10)
    assert "KeyboardInterrupt" in child.before
    assert time.monotonic() - start < 5
    child.sendline("print('still here')")
    child.expect(">>> ")
    assert "still here" in child.before
    assert child.isalive()
    child.terminate()  # SIGKILL to its process group, connection left open
    deadline = time.monotonic() + 10
    while child.isalive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not child.isalive()
    assert child.exitstatus == 137  # 128 + SIGKILL
    child.close(force=True)


@pytest.mark.docker
def test_spawn_natural_exit_sets_exitstatus(term):
    child = term.spawn("echo bye; exit 4")
    child.expect(pexpect.EOF, timeout=20)
    assert "bye" in child.before
    deadline = time.monotonic() + 5
    while child.isalive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not child.isalive()
    assert child.exitstatus == 4
    child.close()


@pytest.mark.docker
def test_spawned_processes_die_with_the_container(image, repo):
    t = DockerTerminal(image)
    t.start(str(repo))
    child = t.spawn("sleep 300")
    cid = t.container.id
    t.close()
    assert not _container_exists(cid)
    assert child.closed and not child.isalive()


@pytest.mark.docker
def test_exception_inside_repo_env_removes_the_container(image, repo):
    from dgym_tui.core.env import RepoEnv

    with pytest.raises(RuntimeError, match="boom"), \
            RepoEnv(str(repo), terminal="docker", image=image,
                    readonly=["tests/test_app.py"]) as env:
        env.reset()
        cid = env.terminal.container.id
        raise RuntimeError("boom")
    assert not _container_exists(cid)
    assert not any(isinstance(t, DockerTerminal) for t in cleanup.live())


@pytest.mark.docker
def test_missing_image_error_is_one_clear_line(image, repo):
    t = DockerTerminal("dgym-tui/no-such-image:never")
    with pytest.raises(TerminalError) as info:
        t.start(str(repo))
    msg = str(info.value)
    assert "\n" not in msg
    assert msg == ("image dgym-tui/no-such-image:never not found: build it with "
                   "scripts/setup_docker.sh or pull it")


def _child_holding_container(repo, image: str, tmp) -> subprocess.Popen:
    """Start a Python process that starts a DockerTerminal, prints its container id, then sleeps;
    its temporary folders go to ``tmp`` (made here)."""
    tmp.mkdir()
    script = textwrap.dedent(f"""
        import time
        from dgym_tui.core.terminals.docker import DockerTerminal
        t = DockerTerminal({image!r})
        t.start({str(repo)!r})
        print(t.container.id, flush=True)
        time.sleep(120)
    """)
    return subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp)})


@pytest.mark.docker
def test_container_removed_after_sigterm(image, repo, tmp_path):
    proc = _child_holding_container(repo, image, tmp_path / "tmp")
    try:
        cid = proc.stdout.readline().strip()
        assert cid and _container_exists(cid)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGTERM
    assert not _container_exists(cid)
    assert os.listdir(tmp_path / "tmp") == []  # scratch, plugin and support folders too


@pytest.mark.docker
def test_stale_container_of_killed_process_is_removed(image, repo, tmp_path):
    proc = _child_holding_container(repo, image, tmp_path / "tmp")
    try:
        cid = proc.stdout.readline().strip()
        labels = dockermod.get_client().api.inspect_container(cid)["Config"]["Labels"]
        assert labels[dockermod.LABEL_PID] == str(proc.pid)
        proc.kill()  # SIGKILL: no chance to clean up
        proc.wait(timeout=30)
    finally:
        proc.kill()
    # (Another test process starting its first container may sweep it first.)
    dockermod.remove_stale_containers()
    assert not _container_exists(cid)


def test_unreachable_daemon_is_one_clear_line(monkeypatch, repo):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(TerminalError) as info:
        DockerTerminal(IMAGE).start(str(repo))
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("Docker daemon not reachable at unix:///nonexistent/docker.sock")
    assert msg.endswith("start it (sudo dockerd or scripts/setup_docker.sh) or use terminal='local'")
