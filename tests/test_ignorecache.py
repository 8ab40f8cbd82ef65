"""An overlay working copy's ignored entries come from a cache per original: a later working
copy of an unchanged original walks no folder, and any change that could alter what is
hidden (an entry added, removed or renamed in any folder, the rules) makes it walk again,
so ignored entries stay absent from the merged view."""

from __future__ import annotations

import json
import os
import time

import pytest

from dgym_tui.core.fs import idcache, ignorecache
from dgym_tui.core.fs.workspace import Workspace

FILES = {"a.py": "A = 1\n", "b.py": "B = 1\n", "pkg/m.py": "M = 1\n",
         "pkg/sub/deep.py": "D = 1\n", "pkg/.git/HEAD": "ref\n", ".git/config": "[core]\n",
         "data/secret.txt": "secret\n", "data/public.txt": "public\n",
         ".debugignore": "data/secret.txt\n"}
HIDDEN = [".debugignore", ".git", "data/secret.txt", "pkg/.git"]


@pytest.fixture
def walks(monkeypatch, tmp_path) -> list[int]:
    """A cache folder of the test's own, folders kept once 0.05 s old, and one item per
    walk of an original's names."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(idcache, "RACY_SECONDS", 0.05)
    calls: list[int] = []
    real = ignorecache.walk_ignored

    def spy(fd, hidden):
        calls.append(1)
        return real(fd, hidden)

    monkeypatch.setattr(ignorecache, "walk_ignored", spy)
    return calls


@pytest.fixture
def repo(make_repo):
    root = make_repo(FILES)
    time.sleep(0.1)  # past the racy window: the first working copy's walk is kept
    return root


def _hidden(repo, ignore=()) -> list[str]:
    """The working copy's ignored entries, each checked absent from its merged view."""
    ws = Workspace(repo, overlay=True, ignore=ignore,
                   run_as=(1_500_000_002, 1_500_000_002) if os.geteuid() == 0 else None)
    try:
        for rel in ws.ignored_at_start:
            assert ws.kind(rel, follow=False) is None, rel  # whited out
        return ws.ignored_at_start
    finally:
        ws.cleanup()


def test_a_later_working_copy_of_an_unchanged_original_walks_no_folder(repo, walks):
    assert _hidden(repo) == HIDDEN
    assert len(walks) == 1
    assert _hidden(repo) == HIDDEN
    assert _hidden(repo) == HIDDEN
    assert len(walks) == 1


def _rewrite_rules(repo):
    with open(repo / ".debugignore", "r+") as f:  # same file, its folder untouched
        f.write("data/public.txt\n")


CHANGES = {
    "a .git made in a listed folder": (lambda r: (r / "pkg/sub/.git").mkdir(),
                                       [*HIDDEN, "pkg/sub/.git"]),
    "a new folder holding a .git": (lambda r: (r / "new/.git").mkdir(parents=True),
                                    [*HIDDEN, "new/.git"]),
    "a folder renamed": (lambda r: (r / "pkg").rename(r / "pkg2"),
                         [".debugignore", ".git", "data/secret.txt", "pkg2/.git"]),
    "an ignored file deleted": (lambda r: (r / "data/secret.txt").unlink(),
                                [".debugignore", ".git", "pkg/.git"]),
    "a .git folder replaced by a file": (
        lambda r: (os.rename(r / "pkg/.git", r / "git-old"), (r / "pkg/.git").write_text("x")),
        HIDDEN),
    "the rules rewritten in place": (_rewrite_rules,
                                     [".debugignore", ".git", "data/public.txt", "pkg/.git"]),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_a_change_that_can_alter_what_is_hidden_walks_again(repo, walks, change):
    make, expected = CHANGES[change]
    assert _hidden(repo) == HIDDEN
    make(repo)
    assert _hidden(repo) == sorted(expected)
    assert len(walks) == 2


def test_other_ignore_patterns_are_another_cache_key(repo, walks):
    assert _hidden(repo) == HIDDEN
    assert _hidden(repo, ignore=["b.py"]) == sorted([*HIDDEN, "b.py"])
    assert _hidden(repo) == HIDDEN
    assert len(walks) == 3


@pytest.mark.parametrize("found", [["../outside"], ["/etc/passwd"], ["nowhere/x"], "text"])
def test_a_cache_file_naming_a_path_outside_a_listed_folder_is_not_used(repo, walks, found):
    assert _hidden(repo) == HIDDEN
    (path,) = (os.path.join(root, name) for root, _dirs, files
               in os.walk(idcache.cache_folder("ignored-names")) for name in files)
    with open(path) as f:
        data = json.load(f)
    data["found"] = found
    with open(path, "w") as f:
        json.dump(data, f)
    assert _hidden(repo) == HIDDEN
    assert len(walks) == 2


def test_an_original_changed_just_now_is_not_kept(make_repo, walks, monkeypatch):
    monkeypatch.setattr(idcache, "RACY_SECONDS", 2.0)
    root = make_repo(FILES)
    assert _hidden(root) == HIDDEN
    (root / "pkg/sub/.git").mkdir()  # maybe within the same clock tick: times may not move
    assert _hidden(root) == sorted([*HIDDEN, "pkg/sub/.git"])
    assert len(walks) == 2
    assert not idcache.cache_folder("ignored-names").exists()


def test_the_owners_seen_by_the_walk_are_kept_with_it(repo, walks):
    """The owners of the shown entries come from the walk, then from the cache; a cache
    file whose owners are malformed counts as missing."""
    seen = []
    for _ in range(2):
        fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
        try:
            scan = ignorecache.ignored_entries(repo, fd, ["x"], False,
                                               lambda rel, d: rel.endswith(".git"))
        finally:
            os.close(fd)
        seen.append(scan.owners)
    mine = (os.getuid(), os.getgid())
    assert seen[0] == seen[1] == {mine: seen[0][mine]} and len(walks) == 1
    assert "/.git" not in seen[0][mine]
    cache = idcache.CacheFile("ignored-names", repo)
    data = cache.load()
    data["owners"] = [[-1, 0, "a.py"]]
    cache.save(data)
    fd = os.open(repo, os.O_RDONLY | os.O_DIRECTORY)
    try:
        ignorecache.ignored_entries(repo, fd, ["x"], False, lambda rel, d: rel.endswith(".git"))
    finally:
        os.close(fd)
    assert len(walks) == 2
