"""Workspace: working copy, path checks, .debugignore / .debugreadonly, changes and patch."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from dgym_tui.core.fs.workspace import Workspace, WorkspaceError

FILES = {
    "code.py": "def add(a, b):\n    return a - b\n",
    "pkg/__init__.py": "",
    "pkg/util.py": "X = 1\n",
    "hidden/answers.py": "GOLD = 42\n",
    "secret.txt": "password\n",
    "tests/test_code.py": "from code import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "notes.log": "log\n",
    "keep.log": "kept\n",
    ".debugignore": "hidden/\nsecret.txt\n*.log\n!keep.log\n",
    ".debugreadonly": "tests/\n",
}


@pytest.fixture
def ws(make_repo):
    repo = make_repo(FILES)
    (repo / ".git").mkdir()
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    workspace = Workspace(repo)
    yield workspace
    workspace.cleanup()


def test_copy_is_separate_and_skips_git(ws):
    assert ws.root != ws.source
    assert (ws.root / "code.py").read_text() == FILES["code.py"]
    assert not (ws.root / ".git").exists()
    ws.write_text("code.py", "changed\n")
    assert (ws.source / "code.py").read_text() == FILES["code.py"]


def test_files_hide_ignored_and_rule_files(ws):
    assert ws.files() == ["code.py", "keep.log", "pkg/__init__.py", "pkg/util.py",
                          "tests/test_code.py"]
    assert ws.is_ignored("hidden/answers.py") and ws.is_ignored("hidden")
    assert ws.is_ignored(".debugignore") and ws.is_ignored(".debugreadonly")
    assert not ws.is_ignored("keep.log")  # negated pattern
    assert [c for c, _ in ws.children(".")] == ["code.py", "keep.log", "pkg", "tests"]


@pytest.mark.parametrize("path", ["hidden/answers.py", "secret.txt", "notes.log",
                                  ".debugignore", "hidden", "./hidden/../secret.txt"])
def test_ignored_cannot_be_read(ws, path):
    with pytest.raises(WorkspaceError, match="does not exist or is hidden"):
        ws.read_text(path)


def test_ignored_cannot_be_written(ws):
    with pytest.raises(WorkspaceError, match="hidden by .debugignore"):
        ws.write_text("secret.txt", "x")
    with pytest.raises(WorkspaceError, match="hidden by .debugignore"):
        ws.write_text("hidden/new.py", "x")
    assert not (ws.root / "secret.txt").exists()  # ignored files are never copied


def test_readonly_visible_but_not_writable(ws):
    assert ws.is_readonly("tests/test_code.py")
    assert "assert add" in ws.read_text("tests/test_code.py")
    with pytest.raises(WorkspaceError, match="read-only"):
        ws.write_text("tests/test_code.py", "")
    with pytest.raises(WorkspaceError, match="read-only"):
        ws.write_text("tests/test_new.py", "")
    assert "tests/test_code.py" in ws.files()


def test_extra_patterns(make_repo):
    repo = make_repo({"a.py": "a\n", "b.py": "b\n", "c.py": "c\n"})
    ws = Workspace(repo, ignore=["a.py"], readonly=["b.py"])
    try:
        assert ws.files() == ["b.py", "c.py"]
        with pytest.raises(WorkspaceError):
            ws.read_text("a.py")
        with pytest.raises(WorkspaceError, match="read-only"):
            ws.write_text("b.py", "x")
        ws.write_text("c.py", "x\n")
    finally:
        ws.cleanup()


@pytest.mark.parametrize("path,message", [
    ("../outside.py", "leads outside"),
    ("pkg/../../outside.py", "leads outside"),
    ("/etc/passwd", "is absolute"),
    ("..", "leads outside"),
])
def test_escaping_paths_refused(ws, path, message):
    with pytest.raises(WorkspaceError, match=message):
        ws.resolve(path)
    with pytest.raises(WorkspaceError, match=message):
        ws.write_text(path, "x")


def test_symlinks_outside_refused_inside_allowed(make_repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("outside data\n")
    repo = make_repo({"code.py": "print(1)\n"})
    os.symlink("/etc/passwd", repo / "passwd")
    os.symlink(outside, repo / "outdir")
    os.symlink("code.py", repo / "alias.py")
    (repo / "gold.py").write_text("GOLD = 1\n")
    (repo / ".debugignore").write_text("gold.py\n")
    os.symlink("gold.py", repo / "gold_alias.py")
    ws = Workspace(repo)
    try:
        with pytest.raises(WorkspaceError, match="symbolic link"):
            ws.read_text("passwd")
        with pytest.raises(WorkspaceError, match="symbolic link"):
            ws.read_text("outdir/data.txt")
        with pytest.raises(WorkspaceError, match="symbolic link"):
            ws.write_text("outdir/data.txt", "pwned\n")
        assert (outside / "data.txt").read_text() == "outside data\n"
        assert ws.read_text("alias.py") == "print(1)\n"
        with pytest.raises(WorkspaceError, match="hidden"):  # a link to an ignored file
            ws.read_text("gold_alias.py")
        assert ws.files() == ["alias.py", "code.py"]
    finally:
        ws.cleanup()


def test_binary_and_folder_refused(ws):
    (ws.root / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    with pytest.raises(WorkspaceError, match="binary"):
        ws.read_text("blob.bin")
    with pytest.raises(WorkspaceError, match="folder"):
        ws.read_text("pkg")


def test_changed_files_patch_and_git_apply(ws, tmp_path):
    ws.write_text("code.py", "def add(a, b):\n    return a + b")  # no newline at end
    ws.write_text("pkg/new.py", "NEW = True\n")
    (ws.root / "pkg" / "util.py").unlink()
    (ws.root / "hidden").mkdir()  # not copied: ignored; the agent's code makes it again
    (ws.root / "hidden" / "answers.py").write_text("changed but hidden\n")
    os.makedirs(ws.root / "__pycache__")
    (ws.root / "__pycache__" / "code.cpython-311.pyc").write_bytes(b"\0junk")
    assert ws.changed_files() == ["code.py", "pkg/new.py", "pkg/util.py"]

    patch = ws.patch()
    assert "diff --git a/code.py b/code.py" in patch
    assert "+++ b/pkg/new.py" in patch and "--- /dev/null" in patch
    assert "+++ /dev/null" in patch
    assert "\\ No newline at end of file" in patch
    assert "hidden" not in patch

    # The patch turns a copy of the original into the working copy (real git).
    check = tmp_path / "check"
    shutil.copytree(ws.source, check, ignore=shutil.ignore_patterns(".git"))
    (check / "patch.diff").write_text(patch)
    subprocess.run(["git", "apply", "patch.diff"], cwd=check, check=True,
                   capture_output=True)
    for rel in ("code.py", "pkg/new.py"):
        assert (check / rel).read_bytes() == (ws.root / rel).read_bytes()
    assert not (check / "pkg" / "util.py").exists()


def test_no_change_means_empty_patch(ws):
    ws.write_text("code.py", FILES["code.py"])  # rewritten with the same text
    assert ws.changed_files() == []
    assert ws.patch() == ""


def test_apply_to_source(ws):
    ws.write_text("code.py", "fixed\n")
    ws.write_text("pkg/extra.py", "E = 1\n")
    (ws.root / "pkg" / "util.py").unlink()
    assert ws.apply_to_source() == ["code.py", "pkg/extra.py", "pkg/util.py"]
    assert (ws.source / "code.py").read_text() == "fixed\n"
    assert (ws.source / "pkg" / "extra.py").read_text() == "E = 1\n"
    assert not (ws.source / "pkg" / "util.py").exists()
    assert ws.changed_files() == []


def test_refresh_sees_writes(ws):
    ws.refresh()
    version = ws.version
    assert not ws.refresh() and ws.version == version
    ws.write_text("code.py", "x = 1\n")
    assert ws.refresh() and ws.version != version
    (ws.root / "pkg" / "util.py").write_text("X = 2\n")  # written by someone else
    assert ws.refresh()


def test_cleanup_idempotent(ws):
    root = ws.root
    ws.cleanup()
    ws.cleanup()
    assert not root.exists()


def test_missing_source_is_clear(tmp_path):
    with pytest.raises(WorkspaceError, match="does not exist"):
        Workspace(tmp_path / "nope")
