"""RepoEnv.fork(): branch a live episode on every terminal (files, breakpoints, steps, pdb)."""

from __future__ import annotations

import os

import pytest

from dgym_tui import ToolCall
from dgym_tui.core.terminals.local import LocalTerminal

CODE = ("def add(a, b):\n    return a - b\n\n\n"
        "def total(items):\n    s = 0\n    for i in items:\n        s = add(s, i)\n"
        "    return s\n")
TESTS = ("from code import add, total\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
         "def test_total():\n    assert total([1, 2, 3]) == 6\n")


def pdb(env, command):
    return env.step(ToolCall(name="pdb", arguments={"command": command}))


def rewrite(env, path, start, end, code):
    return env.step(ToolCall(name="rewrite", arguments={
        "path": path, "start": start, "end": end, "new_code": code}))


@pytest.fixture
def episode(make_repo, make_env, fast_pytest):
    """``episode() -> env``: a reset environment on the test's terminal, with a change made."""

    def make():
        repo = make_repo({"code.py": CODE, "test_code.py": TESTS, "pkg/util.py": "X = 1\n"})
        env = make_env(repo, entrypoint=f"{fast_pytest} test_code.py")
        env.reset()
        r = rewrite(env, "pkg/util.py", 1, 1, "X = 2\nY = 3\n")
        assert not r.error
        return env

    return make


def leftovers(env) -> dict[str, object]:
    """What of an environment must be gone after its close(): working copy, pdb, container."""
    session = env.tools["pdb"].session
    child = session.child if session is not None else None
    return {"root": str(env.workspace.folder),
            "pid": getattr(child, "pid", None) if env.terminal_spec != "docker" else None,
            "container": getattr(env.terminal, "container", None)}


def assert_gone(things: dict[str, object]) -> None:
    assert not os.path.exists(things["root"])
    if things["pid"]:
        with pytest.raises(ProcessLookupError):
            os.kill(things["pid"], 0)
    if things["container"] is not None:
        from docker.errors import NotFound

        with pytest.raises(NotFound):
            things["container"].reload()


def test_fork_has_the_files_breakpoints_steps_patch_and_pdb_frame(episode, every_terminal):
    env = episode()
    pdb(env, "b code.py:8")
    r = pdb(env, "c")
    assert r.frame == ("code.py", 8)
    r = pdb(env, "c")  # the second pass through the loop: only a replay of both `c` gets here
    assert r.frame == ("code.py", 8)
    assert pdb(env, "p i").observation == "2"

    twin = env.fork()
    try:
        assert twin.workspace.root != env.workspace.root
        assert twin.workspace.read_text("pkg/util.py") == "X = 2\nY = 3\n"
        assert twin.workspace.files() == env.workspace.files()
        assert twin.breakpoints.list() == env.breakpoints.list() == [("code.py", 8)]
        assert twin.steps == env.steps == 5
        assert twin.patch() == env.patch() != ""
        assert twin.frame == env.frame == ("code.py", 8)
        r = pdb(twin, "p i, s")
        assert not r.error and "(2, -1)" in r.observation  # the loop's second pass, as the parent
        assert twin.steps == 6 and env.steps == 5
        assert "(2, -1)" in pdb(env, "p i, s").observation
    finally:
        twin.close()


def test_fork_and_parent_change_alone(episode, every_terminal):
    env = episode()
    twin = env.fork()
    try:
        before = env.patch()
        assert not rewrite(twin, "code.py", 2, 2, "    return a + b\n").error
        assert twin.step(ToolCall(name="eval", arguments={})).resolved  # the twin's fix...
        assert env.workspace.read_text("code.py") == CODE  # ...the parent has none of it
        assert env.patch() == before and "code.py" not in env.workspace.changed_files()
        r = env.step(ToolCall(name="eval", arguments={}))
        assert r.score == 0 and not r.resolved

        rewrite(env, "test_code.py", 1, 1, "from code import add, total  # parent\n")
        assert "# parent" not in twin.workspace.read_text("test_code.py")
        assert twin.workspace.changed_files() == ["code.py", "pkg/util.py"]
        assert env.workspace.changed_files() == ["pkg/util.py", "test_code.py"]
        assert twin.generation == env.generation  # one change each since the fork
    finally:
        twin.close()


def test_closing_one_leaves_the_other_working_and_nothing_of_it(episode, every_terminal):
    env = episode()
    pdb(env, "b code.py:2")
    pdb(env, "c")
    twin = env.fork()
    assert twin.frame == ("code.py", 2)
    gone = leftovers(twin)
    twin.close()
    assert_gone(gone)
    assert pdb(env, "p b").observation == "2"  # the parent's pdb is still there
    assert env.frame == ("code.py", 2)

    second = env.fork()
    gone = leftovers(env)
    env.close()
    assert_gone(gone)
    try:
        assert pdb(second, "p b").observation == "2"
        assert not rewrite(second, "code.py", 2, 2, "    return a + b\n").error
        assert second.step(ToolCall(name="eval", arguments={})).resolved
    finally:
        second.close()


def test_fork_copies_links_as_links_and_skips_special_files(make_repo, make_env, tmp_path):
    """Links the agent planted in the working copy are copied as links, never followed."""
    secret = tmp_path / "host-secret.txt"
    secret.write_text("host secret\n")
    env = make_env(make_repo({"a.py": "A = 1\n"}), entrypoint="true")
    env.reset()
    root = env.workspace.root
    os.symlink(str(secret), root / "leak")
    os.mkfifo(root / "pipe")
    os.mkdir(root / "sub")
    os.symlink(str(tmp_path), root / "sub" / "out")  # a folder link leading outside
    twin = env.fork()
    try:
        new = twin.workspace.root
        assert os.readlink(new / "leak") == str(secret)
        assert os.readlink(new / "sub" / "out") == str(tmp_path)
        assert not os.path.lexists(new / "pipe")
        assert not (new / "sub" / "out" / "host-secret.txt").is_symlink()
        assert sorted(os.listdir(new / "sub")) == ["out"]  # the link was not entered
        assert twin.patch() == env.patch()
        assert "leak" in twin.patch()
    finally:
        twin.close()


def test_fork_needs_a_running_episode_and_a_terminal_by_name(make_repo, make_env):
    repo = make_repo({"a.py": "A = 1\n"})
    env = make_env(repo, entrypoint="true")
    with pytest.raises(RuntimeError, match="reset"):
        env.fork()
    env = make_env(repo, entrypoint="true", terminal=LocalTerminal())
    env.reset()
    with pytest.raises(RuntimeError, match="by name"):
        env.fork()


def test_session_fork_records_its_parent_and_replays_alone(make_repo, open_repo, fast_pytest,
                                                           tmp_path):
    """Session.fork(): a self-contained branch trajectory naming its parent and step."""
    from dgym_tui.episode.trajectory import read_trajectory
    from dgym_tui.launch.replay import replay

    repo = make_repo({"code.py": CODE, "test_code.py": TESTS})
    parent_path = tmp_path / "parent.jsonl"
    session = open_repo(repo, trajectory=parent_path, entrypoint=f"{fast_pytest} test_code.py")
    session.start()
    session.act(ToolCall(name="pdb", arguments={"command": "b code.py:2"}))
    session.act(ToolCall(name="pdb", arguments={"command": "c"}))
    session.act(ToolCall(name="rewrite", arguments={
        "path": "code.py", "start": 2, "end": 2, "new_code": "    return a + b\n"}))

    branch = session.fork(tmp_path / "branch.jsonl")
    try:
        assert branch.env is not session.env and len(branch.turns) == 3
        assert branch.env.steps == 3 and branch.env.patch() == session.env.patch()
        turn = branch.act(ToolCall(name="eval", arguments={}))
        assert turn.index == 4 and turn.result.resolved
        branch.finish("submitted")
        session.finish("quit")
        traj = read_trajectory(tmp_path / "branch.jsonl")
        assert traj.header["config"]["forked_from"] == {
            "path": str(parent_path), "step": 3, "live": True}
        assert [s["step"] for s in traj.steps] == [1, 2, 3, 4]
        assert len(read_trajectory(parent_path).steps) == 3  # the parent's file has none of it
        report = replay(traj)  # self-contained: a fresh environment replays it alone
        assert report.ok and report.resolved, [d.diff() for d in report.divergences]
    finally:
        branch.env.close()


def test_a_forked_working_copy_sets_every_attribute_its_parent_has(make_repo):
    """Workspace.fork() fills a bare instance: an attribute added to __init__ must be set there
    too (a fork missing one fails later, e.g. in an eval's read-only check)."""
    from dgym_tui.core.fs.workspace import Workspace

    ws = Workspace(make_repo({"a.py": "A = 1\n", ".debugreadonly": "a.py\n"}))
    child = ws.fork()
    try:
        assert set(vars(child)) == set(vars(ws))
        assert child.enforce_readonly() == ([], [])
    finally:
        child.cleanup()
        ws.cleanup()


def test_a_sparse_file_stays_sparse_in_the_fork(make_repo, make_env):
    """A file the agent made with a hole (truncate -s) is not written out in full by fork()."""
    env = make_env(make_repo({"a.py": "A = 1\n"}), entrypoint="true")
    env.reset()
    size = 8 << 20  # bounded: a wrong copy writes 8 MiB, not a disk
    with open(env.workspace.root / "sparse.bin", "wb") as f:
        f.write(b"head")
        f.seek(size - 4)
        f.write(b"tail")
    twin = env.fork()
    try:
        path = twin.workspace.root / "sparse.bin"
        st = os.stat(path)
        assert st.st_size == size
        assert st.st_blocks * 512 < 1 << 20  # the hole stayed a hole
        data = path.read_bytes()
        assert data[:4] == b"head" and data[-4:] == b"tail" and data.count(0) == size - 8
        assert twin.patch() == env.patch()
    finally:
        twin.close()
