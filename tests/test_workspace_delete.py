"""Deleting a working copy changes nothing outside it (fdtree.remove_tree); the stale sweep.

It once opened up the folder above a path it could not delete (``chmod 0700``): when the
working copy's own folder could not be removed, that was the system's temporary folder,
and a root dgym left ``/tmp`` usable by root alone.
"""

from __future__ import annotations

import os
import stat
import subprocess

import pytest

from dgym_tui.core.fdtree import remove_tree
from dgym_tui.core.fs.workspace import remove_stale_folders
from dgym_tui.core.types import SANDBOX_UID_RANGE


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_a_copy_that_cannot_be_removed_leaves_its_parent_alone(tmp_path):
    """The copy's folder is a mount point (busy: rmdir fails): its parent keeps its mode."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    parent = tmp_path / "parent"
    parent.mkdir()
    os.chmod(parent, 0o1777)
    copy = parent / "dgym-ws-1-x"
    copy.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "dgym-test", str(copy)],
                             capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        (copy / "inner").mkdir()
        (copy / "inner" / "f.py").write_text("x = 1\n")
        remove_tree(str(copy))  # never raises
        assert _mode(parent) == 0o1777
        assert copy.is_dir() and not (copy / "inner").exists()  # emptied, the mount left
    finally:
        subprocess.run(["umount", str(copy)], check=False)


def test_folders_made_unwritable_inside_are_deleted_and_links_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep\n")
    os.chmod(outside, 0o755)
    before = _mode(tmp_path)
    copy = tmp_path / "dgym-ws-2-y"
    (copy / "a" / "b").mkdir(parents=True)
    (copy / "a" / "b" / "f.py").write_text("y = 2\n")
    (copy / "link").symlink_to(outside)
    (copy / "a" / "up").symlink_to(tmp_path)
    os.chmod(copy / "a" / "b", 0o500)
    os.chmod(copy / "a", 0o000)
    remove_tree(str(copy))
    assert not os.path.lexists(copy)
    assert (outside / "keep.txt").read_text() == "keep\n"
    assert _mode(outside) == 0o755 and _mode(tmp_path) == before


def test_a_missing_copy_is_nothing(tmp_path):
    remove_tree(str(tmp_path / "gone"))
    assert os.listdir(tmp_path) == []


def test_the_sweep_deletes_stale_copies_a_root_sandbox_owned_and_no_others(tmp_path):
    """A copy handed to a root-started sandbox's uid and left behind (its dgym killed, or
    its sandbox writing into it while it was deleted) is swept like dgym's own; a folder of
    another user with the same kind of name is not."""
    if os.geteuid() != 0:
        pytest.skip("only root hands working copies to other uids")
    dead = subprocess.Popen(["true"])
    dead.wait()
    handed = tmp_path / f"dgym-ws-{dead.pid}-abc"
    (handed / ".pytest_cache").mkdir(parents=True)
    (handed / ".pytest_cache" / "README.md").write_text("x\n")
    other = tmp_path / f"dgym-ws-{dead.pid}-def"
    other.mkdir()
    sandbox_uid = SANDBOX_UID_RANGE.start + 4321
    for path in (handed, handed / ".pytest_cache", handed / ".pytest_cache" / "README.md"):
        os.lchown(path, sandbox_uid, sandbox_uid)
    os.lchown(other, 4321, 4321)
    assert remove_stale_folders(str(tmp_path)) == [str(handed)]
    assert not handed.exists() and other.exists()
