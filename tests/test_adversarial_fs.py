"""Hostile code against host-side file access (issue 8): one regression test per probe.

The agent's code (here: commands run through the episode's own terminal, as
pdb ``!`` or a test would) makes FIFOs, device nodes, catastrophic input for
regular expressions and swaps folders with links to host folders while the
host-side tools work on the same working copy. Each probe runs on every
terminal (``every_terminal``: local, bwrap, and Docker where available).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import stat
import subprocess
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dgym_tui import ToolCall
from dgym_tui.core.fs.workspace import (
    ApplyConflictError,
    Workspace,
    remove_stale_folders,
)

_spec = importlib.util.spec_from_file_location(
    "race_symlink_swap", Path(__file__).parent.parent / "bench" / "race_symlink_swap.py")
race = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(race)


def step(env, name, **arguments):
    return env.step(ToolCall(name, arguments))


@pytest.fixture
def env(every_terminal, tmp_path, make_env):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "code.py").write_text("x = 1\n")
    e = make_env(repo, entrypoint="true")
    e.reset()
    return e


@pytest.mark.timeout(120)
def test_fifo_is_refused_not_opened(env):
    """A FIFO made by the agent: view / rewrite refuse in one line, grep names it and goes on."""
    assert env.terminal.run("mkfifo pipe.txt").exit_code == 0
    r = step(env, "view", path="pipe.txt")
    assert r.error and "'pipe.txt' is a FIFO, not a regular file" in r.observation
    r = step(env, "rewrite", path="pipe.txt", new_code="x")
    assert r.error and "FIFO" in r.observation
    r = step(env, "grep", pattern="x = ")
    assert not r.error
    assert "code.py:1: x = 1" in r.observation
    assert "pipe.txt (FIFO, not a regular file)" in r.observation
    assert "pipe.txt" in step(env, "listdir").observation


@pytest.mark.timeout(120)
def test_device_node_is_never_opened(env):
    """A device node in the working copy (made in the sandbox if it lets us, else on the host)."""
    made = env.terminal.run("python -c \"import os, stat; os.mknod('dev.txt', 0o644 | stat.S_IFCHR, "
                            "os.makedev(1, 5))\"")
    if made.exit_code != 0:  # the sandbox refuses mknod (capabilities dropped): plant one from outside
        os.mknod(env.workspace.root / "dev.txt", 0o644 | stat.S_IFCHR, os.makedev(1, 5))
    r = step(env, "view", path="dev.txt")
    assert r.error and "'dev.txt' is a device node, not a regular file" in r.observation
    r = step(env, "grep", pattern="x")
    assert "dev.txt (device node, not a regular file)" in r.observation
    r = step(env, "rewrite", path="dev.txt", new_code="x")
    assert r.error and "device node" in r.observation
    assert "dev.txt" not in env.patch()


@pytest.mark.timeout(120)
def test_catastrophic_regex_is_linear(env):
    """``(a+)+$`` over ``"a"*40 + "!"`` (hours with backtracking) answers at once; RE2 refusals are one line."""
    step(env, "rewrite", path="evil.txt", new_code="a" * 40 + "!")
    r = step(env, "grep", pattern="(a+)+$")
    assert not r.error and r.observation == "No match for '(a+)+$' in the repository."
    r = step(env, "grep", pattern=r"(a)\1")
    assert r.error and "linear-time engine" in r.observation
    assert "\n" not in r.observation


@pytest.mark.timeout(180)
def test_symlink_swap_race(every_terminal, tmp_path, make_env):
    """A folder swapped with a link to a host folder (RENAME_EXCHANGE loop) while tools run: no leak."""
    host_dir = tmp_path / "host"
    repo = race.make_repo(tmp_path / "repo", host_dir)
    env = make_env(repo, entrypoint="true")
    env.reset()
    # 12 s: on a loaded 2-core machine 5 s gave under 50 steps, or ended before the
    # swapper process had started
    counts = race.run_race(env, host_dir, seconds=12)
    assert counts["swaps"] > 100, counts  # the race really ran
    assert counts["steps"] > 50, counts
    assert (counts["host_reads"], counts["host_writes"], counts["exceptions"],
            counts["internal_errors"]) == (0, 0, 0, 0), counts


def test_big_file_view_streams(tmp_path):
    """view of a 50 MB file keeps only the requested lines in memory."""
    repo = tmp_path / "repo"
    repo.mkdir()
    line = b"x" * 99 + b"\n"
    with open(repo / "big.txt", "wb") as fh:
        for _ in range(50):
            fh.write(line * 10_000)
    ws = Workspace(repo)
    try:
        tracemalloc.start()
        rel, lines, total = ws.read_lines("big.txt", 250_000, 250_039)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        ws.cleanup()
    assert (rel, len(lines), total) == ("big.txt", 40, 500_000)
    assert peak < 8 << 20, peak


def test_big_file_lines_match_and_later_views_read_little(tmp_path, monkeypatch):
    """Streamed lines equal a plain split, first view and later (indexed) views alike."""
    import random

    rng = random.Random(7)
    text = "".join("y" * rng.randrange(0, 300) + "\n" for _ in range(40_000)) + "no newline"
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "big.txt").write_text(text)
    expected = text.split("\n")
    ws = Workspace(repo)
    try:
        for first, last in [(1, 3), (39_990, 40_001), (12_345, 12_400), (20_000, 20_000)]:
            rel, lines, total = ws.read_lines("big.txt", first, last)
            assert total == 40_001 and lines == expected[first - 1:last]
        read = []
        real_read = os.read
        monkeypatch.setattr(os, "read", lambda fd, n: read.append(real_read(fd, n)) or read[-1])
        _, lines, total = ws.read_lines("big.txt", 30_000, 30_039)
        monkeypatch.undo()
        assert lines == expected[29_999:30_039] and total == 40_001
        assert sum(map(len, read)) <= 2 << 20  # one or two chunks, not the whole file
    finally:
        ws.cleanup()


def test_grep_names_skipped_big_files(tmp_path, make_env):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "big.log").write_bytes(b"needle\n" * 400_000)
    (repo / "small.py").write_text("needle = 1\n")
    env = make_env(repo, entrypoint="true")
    env.reset()
    r = step(env, "grep", pattern="needle")
    assert "small.py:1: needle = 1" in r.observation
    assert "[not searched: big.log (over 2 MB)]" in r.observation


def test_step_never_raises(tmp_path, make_env, monkeypatch):
    """An exception anywhere in a step (here: the change index) becomes an error observation."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "code.py").write_text("x = 1\n")
    env = make_env(repo, entrypoint="true")
    env.reset()

    def broken():
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(env.workspace, "refresh", broken)
    r = step(env, "view", path="code.py")
    assert r.error and r.observation.startswith("internal error in tool view: OSError")
    monkeypatch.undo()
    assert not step(env, "view", path="code.py").error


# ------------------------------------------------------------------ apply-back
@pytest.fixture
def ws(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "code.py").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    (repo / "data.bin").write_bytes(b"\0\1\2")
    w = Workspace(repo)
    yield w
    w.cleanup()


def test_apply_back_merges_an_outside_edit(ws):
    """The user edited another line of the original meanwhile: both edits survive."""
    ws.write_text("code.py", ws.read_text("code.py").replace("line 3\n", "line 3 fixed\n"))
    ws.changed_files()
    original = ws.source / "code.py"
    original.write_text(original.read_text().replace("line 17\n", "line 17 by the user\n"))
    assert ws.apply_to_source() == ["code.py"]
    text = original.read_text()
    assert "line 3 fixed\n" in text and "line 17 by the user\n" in text
    assert ws.changed_files() == []


def test_apply_back_refuses_a_conflict_and_writes_nothing(ws):
    ws.write_text("code.py", ws.read_text("code.py").replace("line 3\n", "line 3 fixed\n"))
    ws.write_text("new.py", "N = 1\n")
    (ws.root / "data.bin").write_bytes(b"\0changed")
    ws.changed_files()
    original = ws.source / "code.py"
    original.write_text(original.read_text().replace("line 3\n", "line 3 by the user\n"))
    (ws.source / "data.bin").write_bytes(b"\0user")
    with pytest.raises(ApplyConflictError, match="code.py, data.bin changed in the original") as exc:
        ws.apply_to_source()
    assert exc.value.files == ["code.py", "data.bin"]
    assert "line 3 by the user\n" in original.read_text()
    assert not (ws.source / "new.py").exists()


def test_apply_back_never_follows_links_out_of_the_original(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    ws.write_text("sub/new.py", "N = 1\n")
    ws.changed_files()
    os.symlink(outside, ws.source / "sub")  # the original's folder became a link meanwhile
    with pytest.raises(Exception, match="sub/new.py"):
        ws.apply_to_source()
    assert os.listdir(outside) == []


# ---------------------------------------------------------------------- sweep
def test_stale_working_copies_are_swept(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"dgym-ws-{dead.pid}-abc"
    (stale / "sub").mkdir(parents=True)
    (stale / "sub" / "f.py").write_text("x\n")
    os.symlink("/etc", stale / "link")
    live = tmp_path / f"dgym-ws-{os.getpid()}-def"
    live.mkdir()
    other = tmp_path / "dgym-ws-notapid"
    other.mkdir()
    assert remove_stale_folders(str(tmp_path)) == [str(stale)]
    assert not stale.exists() and live.exists() and other.exists()
    assert os.path.exists("/etc/passwd")


# -------------------------------------------------------------- patch property
_NAME_CHARS = st.sampled_from(list("ab_-. \t\n\"\\é中"))
_NAMES = st.text(_NAME_CHARS, min_size=1, max_size=5).filter(
    lambda n: n not in (".", "..") and not n.endswith(".pyc") and n.strip(" .") != ""
    and n not in (".git", "__pycache__", ".pytest_cache", ".debugignore", ".debugreadonly"))
_TEXT = st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"),
                         max_size=12), max_size=6).map(lambda ls: "\n".join(ls).encode())
_CONTENT = st.one_of(_TEXT, _TEXT.map(lambda b: b + b"\n"), st.binary(max_size=300),
                     st.just(b""), st.just(b"\xff\xfe not utf-8\n"))
_FILE = st.tuples(_CONTENT, st.booleans())  # (content, executable)
_TREE = st.dictionaries(_NAMES, st.one_of(_FILE, st.dictionaries(_NAMES, _FILE, max_size=3)),
                        max_size=5)
_CHANGE = st.sampled_from(["keep", "modify", "delete", "chmod", "binary", "link"])


def _write_tree(root: Path, tree: dict) -> None:
    for name, node in tree.items():
        if isinstance(node, dict):
            (root / name).mkdir()
            _write_tree(root / name, node)
        else:
            data, executable = node
            (root / name).write_bytes(data)
            os.chmod(root / name, 0o755 if executable else 0o644)


def _files(root: Path) -> dict[str, tuple[bytes, bool | str]]:
    """``{path: (content, executable)}``; a link is ``(target, "link")``."""
    out = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_symlink():
                out[str(path.relative_to(root))] = (os.fsencode(os.readlink(path)), "link")
            else:
                out[str(path.relative_to(root))] = (path.read_bytes(),
                                                    bool(path.stat().st_mode & 0o100))
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=_TREE, changes=st.lists(_CHANGE, min_size=12, max_size=12), new=_TREE,
       contents=st.lists(_CONTENT, min_size=12, max_size=12))
def test_patch_always_applies(tree, changes, new, contents):
    """Random trees, random changes: ``git apply`` of the patch on a fresh copy gives the working copy."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        _write_tree(src, tree)
        ws = Workspace(src)
        try:
            for i, rel in enumerate(sorted(_files(ws.root))):
                path, change = ws.root / rel, changes[i % len(changes)]
                if change == "modify":
                    path.write_bytes(contents[i % len(contents)])
                elif change == "delete":
                    path.unlink()
                elif change == "chmod":
                    os.chmod(path, path.stat().st_mode ^ 0o111)
                elif change == "binary":
                    path.write_bytes(b"\0" + path.read_bytes())
                elif change == "link":  # a file becomes a link (to a sibling, or dangling)
                    path.unlink()
                    os.symlink(contents[i % len(contents)].decode("utf-8", "replace")[:8]
                               .replace("/", "_").replace("\0", "_") or "x", path)
            fresh = Path(tmp) / "new"
            fresh.mkdir()
            _write_tree(fresh, new)
            for rel, (data, executable) in _files(fresh).items():
                target = ws.root / rel
                if not target.exists() and not target.is_symlink() and not any(
                        p.is_file() or p.is_symlink() for p in target.parents
                        if str(p).startswith(str(ws.root)) and os.path.lexists(p)):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
                    os.chmod(target, 0o755 if executable else 0o644)
            patch = ws.patch()
            check = Path(tmp) / "check"
            shutil.copytree(src, check)
            if patch:
                proc = subprocess.run(["git", "apply", "-"], cwd=check, input=patch.encode(),
                                      capture_output=True)
                assert proc.returncode == 0, proc.stderr.decode() + "\n" + patch
            assert _files(check) == _files(ws.root)
        finally:
            ws.cleanup()


def test_grep_sees_changes_made_by_running_code(env):
    """grep's cached file contents follow writes made inside the sandbox (the change index)."""
    assert "code.py:1: x = 1" in step(env, "grep", pattern="x = ").observation
    assert env.terminal.run("echo 'x = 2' > code.py && mkdir -p sub && echo 'x = 3' > sub/new.py"
                            ).exit_code == 0
    r = step(env, "grep", pattern="x = ")
    assert "code.py:1: x = 2" in r.observation and "sub/new.py:1: x = 3" in r.observation
    assert r.changed_files == ["code.py", "sub/new.py"]


@given(st.text(_NAME_CHARS, min_size=1, max_size=8))
def test_git_quoting_round_trips(name):
    from dgym_tui.core.fs.gitpatch import quote_path, unquote_path

    assert unquote_path(quote_path(name)) == name


SIGTERM_SCRIPT = r"""
import sys
from dgym_tui import RepoEnv, ToolCall
env = RepoEnv(sys.argv[1], entrypoint="true")
env.reset()
print("ready", flush=True)
while True:  # SIGTERM arrives while a grep with a catastrophic pattern runs
    env.step(ToolCall("grep", {"pattern": "(a+)+$"}))
"""


@pytest.mark.timeout(120)
def test_sigterm_during_grep_ends_the_process(tmp_path):
    """The owner's SIGTERM is handled at once: no tool call holds it (and the working copy goes)."""
    import signal
    import sys

    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(50):
        (repo / f"f{i}.txt").write_text(("a" * 40 + "!\n") * 2000)
    proc = subprocess.Popen([sys.executable, "-c", SIGTERM_SCRIPT, str(repo)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    copies = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith(f"dgym-ws-{proc.pid}-")}
    assert copies
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == -signal.SIGTERM
    assert not any(os.path.exists(os.path.join(tempfile.gettempdir(), p)) for p in copies)


def test_a_name_with_spaces_and_no_hunk_applies():
    """An empty file added under a folder named ``"_ "`` has no ---/+++ lines to name it, and
    git apply cannot split an unquoted ``diff --git a/_ /_ b/_ /_`` (hypothesis found it):
    such headers are quoted."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        ws = Workspace(src)
        try:
            (ws.root / "_ ").mkdir()
            (ws.root / "_ " / "_").write_bytes(b"")
            patch = ws.patch()
            check = Path(tmp) / "check"
            shutil.copytree(src, check)
            proc = subprocess.run(["git", "apply", "-"], cwd=check, input=patch.encode(),
                                  capture_output=True)
            assert proc.returncode == 0, proc.stderr.decode() + "\n" + patch
            assert (check / "_ " / "_").read_bytes() == b""
        finally:
            ws.cleanup()
