"""Grading nobody in the sandbox can forge (issue 24, class 5), on bwrap and docker.

Hostile code runs through the episode's own terminal (what pdb ``!`` and the
tests run through): it renames the folder holding a read-only test and writes
a forged one, adds a ``conftest.py`` that turns failures into passes, or
renames the folder of an ignored file. Eval and submit must still grade the
task's own tests, and ``env.patch()`` never carries read-only paths.
"""

from __future__ import annotations

import os

import pytest

from dgym_tui.core.env import RepoEnv

FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"

REPO = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "data/answer.txt": "the answer is 42\n",
    "data/keep.txt": "visible\n",
    ".debugreadonly": "tests/\n",
    ".debugignore": "data/answer.txt\n",
}

FORGED_TEST = ("mv tests old_tests && mkdir tests && "
               "printf 'def test_add():\\n    pass\\n' > tests/test_calc.py")

PASSING_CONFTEST = """cat > tests/conftest.py <<'EOF_'
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    outcome.get_result().outcome = "passed"
EOF_
"""

EVAL = {"name": "eval", "arguments": {}}
SUBMIT = {"name": "submit", "arguments": {}}


@pytest.fixture
def sandbox_env(sandbox, tmp_path):
    """``open(files) -> RepoEnv`` reset on a repository in ``tmp_path``, closed afterwards."""
    kind, image = sandbox
    envs = []

    def open_env(files):
        repo = tmp_path / "repo"
        for rel, text in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(text)
        # a copy: these attacks move a folder of the original, which an overlay refuses
        # (EXDEV); the prober's tests and tests/test_overlay.py run the overlay
        env = RepoEnv(repo, entrypoint=f"{FAST_PYTEST} tests", terminal=kind,
                      image=image, eval_timeout=60, terminal_options={"overlay": False})
        envs.append(env)
        env.reset()
        return env

    yield open_env
    for env in envs:
        env.close()


def _hostile(env, command):
    res = env.terminal.run(command, timeout=30)
    assert res.exit_code == 0, res.output


def test_a_forged_test_in_a_renamed_read_only_folder_does_not_resolve(sandbox_env):
    env = sandbox_env(REPO)
    _hostile(env, FORGED_TEST)
    result = env.step(EVAL)
    assert not result.resolved, result.observation
    assert "put back" in result.observation and "tests/test_calc.py" in result.observation
    assert "assert add(1, 2) == 3" in env.workspace.read_text("tests/test_calc.py")
    _hostile(env, FORGED_TEST.replace("mv tests old_tests", "mv tests older_tests"))
    patch = env.patch()
    assert "tests/test_calc.py" in patch  # old_tests/... and older_tests/...
    assert "a/tests/test_calc.py" not in patch and "b/tests/test_calc.py" not in patch
    result = env.step(SUBMIT)
    assert result.done and not result.resolved, result.observation


def test_a_conftest_added_to_a_read_only_folder_is_removed(sandbox_env):
    env = sandbox_env(REPO)
    _hostile(env, PASSING_CONFTEST)
    result = env.step(EVAL)
    assert not result.resolved, result.observation
    assert "removed: tests/conftest.py" in result.observation
    assert env.workspace.kind("tests/conftest.py") is None


def test_submit_grades_the_fix_in_a_fresh_copy(sandbox_env):
    env = sandbox_env(REPO)
    _hostile(env, PASSING_CONFTEST + FORGED_TEST)
    result = env.step({"name": "rewrite", "arguments": {
        "path": "calc.py", "new_code": "def add(a, b):\n    return a + b\n"}})
    assert not result.error, result.observation
    result = env.step(SUBMIT)
    assert result.resolved, result.observation
    assert "graded in a fresh copy" in result.observation
    assert result.eval.passed == 1 and result.eval.total == 1


def test_an_ignored_file_is_not_in_the_working_copy_even_after_a_rename(sandbox_env):
    env = sandbox_env(REPO)
    assert env.workspace.kind("data/keep.txt") == "file"
    res = env.terminal.run("mv data d2; cat d2/answer.txt data/answer.txt; ls d2", timeout=30)
    assert "42" not in res.output
    for path in ("d2/answer.txt", "data/answer.txt"):
        result = env.step({"name": "view", "arguments": {"path": path}})
        assert result.error and "42" not in result.observation, result.observation
    result = env.step({"name": "grep", "arguments": {"pattern": "answer is"}})
    assert "42" not in result.observation
    result = env.step({"name": "listdir", "arguments": {"path": "d2"}})
    assert "answer" not in result.observation


def test_grading_holds_when_dgym_runs_as_root_and_as_a_user(prober):
    """The forged test, then eval, a fix, and submit, in an episode started as root (the
    sandbox runs as the episode's own uid) and as a user. The entrypoint is a plain
    ``python3`` script: the user's Python here has no pytest."""
    files = {**{k: v for k, v in REPO.items() if not k.startswith("tests/")},
             "tests/test_calc.py": "import sys\nsys.path.insert(0, '.')\nfrom calc import add\n"
                                   "assert add(1, 2) == 3, 'add(1, 2) is not 3'\n"}
    fix = {"name": "rewrite", "arguments": {"path": "calc.py",
                                            "new_code": "def add(a, b):\n    return a + b\n"}}
    forge = FORGED_TEST.replace("def test_add():\\n    pass\\n", "print(1)\\n")
    probe = prober.run([forge], files=files, entrypoint="python3 tests/test_calc.py",
                       steps=[EVAL, fix, SUBMIT])
    evaluated, fixed, submitted = probe.steps
    if prober.overlay:  # the original's folders cannot be moved (EXDEV) nor emptied of a mount
        assert "Device or resource busy" in probe.results[0].output, probe.results
        assert not evaluated["resolved"], evaluated
    else:
        assert all(r.exit_code == 0 for r in probe.results), probe.results
        assert not evaluated["resolved"] and "put back" in evaluated["observation"], evaluated
    assert "add(1, 2) is not 3" in evaluated["observation"], evaluated["observation"]
    assert not fixed["error"], fixed
    assert submitted["done"] and submitted["resolved"], submitted["observation"]
    assert "graded in a fresh copy" in submitted["observation"]


def test_submit_is_out_of_reach_of_a_process_that_keeps_forging(prober):
    """A process left running in the episode's sandbox rewrites the test again and again
    (after every restore): evals in place may lose that race; submit grades in a fresh
    copy and a fresh sandbox, which it never sees."""
    files = {**{k: v for k, v in REPO.items() if not k.startswith("tests/")},
             "tests/test_calc.py": "import sys\nsys.path.insert(0, '.')\nfrom calc import add\n"
                                   "assert add(1, 2) == 3, 'add(1, 2) is not 3'\n"}
    forger = ("sh -c 'while true; do printf \"print(1)\\n\" > tests/test_calc.py 2>/dev/null "
              "|| { mv tests gone$$-$RANDOM; mkdir tests; }; sleep 0.02; done'")
    seen = ("for i in $(seq 100); do [ \"$(cat tests/test_calc.py 2>/dev/null)\" = 'print(1)' ] "
            "&& echo forged && break; sleep 0.1; done")
    probe = prober.run([seen], files=files,
                       entrypoint="python3 tests/test_calc.py", background=forger,
                       steps=[SUBMIT])
    # it does forge; an overlay's original folders cannot be moved away: it cannot even start
    assert ("forged" in probe.results[0].output) != prober.overlay, probe.results[0].output
    (submitted,) = probe.steps
    assert submitted["done"] and not submitted["resolved"], submitted["observation"]
    assert "add(1, 2) is not 3" in submitted["observation"], submitted["observation"]


def test_a_read_only_file_changed_in_place_with_its_times_set_back_is_put_back(tmp_path):
    """Same size, same inode, mtime restored with utime: only the ctime tells, and it does."""
    from dgym_tui.core.fs.workspace import Workspace

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text("def test_add():\n    assert 1 + 2 == 3\n")
    (tmp_path / ".debugreadonly").write_text("tests/\n")
    ws = Workspace(tmp_path)
    try:
        assert ws.enforce_readonly() == ([], [])
        path = ws.root / "tests" / "test_calc.py"
        before = os.stat(path)
        with open(path, "r+") as f:  # in place: the inode stays
            f.write("def test_add():\n    assert 1 + 2 == 4\n")
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert os.stat(path).st_size == before.st_size
        assert ws.enforce_readonly() == (["tests/test_calc.py"], [])
        assert "== 3" in path.read_text()
    finally:
        ws.cleanup()
