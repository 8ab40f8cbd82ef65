"""An overlay working copy looks up its folders ahead, in a thread (core/fs/lookahead.py).

The thread makes, in the merged view through the host's own descriptor, the lookups a
test run's collection makes first (the root's folders, theirs, and ``__init__.py``,
``pyvenv.cfg``, ``conda-meta`` in each), so a fresh overlay's first lookups are paid
while the eval's command starts. These tests check what it must never do: follow a
link the sandbox made, visit what the overlay hides, write anything (the upper layer stays
empty, the patch empty, the original unchanged), run past its bounds, or outlive the
working copy; on the local, bwrap and docker terminals, where the working copy is shared.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from dgym_tui.core.fs import lookahead
from dgym_tui.core.fs.workspace import Workspace

FILES = {
    "a.py": "A = 1\n",
    "pkg/__init__.py": "",
    "pkg/m.py": "M = 1\n",
    "pkg/sub/deep.py": "D = 1\n",
    "pkg/sub/deeper/x.py": "X = 1\n",
    "tests/unit/test_a.py": "def test_a():\n    assert True\n",
    "tests/data/d.txt": "d\n",
    "data/secret/s.txt": "secret\n",
    "pkg/__pycache__/m.cpython-311.pyc": "",
    ".git/refs/heads/main": "0\n",
    ".debugignore": "data/secret/\n",
}
VISITED = ["data", "pkg", "tests", "data/public", "pkg/sub", "tests/data", "tests/unit"]
#: What an eval of ``tests/unit/test_a.py`` looks up: the root's folders, then only theirs
#: of ``tests`` (pytest lists the root and ``tests`` on its way to the file).
VISITED_FOR_TESTS = ["data", "pkg", "tests", "tests/data", "tests/unit"]


def _ids() -> tuple[int, int] | None:
    return (1_500_000_003, 1_500_000_003) if os.geteuid() == 0 else None


@pytest.fixture
def repo(make_repo, tmp_path):
    root = make_repo({**FILES, "data/public/p.txt": "p\n"})
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (root / "linked").symlink_to(outside)  # a link to a folder: never entered
    (root / "pkg" / "linked").symlink_to(outside)
    return root


@pytest.fixture
def working_copy(repo):
    ws = Workspace(repo, overlay=True, run_as=_ids())
    yield ws
    ws.cleanup()


def _sorted_by_level(paths: list[str]) -> list[str]:
    return sorted(paths, key=lambda rel: (rel.count("/"), rel))


def test_the_root_folders_then_theirs_are_looked_up_never_a_link_or_a_hidden_entry(
        working_copy):
    """Two levels, the root's first; links, caches, ``.git`` and ignored folders (whited
    out: absent from the merged view) are not visited; ``pkg/sub/deeper`` is too deep."""
    visited = lookahead.look_up(working_copy._tree.fd)
    assert _sorted_by_level(visited) == VISITED
    assert {rel.count("/") for rel in visited[:3]} == {0}  # the root's folders first


def test_one_level_down_only_in_the_folders_the_test_command_names(working_copy):
    """pytest lists the root and each folder on the way to a path it is given: the second
    level is looked up in those only (a test file at the root: none), every folder when
    the command names no path or does not run pytest itself."""
    fd = working_copy._tree.fd
    assert _sorted_by_level(lookahead.look_up(fd, within={"tests"})) == VISITED_FOR_TESTS
    assert _sorted_by_level(lookahead.look_up(fd, within=set())) == ["data", "pkg", "tests"]
    folders = lookahead.test_folders
    assert folders("python -m pytest -q -p no:cacheprovider test_target.py") == set()
    assert folders("PYTEST_ADDOPTS=-q python -m pytest tests/unit/test_a.py::test_a "
                   "pkg/sub/t.py") == {"tests", "pkg"}
    for unknown in ("pytest", "pytest tests", "python run_tests.py", "cd sub && pytest x/t.py",
                    "pytest /abs/t.py", "pytest ../up/t.py", "pytest 'unclosed"):
        assert folders(unknown) is None, unknown


def _layer(path: str) -> list[tuple[str, int]]:
    """Every entry below ``path`` with its mode (whiteouts are device nodes or marked
    files), sorted."""
    out = []
    for folder, dirs, files in os.walk(path):
        for name in dirs + files:
            full = os.path.join(folder, name)
            out.append((os.path.relpath(full, path), os.lstat(full).st_mode))
    return sorted(out)


def test_a_working_copy_looks_up_ahead_and_the_lookups_change_nothing(repo, monkeypatch):
    """The working copy's own thread visits the same folders; afterwards its upper layer
    holds exactly what one without the thread holds (the whiteouts: nothing copied up
    or written), the patch is empty and the original unchanged."""
    before = sorted((p.relative_to(repo), p.is_symlink()) for p in repo.rglob("*"))
    ws = Workspace(repo, overlay=True, run_as=_ids())
    try:
        assert ws._lookahead is None  # started by the eval, when its command starts
        ws.look_ahead()
        ws.look_ahead()  # once per working copy
        assert ws._lookahead.wait(60)
        assert _sorted_by_level(ws._lookahead.visited) == VISITED
        upper = _layer(ws.overlay.upper)
        assert ws.patch() == ""
        assert ws.changed_files() == []
    finally:
        ws.cleanup()

    class Off:
        def __init__(self, fd: int, delay: float = 0.0, within=None) -> None:
            pass

        def stop(self) -> None:
            pass

    monkeypatch.setattr("dgym_tui.core.fs.workspace.LookAhead", Off)
    plain = Workspace(repo, overlay=True, run_as=_ids())
    plain.look_ahead()
    try:
        assert upper == _layer(plain.overlay.upper)
        assert {rel for rel, _mode in upper} >= {".git", ".debugignore", "data/secret"}
    finally:
        plain.cleanup()
    assert sorted((p.relative_to(repo), p.is_symlink()) for p in repo.rglob("*")) == before


def test_a_folder_swapped_for_a_link_is_not_entered(working_copy, tmp_path):
    """What the sandbox did before the thread got there (a folder replaced by a link to a
    host folder) is not followed: neither looked up in nor listed."""
    outside = tmp_path / "host"
    (outside / "below").mkdir(parents=True)
    root = working_copy.root
    shutil.rmtree(root / "tests")
    os.symlink(outside, root / "tests")
    visited = lookahead.look_up(working_copy._tree.fd)
    assert not any(rel == "tests" or rel.startswith("tests/") for rel in visited)
    assert "pkg/sub" in visited


def test_the_lookups_are_bounded(working_copy, monkeypatch):
    """At most MAX_FOLDERS folders, MAX_LISTED entries of the root's folders read, and a
    stop request is honoured at the next folder."""
    monkeypatch.setattr(lookahead, "MAX_FOLDERS", 2)
    visited = lookahead.look_up(working_copy._tree.fd)
    assert len(visited) == 2 and all("/" not in rel for rel in visited)
    monkeypatch.setattr(lookahead, "MAX_FOLDERS", 2_000)
    monkeypatch.setattr(lookahead, "MAX_LISTED", 1)  # one entry of one root folder read
    visited = lookahead.look_up(working_copy._tree.fd)
    assert len([rel for rel in visited if "/" in rel]) <= 1
    assert len([rel for rel in visited if "/" not in rel]) == 3
    stop = threading.Event()
    stop.set()
    assert lookahead.look_up(working_copy._tree.fd, stop) == []
    waiting = lookahead.LookAhead(working_copy._tree.fd, delay=600)  # stopped while it waits
    waiting.stop()
    assert not waiting.running and waiting.visited == []


def test_the_thread_ends_with_the_working_copy_and_keeps_no_descriptor(repo):
    fds_before = set(os.listdir("/proc/self/fd"))
    ws = Workspace(repo, overlay=True, run_as=_ids())
    ws.look_ahead()
    ahead = ws._lookahead
    ws.cleanup()
    assert not ahead.running
    assert not [t for t in threading.enumerate() if t.name == "dgym-lookahead"]
    assert set(os.listdir("/proc/self/fd")) <= fds_before


def test_a_copy_looks_up_nothing_ahead(repo):
    ws = Workspace(repo)
    try:
        ws.look_ahead()
        assert ws._lookahead is None
    finally:
        ws.cleanup()


@pytest.fixture(params=["local", "bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def terminal_kind(request):
    if request.param != "local":
        request.getfixturevalue("docker_ready" if request.param == "docker" else "bwrap_ready")
    return request.param


def test_an_episode_on_each_terminal_looks_up_ahead_and_its_eval_sees_the_tree(
        terminal_kind, repo, make_env, fast_pytest):
    """local, bwrap, docker: the reset's eval starts the working copy's lookups (the
    root's folders, then those of ``tests``, the folder its test path names) as its
    command starts, it collects and passes as in a plain tree, and
    nothing of the thread is left after close()."""
    env = make_env(repo, terminal=terminal_kind, terminal_options={"overlay": True},
                   entrypoint=f"{fast_pytest} tests/unit/test_a.py")
    result = env.reset()
    ahead = env.workspace._lookahead
    assert ahead is not None
    assert "1 passed" in result.observation
    assert ahead.wait(60)
    assert _sorted_by_level(ahead.visited) == VISITED_FOR_TESTS
    assert env.workspace.changed_files() == []
    folder = Path(env.workspace.folder)
    env.close()
    assert not ahead.running
    assert not folder.exists()
