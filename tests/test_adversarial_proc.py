"""Hostile code against the process side of the sandbox (issue 8): one test per probe.

The agent's code runs as pdb ``!`` commands and as the tests the entrypoint
starts. Each probe runs on the terminals where the sandbox promises to hold
it: ``every_terminal`` (local, bwrap, Docker where available) for leaks and
faked scores; ``sandboxed`` (bwrap, Docker) for what only a sandbox can stop
(device nodes, ignored files, read-only files, network, capabilities). The
table in docs/security.md lists the results per terminal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from dgym_tui import ToolCall

TEST = "from app import value\n\n\ndef test_value():\n    assert value() == 2\n"
SECRET = "the gold patch: return 2\n"


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def sandboxed(request) -> str:
    """``"bwrap"`` or ``"docker"`` (each skips only where it is unavailable, not under CI)."""
    request.getfixturevalue("bwrap_ready" if request.param == "bwrap" else "docker_ready")
    return request.param


def _repo(make_repo, extra: dict[str, str] | None = None):
    return make_repo({"app.py": "def value():\n    return 1\n", "test_app.py": TEST,
                      "answer/fix.txt": SECRET, ".debugignore": "answer/\nnotes.txt\n",
                      "notes.txt": SECRET, ".debugreadonly": "test_app.py\n", **(extra or {})})


def _pdb(env, command: str):
    return env.step(ToolCall("pdb", {"command": command}))


@pytest.fixture
def sandbox_env(sandboxed, make_repo, make_env, fast_pytest):
    env = make_env(_repo(make_repo), terminal=sandboxed, entrypoint=f"{fast_pytest} test_app.py")
    env.reset()
    assert _pdb(env, "b app.py:2").breakpoints  # pdb runs inside the sandbox
    return env


# -- escapes: what only a sandbox stops ------------------------------------------------

def test_pdb_cannot_make_a_block_device(sandbox_env):
    r = _pdb(sandbox_env, "!import os, stat; os.mknod('disk.txt', 0o644 | stat.S_IFBLK, "
                          "os.makedev(7, 0))")
    assert "PermissionError" in r.observation or "Operation not permitted" in r.observation
    assert not os.path.lexists(sandbox_env.workspace.root / "disk.txt")


def test_pdb_cannot_read_ignored_files(sandbox_env):
    for path, content in (("answer/fix.txt", "gold patch"), ("notes.txt", "gold patch"),
                          (".debugignore", "notes.txt")):
        r = _pdb(sandbox_env, f"!print(repr(open({path!r}).read()))")
        assert content not in r.observation, path
    r = _pdb(sandbox_env, "!import os; print(os.listdir('answer'))")
    assert "fix.txt" not in r.observation
    # The original repository's copy is masked too (bwrap shows the system read-only).
    r = _pdb(sandbox_env, f"!print(open({str(sandbox_env.workspace.source / 'notes.txt')!r})"
                          ".read())")
    assert "gold patch" not in r.observation


def test_pdb_cannot_write_read_only_files(sandbox_env):
    for command in ("!open('test_app.py', 'w').write('')",
                    "!import os; os.remove('test_app.py')",
                    "!import os; os.rename('test_app.py', 'moved.py')",
                    "!import os; os.chmod('test_app.py', 0o777)"):
        r = _pdb(sandbox_env, command)
        assert "Error" in r.observation, command
    assert (sandbox_env.workspace.root / "test_app.py").read_text() == TEST


def test_no_network_no_capabilities_no_daemon_socket(sandbox_env):
    r = _pdb(sandbox_env, "!import socket; socket.create_connection(('1.1.1.1', 53), timeout=3)")
    assert "OSError" in r.observation or "unreachable" in r.observation
    r = _pdb(sandbox_env, "!print([l for l in open('/proc/self/status') if l.startswith('CapEff')])")
    assert "0000000000000000" in r.observation
    r = _pdb(sandbox_env, "!import os; print(os.path.exists('/var/run/docker.sock'))")
    assert "False" in r.observation


def test_docker_commands_run_as_an_unprivileged_user(docker_ready, make_repo, make_env,
                                                     fast_pytest):
    env = make_env(_repo(make_repo), terminal="docker", entrypoint=f"{fast_pytest} test_app.py")
    env.reset()
    r = _pdb(env, "!import os; print('uid', os.getuid())")
    assert "uid 0" not in r.observation and "uid " in r.observation
    # The working copy stays writable for it, and the host can still delete it.
    r = env.step(ToolCall("eval", {}))
    assert r.max_score == 1
    assert env.terminal.run("echo made > made.txt").exit_code == 0


# -- leaks: nothing outlives the episode --------------------------------------------------

LEAKER = textwrap.dedent("""
    import os, subprocess, time

    def test_leak():
        subprocess.Popen(["sleep", "{a}"], start_new_session=True)
        if os.fork() == 0:          # double fork: the grandchild is orphaned at once
            if os.fork() == 0:
                os.setsid()
                os.execvp("sleep", ["sleep", "{b}"])
            os._exit(0)
        time.sleep(0.3)
""")


def _sleepers(*seconds: int) -> list[int]:
    """Host pids of ``sleep N`` processes for the given N (any terminal: container processes too)."""
    wanted = {str(s) for s in seconds}
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmd = proc.info.get("cmdline") or []
        if len(cmd) == 2 and os.path.basename(cmd[0]) == "sleep" and cmd[1] in wanted:
            found.append(proc.pid)
    return found


def _gone(*seconds: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while _sleepers(*seconds) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _sleepers(*seconds)


def test_daemons_started_by_tests_die_at_close(every_terminal, make_repo, make_env, fast_pytest):
    a, b = 3001 + os.getpid() % 500, 3601 + os.getpid() % 500
    repo = make_repo({"test_leak.py": LEAKER.format(a=a, b=b)})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_leak.py")
    r = env.reset()
    assert r.resolved
    if not every_terminal.startswith("bwrap"):  # bwrap's PID namespace already ended with the eval
        assert len(_sleepers(a, b)) == 2  # they outlived the eval ...
    env.close()
    assert _gone(a, b)  # ... not the episode


def test_daemons_started_from_the_bash_tool_die_at_close(every_terminal, make_repo, make_env):
    """``setsid`` and a double fork from the persistent shell: alive between steps, not after."""
    a, b = 6001 + os.getpid() % 500, 6601 + os.getpid() % 500
    env = make_env(make_repo({"a.py": ""}), entrypoint="true", tools=["bash"])
    env.reset()
    r = env.step(ToolCall("bash", {"command": f"setsid sleep {a} >/dev/null 2>&1 & "
                                              f"( (sleep {b} >/dev/null 2>&1 &) & ); echo started"}))
    assert r.observation.endswith("started")
    deadline = time.monotonic() + 10
    while len(_sleepers(a, b)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_sleepers(a, b)) == 2  # they outlive the step ...
    env.close()
    assert _gone(a, b)  # ... not the episode


def test_daemons_die_when_the_owner_is_terminated(every_terminal, make_repo, fast_pytest,
                                                  sandbox_image):
    a, b, c = (n + os.getpid() % 500 for n in (4001, 4601, 5601))
    repo = make_repo({"test_leak.py": LEAKER.format(a=a, b=b)})
    terminal_options = ({"overlay": every_terminal.endswith("overlay")}
                        if every_terminal.startswith("bwrap") else None)
    script = textwrap.dedent(f"""
        import time
        from dgym_tui import ToolCall
        from dgym_tui.core.env import RepoEnv
        env = RepoEnv({str(repo)!r}, entrypoint={fast_pytest + ' test_leak.py'!r},
                      terminal={every_terminal.split("-")[0]!r}, image={sandbox_image!r},
                      terminal_options={terminal_options!r})
        env.reset()
        env.step(ToolCall("pdb", {{"command": "!import subprocess; subprocess.Popen("
                                              "['sleep', '{c}'], start_new_session=True)"}}))
        print("ready", flush=True)
        time.sleep(120)
    """)
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "ready"
        assert _sleepers(c)  # started from pdb: alive on every terminal
        assert every_terminal.startswith("bwrap") or len(_sleepers(a, b)) == 2
        owner.send_signal(signal.SIGTERM)
        owner.wait(timeout=30)
    finally:
        owner.kill()
    assert owner.returncode == -signal.SIGTERM
    assert _gone(a, b, c)


def test_pdb_background_process_dies_with_the_episode(every_terminal, make_repo, make_env,
                                                      fast_pytest):
    n = 5001 + os.getpid() % 500
    env = make_env(_repo(make_repo), entrypoint=f"{fast_pytest} test_app.py")
    env.reset()
    _pdb(env, f"!import subprocess; subprocess.Popen(['sleep', '{n}'], start_new_session=True)")
    assert _sleepers(n)
    env.close()
    assert _gone(n)


# -- scores: exiting early cannot pass -----------------------------------------------------

def test_os_exit_zero_cannot_score(every_terminal, make_repo, make_env, fast_pytest):
    repo = _repo(make_repo, {"app.py": "import os\nos._exit(0)\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_app.py")
    r = env.reset()
    assert r.eval.exit_code == 0 and not r.resolved
    assert "pytest ended before finishing its report" in r.observation
    r = env.step(ToolCall("submit", {}))
    assert r.done and not r.resolved
