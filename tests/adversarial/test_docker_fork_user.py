"""Docker forks when dgym runs as an unprivileged user: no spare container (moving a
mount into a container needs root), and forks still work (a container of their own)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import pytest
from conftest import PACKAGE_ROOT, Prober, _python_for

pytestmark = pytest.mark.docker

SCRIPT = textwrap.dedent("""
    import json, sys
    from dgym_tui import RepoEnv, ToolCall

    env = RepoEnv(sys.argv[1], entrypoint="python -m pytest -q -p no:cacheprovider test_code.py",
                  terminal="docker", image=sys.argv[2])
    report = {}
    try:
        env.reset()
        env.step(ToolCall(name="rewrite", arguments={
            "path": "code.py", "start": 2, "end": 2, "new_code": "    return a + b\\n"}))
        twins = [env.fork(), env.fork()]
        report["files"] = [t.terminal.run("cat code.py", timeout=30).output for t in twins]
        report["resolved"] = [t.step(ToolCall(name="eval", arguments={})).resolved
                              for t in twins]
        report["spare"] = [t.terminal.started_from_spare for t in twins]
        report["spare_kept"] = bool(env.terminal._fork_spares) \\
            or env.terminal._spare_thread is not None
        report["containers"] = [t.terminal.container.id for t in [env, *twins]]
        for twin in twins:
            twin.close()
    finally:
        env.close()
    print(json.dumps(report))
""")


def test_forks_work_without_a_spare_as_a_user(docker_ready, adversarial_base):
    if os.geteuid() != 0:
        pytest.skip("runs dgym as the test user through setpriv (root only)")
    prober = Prober("docker", "user", adversarial_base, docker_ready)
    prefix, uid, gid, env = prober._identity()
    env["PYTHONPATH"] = PACKAGE_ROOT
    python = _python_for(prefix, env)
    if python is None:
        pytest.skip("no Python the test user can run dgym with")
    folder = adversarial_base / "fork-user"
    repo = folder / "repo"
    repo.mkdir(parents=True)
    (repo / "code.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_code.py").write_text(
        "from code import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    script = folder / "fork.py"
    script.write_text(SCRIPT)
    subprocess.run(["chown", "-R", f"{uid}:{gid}", str(folder)], check=True, timeout=60)
    res = subprocess.run([*prefix, python, str(script), str(repo), docker_ready], env=env,
                         cwd="/", capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["files"] == ["def add(a, b):\n    return a + b\n"] * 2
    assert report["resolved"] == [True, True]
    assert report["spare"] == [False, False] and not report["spare_kept"]
    assert len(set(report["containers"])) == 3
    from dgym_tui.core.terminals.docker import get_client

    left = {c.id for c in get_client().containers.list(all=True)}
    assert not left & set(report["containers"])
