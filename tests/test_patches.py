"""core/patches.py: reading unified diffs with unidiff and applying them to texts and folders."""

from __future__ import annotations

import subprocess

import pytest

from dgym_tui.core.fs.gitpatch import text_diff
from dgym_tui.core.fs.patches import (
    PatchError,
    apply_patch,
    original_texts,
    parse_patch,
    patched_files,
    patched_text,
    reverse,
)

OLD = "".join(f"line {i}\n" for i in range(1, 31))
NEW = OLD.replace("line 3\n", "line three\n").replace("line 25\n", "") + "tail"


def test_patch_round_trips_both_ways():
    (fp,) = parse_patch(text_diff("f.py", OLD, NEW))
    assert [h.old_start for h in fp.hunks] == [1, 22]
    assert patched_text(fp, OLD) == NEW  # the missing final newline is kept
    assert patched_text(reverse(fp), NEW) == OLD


def test_created_and_deleted_files_reverse():
    (created,) = parse_patch(text_diff("n.py", None, "a\nb\n"))
    assert created.old_path is None and patched_text(created, None) == "a\nb\n"
    assert patched_text(reverse(created), "a\nb\n") is None
    (deleted,) = parse_patch(text_diff("d.py", "x\n", None))
    assert patched_text(deleted, "x\n") is None
    assert patched_text(reverse(deleted), None) == "x\n"


def test_hunk_follows_its_context_when_lines_moved():
    (fp,) = parse_patch(text_diff("f.py", OLD, NEW))
    shifted = "# header\n# more\n" + OLD
    assert patched_text(fp, shifted) == "# header\n# more\n" + NEW
    with pytest.raises(PatchError, match="does not apply to f.py"):
        patched_text(fp, OLD.replace("line 2\n", "changed\n"))


def test_binary_files_are_refused_or_skipped():
    patch = ("diff --git a/img.png b/img.png\nBinary files a/img.png and b/img.png differ\n"
             + text_diff("f.py", "a\n", "b\n"))
    with pytest.raises(PatchError, match="img.png: binary"):
        parse_patch(patch)
    assert [fp.path for fp in parse_patch(patch, skip_binary=True)] == ["f.py"]


def test_malformed_patch_is_refused():
    with pytest.raises(PatchError, match="malformed"):
        parse_patch("--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n a\n-b\n")


def test_folder_apply_matches_git_apply_and_is_all_or_nothing(tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for root in (ours, theirs):
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / "f.py").write_text(OLD)
        (root / "gone.py").write_text("bye\n")
    patch = (text_diff("pkg/f.py", OLD, NEW) + text_diff("gone.py", "bye\n", None)
             + text_diff("pkg/new.py", None, "hello\n"))
    assert patched_files(patch, ours) == {"pkg/f.py": NEW, "gone.py": None,
                                          "pkg/new.py": "hello\n"}
    assert apply_patch(patch, ours) == ["pkg/f.py", "gone.py", "pkg/new.py"]
    subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=theirs, check=True)
    for rel in ("pkg/f.py", "pkg/new.py"):
        assert (ours / rel).read_text() == (theirs / rel).read_text()
    assert not (ours / "gone.py").exists() and not (theirs / "gone.py").exists()
    # a patch whose second file does not apply writes nothing
    bad = text_diff("pkg/new.py", "hello\n", "hi\n") + text_diff("pkg/f.py", OLD, NEW)
    with pytest.raises(PatchError):
        apply_patch(bad, ours)
    assert (ours / "pkg/new.py").read_text() == "hello\n"


def test_original_texts_come_back_from_the_current_ones():
    patch = (text_diff("f.py", OLD, NEW) + text_diff("gone.py", "bye\n", None)
             + text_diff("new.py", None, "hello\n"))
    now = {"f.py": NEW, "new.py": "hello\n"}
    assert original_texts(patch, now.get) == {"f.py": OLD, "gone.py": "bye\n", "new.py": None}
    assert original_texts(patch, now.get, skip={"f.py", "new.py"}) == {"gone.py": "bye\n"}
    with pytest.raises(PatchError):
        original_texts(patch, {"f.py": OLD}.get)  # the current text is not the patch's result
