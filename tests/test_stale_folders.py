"""Nothing outlives an episode: what a dgym killed with SIGKILL left in the temporary folder
is deleted by the next dgym's start (``workspace.remove_stale_folders``), and only that.

Every temporary folder dgym makes is ``dgym-<kind>-<owner pid>-<random>``
(``core.tempdirs``). Before, only working copies carried their owner's pid: scratch,
plugin and support folders of a killed process, and every overlay probe of a dgym run
as a user (overlayfs's ``work/work`` is mode 000, which ``rmtree(ignore_errors=True)``
skipped), stayed in /tmp for good: ~3,000 such folders were found on this machine.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

import dgym_tui

PACKAGE_ROOT = str(Path(dgym_tui.__file__).resolve().parent.parent)

#: One episode in a program of its own: reset, say "ready", then wait to be killed
#: (``wait``) or close normally (``close``).
EPISODE = r"""
import sys
from dgym_tui import RepoEnv
repo, terminal, image, then = sys.argv[1:5]
options = {"overlay": terminal == "bwrap-overlay"} if terminal.startswith("bwrap") else {}
env = RepoEnv(repo, entrypoint="python app.py", terminal=terminal.split("-")[0],
              image=image or None, terminal_options=options)
env.reset()
print("ready", flush=True)
if then == "wait":
    sys.stdin.read()
env.close()
"""


def _episode(repo: Path, tmp: Path, terminal: str, image: str, then: str) -> subprocess.Popen:
    path = os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": path}
    return subprocess.Popen([sys.executable, "-c", EPISODE, str(repo), terminal, image, then],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


@pytest.mark.timeout(240)
@pytest.mark.parametrize("terminal", ["local", "bwrap", "bwrap-overlay",
                                      pytest.param("docker", marks=pytest.mark.docker)])
def test_a_killed_episodes_folders_are_removed_at_the_next_start(terminal, request, make_repo,
                                                                  tmp_path):
    """SIGKILL after reset leaves the working copy, scratch, plugin (and support) folders,
    each named with the killed pid; the next episode's start deletes every one of them,
    and that episode leaves nothing either (its overlay probe included)."""
    image = ""
    if terminal == "docker":
        image = request.getfixturevalue("docker_ready")
    elif terminal.startswith("bwrap"):
        request.getfixturevalue("bwrap_ready")
    repo = make_repo({"app.py": "print('hi')\n"})
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    os.chmod(tmp, 0o755)
    first = _episode(repo, tmp, terminal, image, "wait")
    descendants = []
    try:
        assert first.stdout.readline().strip() == "ready"
        descendants = psutil.Process(first.pid).children(recursive=True)
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        first.kill()
        first.wait()
        for proc in descendants:  # what the killed episode started: ended here
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                continue
    left = sorted(os.listdir(tmp))
    kinds = {name.rsplit("-", 2)[0] for name in left}
    assert {"dgym-ws", "dgym-scratch", "dgym-plugin"} <= kinds, left
    assert all(name.rsplit("-", 2)[1] == str(first.pid) for name in left), left
    second = _episode(repo, tmp, terminal, image, "close")
    out, _ = second.communicate(timeout=180)
    assert second.returncode == 0 and out.strip() == "ready"
    assert os.listdir(tmp) == []


def test_the_sweep_removes_a_dead_owners_folders_and_nothing_else(tmp_path):
    """Every kind of folder of a dead owner goes (an overlay's ``work/work`` of mode 000,
    folders made unwritable and links inside included); a live process's folder, a name
    without a pid and a link planted in place of a folder stay, and nothing outside is
    changed."""
    from dgym_tui.core.fs.workspace import remove_stale_folders
    from dgym_tui.core.tempdirs import KINDS

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    dead = _dead_pid()
    stale = []
    for kind in KINDS:
        folder = tmp / f"dgym-{kind}-{dead}-abc"
        (folder / "work" / "work").mkdir(parents=True)
        (folder / "work" / "f.txt").write_text("x\n")
        (folder / "link").symlink_to(outside)
        os.chmod(folder / "work" / "work", 0)
        os.chmod(folder / "work", 0o500)
        stale.append(str(folder))
    live = tmp / f"dgym-scratch-{os.getpid()}-abc"
    live.mkdir()
    unnamed = tmp / "dgym-scratch-abc12345"
    unnamed.mkdir()
    planted = tmp / f"dgym-plugin-{dead}-link"
    planted.symlink_to(outside)
    assert sorted(remove_stale_folders(str(tmp))) == sorted(stale)
    assert sorted(os.listdir(tmp)) == sorted([live.name, unnamed.name, planted.name])
    assert os.listdir(outside) == ["keep.txt"] and (outside / "keep.txt").read_text() == "keep\n"


def test_the_sweep_leaves_another_users_folders(tmp_path):
    """As root: a dead owner's folder of another user (not a sandbox uid) stays."""
    from dgym_tui.core.fs.workspace import remove_stale_folders

    if os.geteuid() != 0:
        pytest.skip("only root can make another user's folder")
    dead = _dead_pid()
    other = tmp_path / f"dgym-scratch-{dead}-other"
    (other / "sub").mkdir(parents=True)
    for path in (other, other / "sub"):
        os.lchown(path, 4321, 4321)
    assert remove_stale_folders(str(tmp_path)) == []
    assert (other / "sub").is_dir()



SWEEP = """
import sys
from dgym_tui.core.fs.workspace import remove_stale_folders
print(len(remove_stale_folders(sys.argv[1])), "psutil" in sys.modules)
"""


def test_the_sweep_asks_the_kernel_whether_an_owner_runs(tmp_path):
    """Whether an owner runs is the kernel's answer (signal 0), without psutil's import:
    the sweep runs in every app's reset, whose thread shares the interpreter with the
    app's first frame. Another live process's folder stays, a dead one's goes, and a name
    with a pid beyond a C long (any user can make one in /tmp) is kept without an error
    (psutil raised OverflowError: no dgym could start)."""
    dead = _dead_pid()
    (tmp_path / f"dgym-ws-{dead}-abc").mkdir()
    huge = [f"dgym-ws-{2 ** 31}-abc", f"dgym-scratch-{10 ** 20}-abc"]
    for name in huge:
        (tmp_path / name).mkdir()
    live = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / f"dgym-ws-{live.pid}-abc").mkdir()
        path = os.pathsep.join(filter(None, [PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))
        out = subprocess.run([sys.executable, "-c", SWEEP, str(tmp_path)], capture_output=True,
                             text=True, env={**os.environ, "PYTHONPATH": path}, timeout=60)
    finally:
        live.kill()
        live.wait()
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["1", "False"]  # one removed; psutil not imported
    assert sorted(os.listdir(tmp_path)) == sorted([f"dgym-ws-{live.pid}-abc", *huge])
