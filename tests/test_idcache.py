"""An overlay working copy's starting blob ids come from the per-original cache: a later
session's start reads no file of the original, and a file changed since is read again."""

from __future__ import annotations

import os

import pytest

from dgym_tui.core.fs import idcache
from dgym_tui.core.fs.gitpatch import blob_id
from dgym_tui.core.fs.workspace import Workspace


@pytest.fixture
def counted_reads(monkeypatch, tmp_path):
    """A cache folder of the test's own, files kept however recent, and the list of the
    original's files ``Workspace._blob`` reads."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(idcache, "RACY_SECONDS", 0)
    reads: list[str] = []
    real = Workspace._blob

    def spy(tree, rel):
        reads.append(rel)
        return real(tree, rel)

    monkeypatch.setattr(Workspace, "_blob", staticmethod(spy))
    return reads


def _ids(repo) -> dict[str, str]:
    ws = Workspace(repo, overlay=True,
                   run_as=(1_500_000_002, 1_500_000_002) if os.geteuid() == 0 else None)
    try:
        return ws.start_ids()
    finally:
        ws.cleanup()


def test_a_later_start_reads_no_unchanged_file(make_repo, counted_reads):
    repo = make_repo({"a.py": "A = 1\n", "pkg/m.py": "M = 1\n", ".debugignore": "s.txt\n",
                      "s.txt": "secret\n"})
    os.symlink("a.py", repo / "link.py")
    first = _ids(repo)
    assert first == {"a.py": blob_id(b"A = 1\n"), "pkg/m.py": blob_id(b"M = 1\n"),
                     "link.py": blob_id(b"a.py")}
    assert sorted(counted_reads) == ["a.py", "link.py", "pkg/m.py"]
    counted_reads.clear()
    assert _ids(repo) == first
    assert counted_reads == []


def test_a_file_changed_since_is_read_again_even_with_its_old_size_and_time(make_repo,
                                                                            counted_reads):
    repo = make_repo({"a.py": "A = 1\n", "b.py": "B = 1\n"})
    _ids(repo)
    st = os.stat(repo / "a.py")
    (repo / "a.py").write_text("A = 2\n")  # same size; the old times put back
    os.utime(repo / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    counted_reads.clear()
    assert _ids(repo)["a.py"] == blob_id(b"A = 2\n")
    assert counted_reads == ["a.py"]
