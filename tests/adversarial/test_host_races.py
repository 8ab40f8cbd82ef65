"""Host steps racing the agent's background processes.

A program the agent starts (from pdb ``!``, a test, the eval) may keep running
while the host lists, reads and diffs the working copy. Each test here puts the
sandbox's move at the worst moment deterministically: a wrapper around one host
call runs the agent's command in the episode's own terminal right after that call,
as a background process could. Found by random-timing probes (a daemon swapping
files, links, FIFOs and folders while the host ran tools, patches, forks and
submits).
"""

from __future__ import annotations

import os

import pytest

from dgym_tui.core.env import RepoEnv

FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"


def _repo(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "test_x.py").write_text("from pkg.mod import X\n\n\ndef test_x():\n"
                                        "    assert X == 1\n")
    return tmp_path


def _env(tmp_path, request, kind: str, **options) -> RepoEnv:
    """An environment on :func:`_repo` in ``tmp_path`` on terminal ``kind`` (bwrap checked
    first), running the fast pytest of ``test_x.py``; ``options`` go to ``RepoEnv``."""
    if kind == "bwrap":
        request.getfixturevalue("bwrap_ready")
    return RepoEnv(_repo(tmp_path), entrypoint=f"{FAST_PYTEST} test_x.py", terminal=kind,
                   eval_timeout=60, **options)


@pytest.mark.parametrize("overlay", [False, True], ids=["copy", "overlay"])
@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_a_new_file_removed_between_the_listing_and_the_diff_is_left_out_of_the_patch(
        kind, overlay, tmp_path, request):
    """The agent makes a file, and removes it right after the host listed the changes.

    Before the fix ``env.patch()`` raised ``ValueError: a file patch needs at least one
    side`` (the path was new, and missing when read); the random probe met it in half of
    its patches while a daemon renamed files back and forth.
    """
    env = _env(tmp_path, request, kind, terminal_options={"overlay": overlay})
    with env:
        env.reset()
        made = env.terminal.run("echo 'Y = 2' > pkg/new.py && echo 'X = 1  # same' > pkg/mod.py",
                                timeout=30)
        assert made.exit_code == 0, made.output
        workspace = env.workspace
        listed = workspace.changed_files

        def listed_then_removed():
            names = listed()
            gone = env.terminal.run("rm pkg/new.py", timeout=30)  # the agent's daemon, now
            assert gone.exit_code == 0, gone.output
            return names

        workspace.changed_files = listed_then_removed
        patch = env.patch()
        assert "pkg/new.py" not in patch
        assert "+X = 1  # same" in patch  # the rest of the patch is still there
        del workspace.changed_files
        assert env.patch() == patch


#: Python statements making a chain of ``n`` folders ``d/d/...`` from the current folder.
CHAIN = ("python3 -c \"import os\nfor _ in range({n}): os.mkdir('d'); os.chdir('d')\n"
         "open('f.py', 'w').write('x = 1')\"")


def test_a_fork_of_a_working_copy_holding_a_deep_chain_of_folders_starts(tmp_path, request):
    """The fork's copy is handed to the sandbox's uid (dgym as root, bwrap, a copy).

    Before, ``identity.chown_tree`` walked with ``os.fwalk``, which recurses once per
    level: ``fork()`` raised ``RecursionError`` for a chain of 1,200 folders (and the
    submission could not be graded)."""
    import os

    if os.geteuid() != 0:
        pytest.skip("the working copy is handed to a sandbox uid only when dgym runs as root")
    env = _env(tmp_path, request, "bwrap", terminal_options={"overlay": False})
    with env:
        env.reset()
        made = env.terminal.run(CHAIN.format(n=1200), timeout=60)
        assert made.exit_code == 0, made.output
        with env.fork() as twin:
            seen = twin.step({"name": "view", "arguments": {"path": "pkg/mod.py"}})
            assert not seen.error and "X = 1" in seen.observation
            assert twin.terminal.run("test -f " + "d/" * 1200 + "f.py", timeout=30).exit_code == 0


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_a_change_to_every_folder_of_a_deep_chain_is_looked_at_once(kind, tmp_path, request):
    """``chmod -R`` over a chain of 400 folders sends an event for each folder.

    Before, the index looked at each folder again whole, once per event below it: 400
    rescans of the chain's rest (quadratic: 88 s for a fork's refresh at 3,000 levels).
    Now a folder looked at again whole covers the events below it: one rescan."""
    env = _env(tmp_path, request, kind, terminal_options={"overlay": False})
    with env:
        env.reset()
        assert env.terminal.run(CHAIN.format(n=400), timeout=60).exit_code == 0
        env.workspace.refresh()
        index = env.workspace._index
        looked = []
        update = index._update
        index._update = lambda rel: looked.append(rel) or update(rel)
        assert env.terminal.run("chmod -R go-w d", timeout=60).exit_code == 0
        env.workspace.refresh()
        assert 1 <= len(looked) <= 3, looked[:5]
        assert env.workspace.changed_files() == ["d/" * 400 + "f.py"]


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_close_from_another_thread_waits_for_the_running_step(kind, tmp_path, request):
    """The app closes the environment while a worker thread runs a step (a person quits).

    Before, close deleted the working copy and closed its descriptors under the running
    tool: the step ended with ``internal error ...: AttributeError`` (or ``ValueError: I/O
    operation on closed file`` from the change index), and a tool between its lookups
    worked on descriptor numbers the process could already have reused. Now close stops
    the step's commands and waits for it to return."""
    import threading

    env = _env(tmp_path, request, kind)
    env.reset()
    tool = env.tools["rewrite"]
    run = tool.run
    started, closed = threading.Event(), threading.Event()

    def run_while_closing(**arguments):
        started.set()
        closed.wait(3)  # close() returned (before), or still waits for this step (now)
        return run(**arguments)

    tool.run = run_while_closing
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", env.step(
        {"name": "rewrite", "arguments": {"path": "pkg/mod.py", "new_code": "X = 2\n"}})))
    worker.start()
    assert started.wait(30)
    env.close()
    closed.set()
    worker.join(30)
    result = box["result"]
    assert "internal error" not in result.observation, result.observation
    assert not result.error and "X = 2" in result.observation
    assert env.workspace is None and env.terminal is None


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_a_command_stopped_by_close_ends_its_step_with_a_plain_error(kind, tmp_path, request):
    """close() (or ``stop_commands``) from another thread during a pdb command.

    Before, the step said ``internal error in tool pdb: TerminalError: terminal closed``
    and logged a traceback, as for a bug; it is the documented way a stopped step ends."""
    import threading

    env = _env(tmp_path, request, kind, pdb_timeout=60)
    env.reset()
    assert not env.step({"name": "pdb", "arguments": {"command": "p 1"}}).error
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault("result", env.step(
        {"name": "pdb", "arguments": {"command": "!import time; time.sleep(30)"}})))
    worker.start()
    worker.join(1.5)  # the command is running (or about to): either way close stops it
    env.close()
    worker.join(60)
    result = box["result"]
    assert result.error
    assert "internal error" not in result.observation, result.observation


@pytest.mark.parametrize("overlay", [False, True], ids=["copy", "overlay"])
@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_a_folder_replaced_with_a_link_is_graded_and_applied(kind, overlay, tmp_path, request):
    """The agent replaces folder ``pkg`` with a link to ``lib`` (the fix), then submits.

    Before, submit carried ``pkg`` (now a link) into the grading copy before deleting the
    folder's files there: ``could not carry 'pkg' into the grading copy: Is a directory``,
    a failed grading (score 0 for a fix that passes); apply-back failed the same way. The
    random probe met it whenever its daemon had swapped a folder for a link at submit."""
    if kind == "bwrap":
        request.getfixturevalue("bwrap_ready")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "mod.py").write_text("X = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text("X = 0\n")
    (tmp_path / "test_x.py").write_text("from pkg.mod import X\n\n\ndef test_x():\n"
                                        "    assert X == 1\n")
    env = RepoEnv(tmp_path, entrypoint=f"{FAST_PYTEST} test_x.py", terminal=kind,
                  terminal_options={"overlay": overlay}, eval_timeout=60)
    with env:
        env.reset()
        done = env.terminal.run("rm -r pkg && ln -s lib pkg", timeout=30)
        assert done.exit_code == 0, done.output
        assert env.step({"name": "eval", "arguments": {}}).data["eval"]["passed"] == 1
        result = env.step({"name": "submit", "arguments": {}})
        assert "could not" not in result.observation, result.observation
        assert result.data["eval"]["passed"] == 1 and result.data["eval"]["failed"] == 0
        patch = env.patch()
        assert patch.count("deleted file mode") == 2 and "new file mode 120000" in patch, patch
        env.apply_to_source()
    assert (tmp_path / "pkg").is_symlink() and os.readlink(tmp_path / "pkg") == "lib"


@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_close_from_another_thread_waits_for_a_fork_copying_the_working_copy(
        kind, tmp_path, request):
    """Before, close closed the working copy's descriptors while fork() copied from them:
    the fork raised ``OSError: [Errno 9] Bad file descriptor`` (and a number reused
    meanwhile by another open would have been copied from). Now close waits."""
    import threading

    env = _env(tmp_path, request, kind)
    env.reset()
    workspace = env.workspace
    copy = workspace.fork
    started, closed = threading.Event(), threading.Event()

    def fork_while_closing(*args, **kwargs):
        started.set()
        closed.wait(3)  # close() returned (before), or waits for this fork (now)
        return copy(*args, **kwargs)

    workspace.fork = fork_while_closing
    box = {}

    def run():
        try:
            box["twin"] = env.fork()
        except Exception as exc:  # noqa: BLE001  the type is what is checked
            box["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    assert started.wait(30)
    env.close()
    closed.set()
    worker.join(60)
    assert "error" not in box, box.get("error")
    with box["twin"] as twin:
        assert "X = 1" in twin.step({"name": "view", "arguments": {"path": "pkg/mod.py"}}).observation


def test_apply_back_refuses_to_replace_a_folder_holding_ignored_files_and_writes_nothing(
        tmp_path):
    """The original's ``pkg/__pycache__`` is ignored (the episode never sees it): replacing
    ``pkg`` with a link cannot be applied without deleting it. Refused before any write
    (the replacement above would otherwise have deleted ``pkg``'s files first, then failed
    on the folder that is not empty)."""
    from dgym_tui.core.types import WorkspaceError

    repo = _repo(tmp_path)
    (repo / "lib").mkdir()
    (repo / "lib" / "mod.py").write_text("X = 1\n")
    (repo / "pkg" / "__pycache__").mkdir()
    (repo / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0cache")
    env = RepoEnv(repo, entrypoint=f"{FAST_PYTEST} test_x.py", terminal="local",
                  terminal_options={"overlay": False}, eval_timeout=60)
    with env:
        env.reset()
        assert env.terminal.run("rm -r pkg && ln -s lib pkg", timeout=30).exit_code == 0
        with pytest.raises(WorkspaceError, match="__pycache__"):
            env.apply_to_source()
    assert (repo / "pkg" / "mod.py").read_text() == "X = 1\n"
    assert (repo / "pkg" / "__pycache__" / "mod.cpython-311.pyc").read_bytes() == b"\0cache"
