"""An original holding entries of another owner gets a working copy that can change them.

An overlay copies a file up (to change it) under the file's own owner; the kernel
refuses (``EOVERFLOW``) when that owner is not in the overlay's id map: a user's
overlay maps only the user's ids, root's (for the sandbox's uid) only the original
folder's owner. The working copy is then a copy, with a warning saying why; a cached
walk that missed such an owner is forgotten at the first refusal.
"""

from __future__ import annotations

import ctypes
import logging
import os
import select
import shutil
import signal
import tempfile
import time

import pytest

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.fs import idcache
from dgym_tui.core.types import ToolCall

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap"),
]

FILES = {"mod.py": "def f():\n    return 1\n",
         "test_mod.py": "from mod import f\n\ndef test_f():\n    assert f() == 2\n",
         "sub/other.py": "X = 1\n"}
PR_SET_DUMPABLE = 4
NO_USER_OVERLAY = "a user cannot mount an overlay here"
FIX = {"path": "mod.py", "new_code": "def f():\n    return 2\n"}


@pytest.fixture(autouse=True)
def own_cache(monkeypatch, tmp_path):
    """A cache folder of the test's own; folders kept once 0.05 s old."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(idcache, "RACY_SECONDS", 0.05)


def _env(repo) -> RepoEnv:
    env = RepoEnv(repo, terminal="bwrap", entrypoint="python -m pytest -q",
                  terminal_options={"overlay": True})
    env.reset()
    return env


def _fix_and_score(env: RepoEnv) -> tuple[str, str, str]:
    """(rewrite's observation, eval's, what a sandboxed write of sub/other.py printed)."""
    fixed = env.step(ToolCall(name="rewrite", arguments=FIX)).observation
    score = env.step(ToolCall(name="eval", arguments={})).observation
    wrote = env.step(ToolCall(name="pdb", arguments={
        "command": "!print('wrote', open('sub/other.py', 'a').write('# x\\n'))"})).observation
    return fixed, score, wrote


def test_a_file_of_another_owner_makes_the_working_copy_a_copy_that_can_change_it(
        make_repo, caplog):
    repo = make_repo(FILES)
    os.chown(repo / "mod.py", 1234, 1234)
    os.chown(repo / "sub", 1234, 0)
    with caplog.at_level(logging.WARNING, logger="dgym_tui.core.env"):
        env = _env(repo)
    try:
        assert env.workspace.overlay is None
        fixed, score, wrote = _fix_and_score(env)
    finally:
        env.close()
    assert fixed.startswith("Replaced lines 1-2 of mod.py"), fixed
    assert "Score: 1/1" in score
    assert "wrote 4" in wrote, wrote
    warning = [r.getMessage() for r in caplog.records if "not an overlay" in r.getMessage()]
    assert len(warning) == 1 and "'mod.py' belongs to 1234:1234" in warning[0], warning
    assert "(and 1 other owner)" in warning[0]  # sub's 1234:0
    assert (repo / "mod.py").read_text() == FILES["mod.py"]  # the original is untouched


def test_an_original_of_one_owner_keeps_its_overlay(make_repo):
    repo = make_repo(FILES)
    env = _env(repo)
    try:
        assert env.workspace.overlay is not None
        fixed, score, wrote = _fix_and_score(env)
    finally:
        env.close()
    assert fixed.startswith("Replaced lines 1-2 of mod.py") and "Score: 1/1" in score
    assert "wrote 4" in wrote


def test_an_owner_the_cached_walk_missed_is_named_then_forgotten(make_repo):
    repo = make_repo(FILES)
    time.sleep(0.1)  # past the racy window: the first walk is kept
    _env(repo).close()
    os.chown(repo / "mod.py", 1234, 1234)  # its folder's times do not move: the cache is used
    env = _env(repo)
    try:
        assert env.workspace.overlay is not None
        refused = env.step(ToolCall(name="rewrite", arguments=FIX)).observation
    finally:
        env.close()
    assert "'mod.py' cannot be changed: it, or a folder above it, belongs to a user or " \
           "group this working copy does not map" in refused, refused
    env = _env(repo)  # the next episode's walk sees the owner
    try:
        assert env.workspace.overlay is None
        assert env.step(ToolCall(name="rewrite", arguments=FIX)).observation.startswith(
            "Replaced lines 1-2 of mod.py")
    finally:
        env.close()


def test_the_episode_start_names_an_owner_the_cached_walk_missed(make_repo, caplog):
    """The session's start lists the original's files (``start_ids``, an ``lstat`` each):
    an owner the overlay cannot change is a warning at once, and the next working copy is
    a copy, without waiting for a refused change."""
    repo = make_repo(FILES)
    time.sleep(0.1)
    _env(repo).close()
    os.chown(repo / "sub" / "other.py", 1234, 1234)
    env = _env(repo)
    try:
        assert env.workspace.overlay is not None
        with caplog.at_level(logging.WARNING, logger="dgym_tui.core.fs.workspace"):
            ids = env.workspace.start_ids()
    finally:
        env.close()
    assert sorted(ids) == sorted(FILES)
    warning = [r.getMessage() for r in caplog.records]
    assert len(warning) == 1 and warning[0].startswith(
        "this episode's working copy cannot change every file, the next one's will be a "
        "copy: 'sub/other.py' belongs to 1234:1234"), warning
    env = _env(repo)
    try:
        assert env.workspace.overlay is None
    finally:
        env.close()


def test_a_users_overlay_refuses_another_group_before_it_is_mounted():
    """As a user (a child of this process dropped to nobody), a file whose group is not
    the user's makes :class:`Workspace` raise ``UnmappedOwners``; the user's own files
    give an overlay whose files can be changed."""
    from dgym_tui.core.fs import overlay
    from dgym_tui.core.fs.overlay import UnmappedOwners
    from dgym_tui.core.fs.workspace import Workspace

    top = tempfile.mkdtemp(prefix="dgym-owners-", dir="/tmp")  # pytest's is root's only
    os.chmod(top, 0o755)
    try:
        for name, group in (("mixed", 0), ("own", 65534)):
            for rel, text in FILES.items():
                path = os.path.join(top, name, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            for folder, dirs, files in os.walk(os.path.join(top, name)):
                for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                    os.chown(entry, 65534, group if entry.endswith("mod.py") else 65534)
        Workspace(os.path.join(top, "own"), overlay=True,
                  run_as=(65534, 65534)).cleanup()  # every module imported before the fork
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: a user, with a cache folder it may write
            answer = "?"
            try:
                os.environ["XDG_CACHE_HOME"] = os.path.join(top, "cache")
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                # as after a login: a change of ids leaves a process undumpable, and the
                # /proc/self files an overlay's user namespace writes root's then
                ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
                try:
                    Workspace(os.path.join(top, "mixed"), overlay=True).cleanup()
                    answer = "mixed: mounted"
                except UnmappedOwners as exc:
                    answer = f"mixed: {exc}"
                try:
                    ws = Workspace(os.path.join(top, "own"), overlay=True)
                except OSError:
                    overlay._probed.clear()  # the parent's (root's) answer is not a user's
                    if (problem := overlay.overlay_problem()) is None:
                        raise  # a user mounts one here: the working copy's own failure
                    answer += f"\nown: {NO_USER_OVERLAY} ({problem})"
                else:
                    try:
                        ws.write_text("mod.py", FIX["new_code"])
                        answer += f"\nown: {ws.overlay is not None} {ws.read_text('mod.py')!r}"
                    finally:
                        ws.cleanup()
            except BaseException as exc:  # noqa: BLE001  reported to the parent
                answer += f"\nchild failed: {exc!r}"
            finally:
                os.write(write, answer.encode())
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:  # a child of a process with threads may hang: bounded
            if not select.select([f], [], [], 60)[0]:
                os.kill(pid, signal.SIGKILL)
            answer = f.read()
        os.waitpid(pid, 0)
    finally:
        shutil.rmtree(top)
    assert answer.startswith("mixed: 'mod.py' belongs to 65534:0 (uid:gid), and an overlay "
                             "working copy can change only entries of 65534:65534"), answer
    if f"\nown: {NO_USER_OVERLAY}" in answer:
        pytest.skip(answer.rpartition("\nown: ")[2])
    assert answer.endswith(f"\nown: True {FIX['new_code']!r}"), answer
