"""Scores from pytest's structured report: runs cut short or contradicted count as failed,
failed tests carry their location (EvalSummary.failures), on every terminal."""

from __future__ import annotations

import pytest

from dgym_tui.core.evaluation.pytest_plugin import PytestReport, SessionRecord
from dgym_tui.core.evaluation.summary import summarize
from dgym_tui.core.types import EvalSummary, FailedTest, ToolCall

CODE = ("def add(a, b):\n    return helper(a, b)\n\n\ndef helper(a, b):\n"
        "    if a == 2:\n        raise ValueError('boom')\n    return a + b\n")
TEST = ("from app import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n")


@pytest.fixture
def repo(make_repo):
    return make_repo({"app.py": CODE, "tests/test_app.py": TEST})


def _eval(env) -> EvalSummary:
    return env.step(ToolCall("eval", {})).eval


def test_failures_carry_test_id_and_location(repo, make_env, fast_pytest, every_terminal):
    env = make_env(repo, entrypoint=f"{fast_pytest} tests")
    first = env.reset()
    summary = first.eval
    assert (summary.passed, summary.failed, summary.problem) == (1, 1, "")
    [failure] = summary.failures
    assert failure.test_id == "tests/test_app.py::test_add" and failure.when == "call"
    assert (failure.path, failure.line) == ("app.py", 2)  # where the test enters the code
    assert failure.frames == [("tests/test_app.py", 5), ("app.py", 2), ("app.py", 7)]
    assert "ValueError: boom" in failure.message
    assert EvalSummary.from_dict(summary.to_dict()) == summary  # trajectories keep it


def test_os_exit_zero_in_code_under_test_cannot_score(repo, make_env, fast_pytest,
                                                      every_terminal):
    env = make_env(repo, entrypoint=f"{fast_pytest} tests")
    env.reset()
    env.step(ToolCall("rewrite", {"path": "app.py", "start": 1, "end": 1,
                                  "new_code": "import os\nos._exit(0)\ndef add(a, b):"}))
    assert (env.workspace.root / "app.py").read_text().startswith("import os")
    r = env.step(ToolCall("eval", {}))
    assert r.eval.exit_code == 0  # the process did exit 0 ...
    assert not r.resolved and r.score < r.max_score  # ... yet the score is not a pass
    assert "pytest ended before finishing its report" in r.observation
    r = env.step(ToolCall("submit", {}))
    assert r.done and not r.resolved


def test_os_exit_inside_a_test_after_others_passed(make_repo, make_env, fast_pytest,
                                                   every_terminal):
    repo = make_repo({"test_x.py": "import os\n\ndef test_a():\n    pass\n\n"
                                   "def test_b():\n    os._exit(0)\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_x.py")
    r = env.reset()
    assert (r.score, r.max_score, r.resolved) == (1, 2, False)


def test_exit_code_disagreeing_with_the_report(repo, make_env, fast_pytest):
    env = make_env(repo, entrypoint=f"{fast_pytest} tests -k zero; exit 3")
    r = env.reset()
    assert r.eval.passed == 1 and not r.resolved
    assert "exit code 3 disagrees" in r.eval.problem
    env = make_env(repo, entrypoint=f"{fast_pytest} tests || true")
    r = env.reset()
    assert r.eval.failed == 1 and "disagrees" in r.eval.problem and not r.resolved


def test_two_pytest_runs_add_up_and_nested_pytest_does_not_report(make_repo, make_env,
                                                                   fast_pytest):
    inner = ("import subprocess, sys\n\ndef test_outer():\n"
             "    subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider',"
             " 'inner_cases.py'])\n")
    repo = make_repo({"test_outer.py": inner,
                      "inner_cases.py": "def test_i1():\n    assert 0\n\ndef test_i2():\n"
                                        "    assert 0\n",
                      "test_more.py": "def test_m():\n    pass\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_outer.py && {fast_pytest} test_more.py")
    r = env.reset()
    assert (r.eval.passed, r.eval.failed, r.eval.problem) == (2, 0, "") and r.resolved


def test_non_pytest_entrypoint_still_scores_by_exit_code(make_repo, make_env):
    repo = make_repo({"check.py": "import sys\nsys.exit(0)\n"})
    env = make_env(repo, entrypoint="python check.py")
    r = env.reset()
    assert (r.score, r.max_score, r.resolved) == (1, 1, True)


def test_collection_error_is_a_failure_with_a_location(make_repo, make_env, fast_pytest):
    repo = make_repo({"test_broken.py": "import nothing_like_this\n"})
    env = make_env(repo, entrypoint=f"{fast_pytest} test_broken.py")
    r = env.reset()
    assert r.eval.errors == 1 and not r.resolved
    [failure] = r.eval.failures
    assert failure.when == "collect" and failure.test_id == "test_broken.py"


def test_summarize_rules_without_processes():
    rel = {"/w/app.py": "app.py", "/w/tests/test_app.py": "tests/test_app.py"}.get
    cut = PytestReport([SessionRecord(finished=False, counts={"passed": 3})])
    s = summarize("3 passed in 0.1s", 0, False, cut, rel)
    assert (s.passed, s.errors) == (3, 1) and s.problem
    ok = PytestReport([SessionRecord(True, {"passed": 2, "xfailed": 1}, 0)])
    s = summarize("", 0, False, ok, rel)
    assert (s.passed, s.skipped, s.problem) == (2, 1, "")
    timed = summarize("", None, True, cut, rel)
    assert timed.timed_out and timed.problem == ""  # the timeout says it already
    failing = PytestReport([SessionRecord(True, {"failed": 1}, 1, [{
        "test_id": "t", "frames": [["/w/tests/test_app.py", 5], ["/usr/lib/x.py", 1],
                                   ["/w/app.py", 2]]}])])
    [f] = summarize("", 1, False, failing, rel).failures
    assert f == FailedTest("t", "app.py", 2, "", "call",
                           [("tests/test_app.py", 5), ("app.py", 2)])
    assert summarize("1 passed in 0.01s", 0, False, None, rel).passed == 1  # no report


def test_eval_output_is_80_columns_wide(repo, make_env, fast_pytest, every_terminal):
    """pytest's separator lines follow COLUMNS: 80 in an eval, not the terminals' 200."""
    env = make_env(repo, entrypoint=f"{fast_pytest} tests")
    env.reset()
    output = env.step(ToolCall("eval", {})).observation
    separators = [line for line in output.splitlines() if line.startswith("____")
                  or line.startswith("=====")]
    assert separators and max(len(line) for line in separators) <= 80
