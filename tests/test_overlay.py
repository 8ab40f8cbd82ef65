"""The overlay working copy (the default on local, bwrap and docker) against hostile code.

Nothing is copied at reset: the original is the overlay's read-only lower layer and what
the sandbox changes lands in an upper layer of the episode's own. These tests let the
sandbox do what a hostile program would to that design (delete and re-make folders so the
upper layer marks them opaque, make whiteout-looking nodes, links, FIFOs, rename folders of
the original holding ignored files) and check the guarantees of a copy: the original never
changes, ``patch()`` turns the original into exactly what the sandbox sees, ignored files
never reach the sandbox or the patch, a fork sees what its parent sees, grading uses the
pristine read-only files, and nothing of the working copy outlives the episode.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "TOP-SECRET-6d1f"
FILES = {
    "a.py": "A = 1\n",
    "b.py": "B = 1\n",
    "pkg/m.py": "M = 1\n",
    "pkg/n.py": "N = 1\n",
    "pkg/sub/deep.py": "D = 1\n",
    "solid/f.py": "F = 1\n",
    "data/secret.txt": SECRET + "\n",
    "data/public.txt": "public\n",
    "tests/test_a.py": "from a import A\n\n\ndef test_a():\n    assert A == 1\n",
    ".debugignore": "data/secret.txt\n",
    ".debugreadonly": "tests/\n",
    ".git/config": "[core]\n",
}

#: Prints, as one JSON line, every file and link the sandbox sees (caches left out):
#: ``{rel: "f:<base64>" | "x:<base64>" (executable) | "l:<target>"}``.
SEEN = r"""python3 - <<'EOF'
import base64, json, os, stat
out = {}
for folder, dirs, files in os.walk("."):
    dirs[:] = [d for d in dirs if d not in ("__pycache__", ".pytest_cache")]
    for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
        path = os.path.join(folder, name)
        rel = os.path.relpath(path, ".")
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            out[rel] = "l:" + os.readlink(path)
        elif stat.S_ISREG(st.st_mode):
            with open(path, "rb") as f:
                kind = "x:" if st.st_mode & 0o100 else "f:"
                out[rel] = kind + base64.b64encode(f.read()).decode()
print(json.dumps(out, sort_keys=True))
EOF"""


@pytest.fixture(params=["local", "bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def overlay_env(request, make_repo, make_env, fast_pytest):
    """``make() -> (env, repo)``: a reset episode on the test's terminal (local, bwrap,
    docker) whose working copy is an overlay."""
    kind = request.param
    if kind != "local":
        request.getfixturevalue("docker_ready" if kind == "docker" else "bwrap_ready")

    def make(entrypoint: str = "true", readonly: bool = True):
        files = FILES if readonly else {k: v for k, v in FILES.items() if k != ".debugreadonly"}
        repo = make_repo(files)
        env = make_env(repo, terminal=kind, terminal_options={"overlay": True},
                       entrypoint=entrypoint)
        env.reset()
        assert env.workspace.overlay is not None
        return env, repo

    return make


def _run(env, command: str) -> str:
    res = env.terminal.run(command, timeout=60)
    return res.output


def _seen(env) -> dict[str, str]:
    """Every visible file / link as the sandbox sees it (the rule files and ignored ones out)."""
    out = json.loads(_run(env, SEEN).strip().splitlines()[-1])
    for rel in list(out):
        if env.workspace.is_ignored(rel):
            del out[rel]
    return out


def _tree(root: Path) -> dict[str, tuple]:
    """Every entry of ``root`` with its content / target, mode and mtime (nothing followed)."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            st = path.lstat()
            data = (os.readlink(path) if path.is_symlink()
                    else path.read_bytes() if path.is_file() else None)
            out[str(path.relative_to(root))] = (data, st.st_mode, st.st_mtime_ns)
    return out


def _applied(repo: Path, patch: str, tmp_path: Path) -> dict[str, str]:
    """The original with ``patch`` applied by git, seen as :data:`SEEN` sees a tree."""
    copy = tmp_path / "applied"
    shutil.copytree(repo, copy, symlinks=True)
    if patch:
        subprocess.run(["git", "apply", "--binary", "-"], cwd=copy, input=patch.encode(),
                       check=True, capture_output=True)
    out = {}
    for folder, _dirs, files in os.walk(copy):
        for name in files:
            path = Path(folder, name)
            rel = str(path.relative_to(copy))
            if path.is_symlink():
                out[rel] = "l:" + os.readlink(path)
            else:
                kind = "x:" if path.stat().st_mode & 0o100 else "f:"
                out[rel] = kind + base64.b64encode(path.read_bytes()).decode()
    return out


def _visible(env, seen: dict[str, str]) -> dict[str, str]:
    return {rel: v for rel, v in seen.items() if not env.workspace.is_ignored(rel)}


HOSTILE = r"""
set +e
echo 'A = 2' > a.py                                  # a change
rm b.py                                              # a deletion: a whiteout upstairs
rm -rf pkg && mkdir pkg && echo 'X = 1' > pkg/x.py   # an opaque folder: m, n, sub gone
rm -rf solid && echo 'now a file' > solid            # a folder replaced by a file
mkdir c && mv a.py c/a.py && cp c/a.py a.py          # a rename of a changed file
chmod +x a.py                                        # a mode change
ln -s /etc/passwd link.py                            # a link out (kept as a link)
mkfifo fifo                                          # a FIFO (never in a patch)
python3 -c "import os, stat; os.mknod('wh', stat.S_IFCHR, 0)"   # a whiteout-looking node
mv data data2                                        # a folder of the original (EXDEV: copied)
true
"""


@pytest.mark.parametrize("readonly", [True, False], ids=["read-only-rules", "no-rules"])
def test_the_patch_turns_the_original_into_what_the_sandbox_sees(overlay_env, tmp_path,
                                                                 readonly):
    """With read-only rules the index of every file is made at reset; without, only the upper
    layer says what changed (the original's files below a remade folder included)."""
    env, repo = overlay_env(readonly=readonly)
    assert (env.workspace._index is None) != readonly
    before = _tree(repo)
    _run(env, HOSTILE)
    seen = _seen(env)
    assert "pkg/m.py" not in seen and "pkg/x.py" in seen and "b.py" not in seen
    assert seen["solid"].startswith("f:") and "solid/f.py" not in seen
    patch = env.patch()
    assert _visible(env, _applied(repo, patch, tmp_path)) == _visible(env, seen)
    assert set(env.workspace.changed_files()) >= {"a.py", "b.py", "pkg/m.py", "pkg/n.py",
                                                   "pkg/sub/deep.py", "pkg/x.py", "solid",
                                                   "solid/f.py", "c/a.py", "link.py"}
    assert "fifo" not in patch and "diff --git a/wh" not in patch
    assert _tree(repo) == before  # the original never changed (content, modes, times)


def test_ignored_files_never_reach_the_sandbox_or_the_patch(overlay_env):
    """Absent, as from a copy: whited out in the upper layer before it is mounted."""
    env, repo = overlay_env()
    absent = _run(env, "cat data/secret.txt .git/config 2>&1")
    assert absent.count("No such file") == 2, absent
    listed = _run(env, "ls -a . data").split()
    assert ".git" not in listed and "secret.txt" not in listed and "public.txt" in listed
    out = _run(env, "cat data/secret.txt; mv data moved; cp -r data copied; "
                    "ln data/secret.txt hard; cat .debugignore; true")
    out += _run(env, "cat moved/secret.txt copied/secret.txt hard data/secret.txt 2>&1; "
                     "grep -r TOP . 2>&1; ls -la . .git 2>&1; true")
    assert SECRET not in out
    patch = env.patch()
    assert SECRET not in patch
    for rel in ("moved/secret.txt", "copied/secret.txt", "hard"):
        with pytest.raises(Exception):  # noqa: B017,PT011  absent, hidden or empty: never the secret
            if SECRET not in env.workspace.read_text(rel):
                raise FileNotFoundError(rel)
    assert SECRET in (repo / "data/secret.txt").read_text()


def test_a_fork_sees_deletions_and_remade_folders_as_its_parent(overlay_env):
    env, _repo = overlay_env(readonly=False)
    _run(env, HOSTILE)
    twin = env.fork()
    try:
        assert twin.workspace.overlay is not None
        assert _seen(twin) == _seen(env)
        assert twin.patch() == env.patch()
        _run(twin, "echo 'B = 3' > b.py; rm pkg/x.py")
        assert "b.py" not in _seen(env) and "pkg/x.py" in _seen(env)
        assert twin.patch() != env.patch()
    finally:
        twin.close()


def test_host_tools_never_follow_a_link_the_sandbox_made(overlay_env):
    env, _repo = overlay_env()
    _run(env, "rm -rf pkg && ln -s / pkg; ln -s /etc/shadow shadow.py; ln -s .. up")
    for path in ("pkg/etc/passwd", "shadow.py", "up/etc/passwd"):
        result = env.step({"name": "view", "arguments": {"path": path}})
        assert "root:" not in result.observation
    grep = env.step({"name": "grep", "arguments": {"pattern": "root:"}})
    assert "root:x" not in grep.observation
    assert "+/etc/shadow" in env.patch()  # the link itself, as a link


def test_grading_runs_the_pristine_read_only_tests(overlay_env, fast_pytest):
    env, _repo = overlay_env(f"{fast_pytest} tests/test_a.py")
    _run(env, "echo 'A = 2' > a.py; rm -rf tests; mkdir tests; "
              "printf 'def test_a():\\n    pass\\n' > tests/test_a.py; true")
    summary, _output = env.grade_submission()
    assert summary.failed == 1 and summary.passed == 0
    summary, _output = env.run_eval()  # the episode's own copy is put back too
    assert summary.failed == 1 and summary.passed == 0


def test_nothing_of_the_working_copy_outlives_the_episode(overlay_env):
    env, _repo = overlay_env()
    _run(env, "echo 'A = 2' > a.py")
    upper = Path(env.workspace.overlay.upper)
    base = upper.parent
    assert (upper / "a.py").read_text() == "A = 2\n"  # the change is in the upper layer
    env.close()
    assert not base.exists()
    assert str(base) not in Path("/proc/self/mountinfo").read_text()


def test_apply_back_writes_the_original_and_the_episode_goes_on(overlay_env):
    """Apply-back writes the lower layer while it is mounted: the merged view keeps the
    episode's files (they are in the upper layer), the patch is then empty, later changes
    count again."""
    env, repo = overlay_env(readonly=False)
    _run(env, "echo 'A = 2' > a.py; rm b.py; echo 'NEW = 1' > pkg/new.py")
    assert sorted(env.apply_to_source()) == ["a.py", "b.py", "pkg/new.py"]
    assert (repo / "a.py").read_text() == "A = 2\n" and not (repo / "b.py").exists()
    assert (repo / "pkg/new.py").read_text() == "NEW = 1\n"
    assert env.patch() == ""
    _run(env, "echo 'A = 3' > a.py")
    assert env.workspace.changed_files() == ["a.py"]
    assert "-A = 2\n+A = 3" in env.patch()


@pytest.mark.docker
def test_docker_binds_an_overlay_shown_as_the_episode_uid_and_mounted_nowhere_on_the_host(
        make_repo, make_env, docker_ready):
    """The container writes the original's files as its own random uid (an idmapped lower
    layer: nothing handed over with chown, the original keeps its owner), and once it has
    started the overlay's host path is unmounted (the container's mount and the host's
    descriptor hold it)."""
    if os.geteuid() != 0:
        pytest.skip("the docker terminal's overlay is mounted by root")
    repo = make_repo({"a.py": "A = 1\n", "pkg/m.py": "M = 1\n"})
    for path in (repo, repo / "a.py", repo / "pkg", repo / "pkg/m.py"):
        os.chown(path, 4242, 4242)  # a user's repository: shown as the sandbox's
    env = make_env(repo, terminal="docker", entrypoint="true")
    env.reset()
    ws = env.workspace
    assert ws.overlay is not None and ws.run_as is not None
    uid = ws.run_as[0]
    out = _run(env, "id -u; stat -c %u a.py pkg/m.py; echo 'A = 2' > a.py && echo wrote")
    assert out.split() == [str(uid), str(uid), str(uid), "wrote"], out
    assert (repo / "a.py").read_text() == "A = 1\n" and (repo / "a.py").stat().st_uid == 4242
    assert ws.read_text("a.py") == "A = 2\n"  # the host reads the container's view
    assert str(Path(ws.overlay.merged).parent) not in Path("/proc/self/mountinfo").read_text()
    ws.write_text("pkg/m.py", "M = 2\n")  # and the container sees what the host writes
    assert _run(env, "cat pkg/m.py").strip() == "M = 2"


def test_a_killed_owners_mounted_overlay_is_unmounted_then_deleted(make_repo, tmp_path):
    """A process killed between mounting a bindable overlay and its container's start
    leaves it mounted: the sweep of stale working copies unmounts it before deleting, so
    only the working copy goes (the original's files are untouched)."""
    from dgym_tui.core.fs.workspace import Workspace, remove_stale_folders

    if os.geteuid() != 0:
        pytest.skip("a bindable overlay is mounted by root")
    repo = make_repo({"a.py": "A = 1\n", "pkg/m.py": "M = 1\n"})
    ws = Workspace(repo, overlay=True, bindable=True, run_as=(1_500_000_001, 1_500_000_001))
    base = Path(ws.overlay.merged).parent
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"dgym-ws-{dead.pid}-stale"
    os.rename(base, stale)  # as if its owner (now gone) had made it
    assert os.path.ismount(stale / "merged")
    try:
        assert remove_stale_folders(str(tmp_path)) == [str(stale)]
        assert not stale.exists()
        assert (repo / "a.py").read_text() == "A = 1\n" and (repo / "pkg/m.py").exists()
    finally:
        ws.overlay.close()
        if stale.exists():
            subprocess.run(["umount", "-l", str(stale / "merged")], check=False)
            shutil.rmtree(stale, ignore_errors=True)
        ws.cleanup()


@pytest.mark.docker
def test_a_second_docker_terminal_on_a_bound_overlay_is_refused(make_repo, make_env,
                                                                docker_ready):
    """Once its container has bound it, the overlay's host path is unmounted: a path
    derived from the host's descriptor then names no working copy (it may name "/"), so
    another container is never started on it."""
    from dgym_tui.core.terminals.base import TerminalError
    from dgym_tui.core.terminals.docker import DockerTerminal

    if os.geteuid() != 0:
        pytest.skip("the docker terminal's overlay is mounted by root")
    env = make_env(make_repo({"a.py": "A = 1\n"}), terminal="docker", entrypoint="true")
    env.reset()
    ws = env.workspace
    again = DockerTerminal(image=docker_ready, overlay=ws.overlay, run_as=ws.run_as)
    with pytest.raises(TerminalError, match="bound by a container already"):
        again.start(str(ws.root))
    assert again.container is None


def _overlays_made(monkeypatch, fail=lambda source: None):
    """Record each overlay's ``source`` as it is mounted (a process's first reset: no probe's
    answer kept); ``fail(source)``: an OSError message to raise instead of mounting, or None."""
    from dgym_tui.core.fs import overlay

    monkeypatch.setattr(overlay, "_probed", {})
    made: list[str] = []
    real = overlay.Overlay.__init__

    def spy(self, source, *args, **kwargs):
        made.append(source)
        if (problem := fail(source)) is not None:
            raise OSError(problem)
        real(self, source, *args, **kwargs)

    monkeypatch.setattr(overlay.Overlay, "__init__", spy)
    return made


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_the_first_reset_mounts_one_overlay_its_working_copys(kind, request, make_repo,
                                                               make_env, monkeypatch):
    """No probe on an empty folder before the working copy's own overlay (a second overlay:
    processes and a fork of this process before the first eval, on the session's thread
    while the app draws its first frame); later resets mount theirs alone too."""
    if kind == "bwrap":
        request.getfixturevalue("bwrap_ready")
    repo = make_repo({"a.py": "A = 1\n"})
    made = _overlays_made(monkeypatch)
    env = make_env(repo, terminal=kind, terminal_options={"overlay": True}, entrypoint="true")
    env.reset()
    assert env.workspace.overlay is not None
    env.reset()
    assert made == [str(repo.resolve())] * 2


def test_a_machine_that_mounts_no_overlay_gets_a_copy_and_one_warning(make_repo, make_env,
                                                                      monkeypatch, caplog):
    """The working copy's overlay fails and so does the probe's: a copy, a warning, and
    no overlay tried again in this process."""
    repo = make_repo({"a.py": "A = 1\n"})
    made = _overlays_made(monkeypatch, fail=lambda source: "overlay: not supported here")
    env = make_env(repo, terminal="local", terminal_options={"overlay": True},
                   entrypoint="true")
    with caplog.at_level("WARNING", logger="dgym_tui.core.env"):
        env.reset()
        env.reset()
    assert env.workspace.overlay is None and (env.workspace.root / "a.py").read_text() == "A = 1\n"
    assert made[0] == str(repo.resolve()) and len(made) == 2  # then the probe's; none since
    warnings = [r.getMessage() for r in caplog.records if "not an overlay" in r.getMessage()]
    assert warnings == ["the working copy is a copy, not an overlay: overlay: not supported here"]


def test_a_repository_whose_overlay_fails_where_the_probe_mounts_one_fails_the_reset(
        make_repo, make_env, monkeypatch, tmp_path):
    """A failure of this repository's own (the probe mounts its overlay) is raised, not
    hidden behind a copy; the working copy's folders are gone."""
    repo = make_repo({"a.py": "A = 1\n"})
    made = _overlays_made(monkeypatch, fail=lambda source: "this repository's mount failed"
                          if source == str(repo.resolve()) else None)
    env = make_env(repo, terminal="local", terminal_options={"overlay": True},
                   entrypoint="true")
    with pytest.raises(OSError, match="this repository's mount failed"):
        env.reset()
    assert len(made) == 2 and made[0] == str(repo.resolve())  # then the probe's, which mounted
    assert env.workspace is None


INDEX_PROCESSES = """
import json, subprocess, sys
started = []
real = subprocess.Popen.__init__
def spy(self, args, *rest, **kwargs):
    started.append(args if isinstance(args, str) else [str(a) for a in args])
    real(self, args, *rest, **kwargs)
subprocess.Popen.__init__ = spy
from dgym_tui.core.fs.safefs import SafeTree
from dgym_tui.core.fs.treeindex import TreeIndex
index = TreeIndex(SafeTree(sys.argv[1]), lambda rel, is_dir: True)
print(json.dumps({"watching": index.watching, "entries": sorted(index.entries),
                  "started": started}))
"""


def test_a_working_copys_change_index_starts_no_process(make_repo):
    """A process's first change index (every working copy's, an overlay's upper layer) gets
    inotify through the C library this process holds: inotify_simple's own lookup
    (``ctypes.util.find_library``) ran ``ldconfig -p`` on the way to the first eval."""
    repo = make_repo({"a.py": "A = 1\n"})
    out = subprocess.run([sys.executable, "-c", INDEX_PROCESSES, str(repo)], capture_output=True,
                         text=True, timeout=60, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == {"watching": True, "entries": ["a.py"], "started": []}
