"""Host code never follows a path in a tree the sandbox writes (issue 24, class 4).

The report plugin lives in a folder the sandbox reads but cannot write; links
the sandbox plants in its scratch folder lead the host nowhere; and an audit
hook proves that no host code opens, creates, changes or lists a path inside
the working copy or the scratch folder by name during steps (every access goes
through folder descriptors from the tree's root, ``dgym_tui.core.fs.safefs``).
"""

from __future__ import annotations

import os
import stat
import sys

from dgym_tui.core.env import RepoEnv

FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"

REPO = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
}

#: Audit events that name a path the host would follow.
PATH_EVENTS = frozenset({
    "open", "os.mkdir", "os.chmod", "os.chown", "os.rename", "os.remove", "os.rmdir",
    "os.symlink", "os.link", "os.truncate", "os.utime", "os.listdir", "os.scandir",
    "os.chdir", "shutil.rmtree", "shutil.copyfile", "shutil.copytree", "shutil.move",
})

_watched: list[str] = []   # host folders whose paths no host code may name
_seen: list[tuple[str, str]] = []


def _audit(event: str, args: tuple) -> None:
    if not _watched or event not in PATH_EVENTS or not args:
        return
    path = args[0]
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, (str, os.PathLike)):
        return
    path = os.fspath(path)
    # the roots themselves are the host's own folders (their parents are not the sandbox's)
    if any(path.startswith(root + "/") for root in _watched):
        _seen.append((event, path))


sys.addaudithook(_audit)  # hooks cannot be removed: it only records while _watched is set


def _env(tmp_path, sandbox) -> RepoEnv:
    repo = tmp_path / "repo"
    repo.mkdir()
    for rel, text in REPO.items():
        (repo / rel).write_text(text)
    kind, image = sandbox
    return RepoEnv(repo, entrypoint=f"{FAST_PYTEST} test_calc.py", terminal=kind, image=image,
                   eval_timeout=60)


def test_the_plugin_folder_is_read_only_to_the_sandbox(tmp_path, sandbox):
    with _env(tmp_path, sandbox) as env:
        env.reset()
        folder = env.terminal.plugin_dir
        assert folder and os.path.isdir(folder)
        for tree in (str(env.workspace.root), env.terminal.scratch):
            assert not folder.startswith(tree + "/")
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o755
        plugin = os.path.join(folder, "dgym_pytest_report.py")
        before = open(plugin, "rb").read()
        listed = sorted(os.listdir(folder))  # the report plugin and the host's other helpers
        assert "dgym_pytest_report.py" in listed and "new.py" not in listed
        inside = env.terminal.plugin_path()
        res = env.terminal.run(f"echo forged > {inside}/dgym_pytest_report.py; "
                               f"touch {inside}/new.py; chmod 777 {inside}; "
                               f"ls {inside}", timeout=30)
        assert "dgym_pytest_report.py" in res.output  # the sandbox reads it
        assert sorted(os.listdir(folder)) == listed
        assert open(plugin, "rb").read() == before
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o755


def test_links_planted_in_the_scratch_folder_lead_the_host_nowhere(tmp_path, sandbox):
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o700)
    (victim / "keep.txt").write_text("host file\n")
    with _env(tmp_path, sandbox) as env:
        env.reset()
        scratch = env.terminal.scratch_path()  # as the commands see it
        plant = (f"mv {scratch}/plugin {scratch}/plugin.old; rm -rf {scratch}/plugin; "
                 f"ln -s {victim} {scratch}/plugin; "
                 f"for i in $(seq 1 40); do ln -sf {victim}/keep.txt {scratch}/report-$i.jsonl; "
                 f"done")
        res = env.terminal.run(plant, timeout=30)
        assert res.exit_code == 0, res.output
        result = env.step({"name": "eval", "arguments": {}})
        assert result.eval.total == 1 and not result.resolved, result.observation
        assert sorted(os.listdir(victim)) == ["keep.txt"]
        assert (victim / "keep.txt").read_text() == "host file\n"
        assert stat.S_IMODE(victim.stat().st_mode) == 0o700


def test_no_host_code_names_a_path_in_the_sandbox_writable_trees(tmp_path, bwrap_ready):
    with _env(tmp_path, ("bwrap", None)) as env:
        env.reset()
        steps = [
            {"name": "listdir", "arguments": {"path": "."}},
            {"name": "view", "arguments": {"path": "calc.py"}},
            {"name": "grep", "arguments": {"pattern": "add"}},
            {"name": "rewrite", "arguments": {"path": "calc.py", "start": 2, "end": 2,
                                              "new_code": "    return a + b"}},
            {"name": "pdb", "arguments": {"command": "b calc.py:2"}},
            {"name": "pdb", "arguments": {"command": "c"}},
            {"name": "pdb", "arguments": {"command": "p a"}},
            {"name": "eval", "arguments": {}},
        ]
        _watched[:] = [str(env.workspace.root), env.terminal.scratch]
        try:
            results = [env.step(step) for step in steps]
        finally:
            _watched.clear()
        assert results[-1].resolved, results[-1].observation
        assert not _seen, _seen
