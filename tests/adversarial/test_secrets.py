"""No host secret is visible inside: environment, home folder, sibling projects, the original
repository's history, other episodes' working copies, the Docker socket."""

from __future__ import annotations

import os
import shutil
import tempfile

from conftest import HOST_SECRET


def test_host_environment_does_not_pass(prober):
    """API keys of the host's environment: not in the command's environment nor in PID 1's."""
    probe = prober.run(["env; cat /proc/1/environ | tr '\\0' '\\n'; echo $OPENAI_API_KEY"])
    assert HOST_SECRET not in probe[0].output, probe[0].output
    assert "OPENAI_API_KEY" not in probe[0].output


def test_home_siblings_and_the_original_repository_are_not_shown(prober):
    """The original repository (its .git holds what .debugignore hides), a sibling project's
    .env next to it, the host user's home: none is visible, by path or by listing."""
    def setup(repo):
        (repo / ".git").mkdir()
        (repo / ".git" / "HEAD-secret").write_text("GIT HISTORY 91ab\n")
        (repo / ".debugignore").write_text(".git/\n")
        sibling = repo.parent / "sibling"
        sibling.mkdir()
        (sibling / ".env").write_text("SIBLING SECRET 5e2c\n")

    home = tempfile.mkdtemp(prefix="dgym-adv-home-", dir="/var/tmp")
    os.chmod(home, 0o755)
    with open(os.path.join(home, ".netrc"), "w") as f:
        f.write("machine example password HOME SECRET 8d0e\n")
    os.chmod(os.path.join(home, ".netrc"), 0o644)
    try:
        probe = prober.run(["cat ../sibling/.env; cat {repo}/../sibling/.env",
                             "cat {repo}/.git/HEAD-secret", "ls -A {repo}/.git {repo}/..",
                             f"cat {home}/.netrc ~/.netrc"], setup=setup, host_env={"HOME": home})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    text = "\n".join(r.output for r in probe.results)
    assert "SIBLING SECRET" not in text and "GIT HISTORY" not in text, text
    assert "HEAD-secret" not in probe[2].output and "sibling" not in probe[2].output, probe[2].output
    assert "HOME SECRET" not in probe[3].output, probe[3].output


def test_other_working_copies_and_tmpdir_are_not_shown(prober):
    """A TMPDIR outside /tmp holding other episodes' working copies: none is visible."""
    tmpdir = tempfile.mkdtemp(prefix="dgym-adv-tmpdir-", dir="/var/tmp")
    os.chmod(tmpdir, 0o1777)
    other = os.path.join(tmpdir, "dgym-ws-1-other")
    os.mkdir(other)
    with open(os.path.join(other, "answer.py"), "w") as f:
        f.write("OTHER EPISODE 33f0\n")
    os.chmod(other, 0o755)
    try:
        probe = prober.run([f"cat {other}/answer.py", f"ls -A {tmpdir} /tmp /var/tmp"],
                            host_env={"TMPDIR": tmpdir})
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    assert probe[0].exit_code != 0 and "OTHER EPISODE" not in probe[0].output, probe[0].output
    assert "dgym-ws-1-other" not in probe[1].output, probe[1].output


def test_no_docker_socket(prober):
    """The Docker daemon's socket (root on the host) is not reachable."""
    probe = prober.run(["ls -la /var/run/docker.sock /run/docker.sock; "
                         "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); "
                         "s.connect('/var/run/docker.sock'); print('CONNECTED')\""])
    assert "CONNECTED" not in probe[0].output and probe[0].exit_code != 0, probe[0].output
