"""Grading nobody in the sandbox can forge (issue 24, class 5), on bwrap and docker.

Hostile code runs through the episode's own terminal (what pdb ``!`` and the
tests run through): it renames the folder holding a read-only test and writes
a forged one, adds a ``conftest.py`` that turns failures into passes, or
renames the folder of an ignored file. Eval and submit must still grade the
task's own tests, and ``env.patch()`` never carries read-only paths.
"""

from __future__ import annotations

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
        env = RepoEnv(repo, entrypoint=f"{FAST_PYTEST} tests", terminal=kind,
                      image=image, eval_timeout=60)
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
