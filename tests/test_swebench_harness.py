"""SWE-bench graded like the official harness: its commands, log parsers and resolution rule.

Our fixture instances (data/swebench) are one per harness log format: pytest
``-rA`` (with ids the records hold cut off at a space, and a capitalised id),
Django's ``runtests.py`` (with a docstring id) and sympy's ``bin/test``. Their
test commands run for real, on the host and on Docker; the harness's own
parsers read the logs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from solution_helpers import play_solution

from dgym_tui.benchmarks import Task, get_benchmark
from dgym_tui.benchmarks.swebench import (
    SWEBenchBenchmark,
    build_fixture_image,
    default_instances,
    fixture_repo,
    load_instances,
)
from dgym_tui.benchmarks.swebench_harness import (
    HarnessGrader,
    HarnessSpec,
    grade,
    harness_spec,
    parse_log,
)
from dgym_tui.core.types import EvalSummary

FIXTURES = {r["instance_id"]: r for r in load_instances(default_instances())}
ACTIVATE = ". /opt/miniconda3/bin/activate && conda activate testbed && "


def _record(instance_id, repo, version, test_files, f2p, p2p):
    """A classic-format record as the datasets ship it (JSON-string test lists)."""
    test_patch = "".join(f"diff --git a/{f} b/{f}\n--- a/{f}\n+++ b/{f}\n@@ -1 +1 @@\n-a\n+b\n"
                         for f in test_files)
    return {"instance_id": instance_id, "repo": repo, "version": version, "base_commit": "0" * 40,
            "patch": "", "test_patch": test_patch, "problem_statement": "",
            "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p)}


REAL = [
    _record("django__django-11099", "django/django", "3.0",
            ["tests/auth_tests/test_validators.py"],
            ["test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"],
            ["test_help_text (auth_tests.test_validators.MinimumLengthValidatorTest)",
             "Two passwords are equal, whatever their case."]),
    _record("sympy__sympy-20590", "sympy/sympy", "1.7", ["sympy/core/tests/test_basic.py"],
            ["test_immutable"], ["test__aresame", "test_structure"]),
    _record("pytest-dev__pytest-11143", "pytest-dev/pytest", "8.0",
            ["testing/test_assertrewrite.py"],
            ["testing/test_assertrewrite.py::TestIssue11140::test_constant_not_picked_as_module_docstring"],
            ["testing/test_assertrewrite.py::test_get_assertion_exprs[assert",
             "testing/test_assertrewrite.py::TestAssertionRewrite::test_name"]),
    _record("scikit-learn__scikit-learn-13142", "scikit-learn/scikit-learn", "0.21",
            ["sklearn/mixture/tests/test_bayesian_mixture.py",
             "sklearn/mixture/tests/test_gaussian_mixture.py"],
            ["sklearn/mixture/tests/test_gaussian_mixture.py::test_gaussian_mixture_fit_predict_n_init"],
            []),
    _record("Project-MONAI__MONAI-5640", "Project-MONAI/MONAI", "1.1", ["tests/test_x.py"],
            ["tests/test_x.py::test_a"], []),
]


@pytest.fixture
def real_bench(tmp_path):
    path = tmp_path / "real.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in REAL))
    return SWEBenchBenchmark(instances=str(path), cache_dir=tmp_path / "cache")


# ---------------------------------------------------------------- no Docker

def test_details_of_real_records_are_the_harness_commands(real_bench):
    """Django and sympy load without a test_command; every repository gets its own command."""
    details = {name: real_bench.describe(name) for name in real_bench.tasks()}
    django = details["django__django-11099"]
    assert django["image"] == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert django["test_command"] == (
        ACTIVATE + "export LANG=en_US.UTF-8 && export LANGUAGE=en_US:en && "
        "export LC_ALL=en_US.UTF-8 && ./tests/runtests.py --verbosity 2 --settings=test_sqlite "
        "--parallel 1 auth_tests.test_validators")
    assert (django["fail_to_pass"], django["pass_to_pass"]) == (1, 2)
    assert django["root_setup"] == "sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen"
    assert "root_setup" not in details["sympy__sympy-20590"]
    assert details["sympy__sympy-20590"]["test_command"] == (
        ACTIVATE + "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C "
        "--verbose sympy/core/tests/test_basic.py")
    # test files are run whole: the cut-off id never reaches the command line
    assert details["pytest-dev__pytest-11143"]["test_command"] == (
        ACTIVATE + "pytest -rA testing/test_assertrewrite.py")
    assert details["scikit-learn__scikit-learn-13142"]["test_command"] == (
        ACTIVATE + "pytest -rA sklearn/mixture/tests/test_bayesian_mixture.py "
        "sklearn/mixture/tests/test_gaussian_mixture.py")
    # a repository the harness does not know: pytest on the test files, no conda
    monai = details["Project-MONAI__MONAI-5640"]
    assert monai["test_command"] == "pytest -rA tests/test_x.py"
    assert monai["image"] == "swebench/sweb.eval.x86_64.project-monai_1776_monai-5640:latest"


def test_django_setup_runs_once_and_exports_before_every_run():
    spec = harness_spec(load_instances_from(REAL[0]))
    assert spec.setup == ("sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen",)
    assert spec.env == ("export LANG=en_US.UTF-8", "export LANGUAGE=en_US:en",
                        "export LC_ALL=en_US.UTF-8")
    assert spec.log_parser == "parse_log_django" and spec.directives == ("auth_tests.test_validators",)


def load_instances_from(record):
    from dgym_tui.benchmarks.swebench import normalize_instance

    return normalize_instance(record)


def test_new_format_record_uses_its_eval_script_and_parser():
    script = "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "source /opt/miniconda3/bin/activate",
        "conda activate testbed", "cd /testbed", "export LANG=C.UTF-8",
        "git checkout abc tests/test_a.py", "git apply -v - <<'EOF_1'", "diff", "EOF_1",
        "apt-get install -y fonts-dejavu",
        ": '>>>>> Start Test Output'", "pytest -rA tests/test_a.py", ": '>>>>> End Test Output'",
        "git checkout abc tests/test_a.py"])
    record = {**REAL[2], "image": "org/img:1", "eval_script": script,
              "log_parser": "parse_log_pytest_v2", "eval_type": "pass_and_fail"}
    spec = harness_spec(load_instances_from(record))
    assert spec.test_commands == ("pytest -rA tests/test_a.py",)
    assert spec.env == (". /opt/miniconda3/bin/activate", "conda activate testbed",
                        "export LANG=C.UTF-8")
    assert spec.setup == ("apt-get install -y fonts-dejavu",)
    assert spec.log_parser == "parse_log_pytest_v2" and not spec.fail_only
    assert parse_log("tests/test_a.py::test_b PASSED", spec, record) == {
        "tests/test_a.py::test_b": "PASSED"}


def test_resolution_rule_is_every_f2p_and_p2p_passing():
    status = {"a": "PASSED", "b": "PASSED", "c": "FAILED", "d": "XFAIL"}
    assert grade(status, ["a"], ["b", "d"]).resolved
    verdict = grade(status, ["a", "c"], ["b"])
    assert not verdict.resolved and verdict.failed == ("c",) and verdict.passed == ("a", "b")
    # a test missing from the log counts as failed
    assert not grade(status, ["a"], ["missing"]).resolved


def _run_fixture(instance, tmp_path, gold):
    """Run a fixture's harness test command on the host; return the test log."""
    work = tmp_path / ("gold" if gold else "base")
    shutil.copytree(fixture_repo(instance["instance_id"]), work)
    patch = instance["test_patch"] + (instance["patch"] if gold else "")
    subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=work, check=True)
    spec = harness_spec(instance)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"],
           "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONPATH": str(work)}  # as the images do
    done = subprocess.run(["sh", "-c", spec.command(conda=False)], cwd=work, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    return spec, done.stdout


@pytest.mark.parametrize("instance_id", sorted(FIXTURES))
def test_fixture_logs_grade_like_the_harness(instance_id, tmp_path):
    """Each fixture's real test log: the base fails its FAIL_TO_PASS tests, gold resolves."""
    instance = FIXTURES[instance_id]
    spec, base_log = _run_fixture(instance, tmp_path, gold=False)
    grader = HarnessGrader(spec, instance)
    base = grader.grade_log(base_log)
    assert not base.resolved, base_log
    assert set(base.failed) == set(instance["FAIL_TO_PASS"]), base_log
    assert set(base.passed) == set(instance["PASS_TO_PASS"]), base_log
    _, gold_log = _run_fixture(instance, tmp_path, gold=True)
    gold = grader.grade_log(gold_log)
    assert gold.resolved and not gold.failed, gold_log


def test_fixtures_cover_each_harness_format():
    parsers = {i: harness_spec(r).log_parser for i, r in FIXTURES.items()}
    assert parsers["dgym__django-1"] == "parse_log_django"
    assert parsers["dgym__sympy-1"] == "parse_log_sympy"
    assert parsers["Dgym-Fixtures__TextOps-1"] == "parse_log_pytest"
    cut = [t for t in FIXTURES["Dgym-Fixtures__TextOps-1"]["FAIL_TO_PASS"] if t.endswith("[hello")]
    assert cut, "the pytest fixture must hold an id cut off at a space"
    assert "Two items are joined by the conjunction alone." in FIXTURES["dgym__django-1"]["FAIL_TO_PASS"]


def test_grader_reads_the_full_log_through_the_terminal(tmp_path):
    """The agent's output may be cut; the grader reads the whole log back."""
    from dgym_tui.core.terminals.base import RunResult
    from dgym_tui.core.terminals.local import LocalTerminal

    log = tmp_path / "test.log"
    log.write_text("PASSED t.py::test_a\nPASSED t.py::test_b\n")
    spec = HarnessSpec("x/y", "1", ("pytest -rA t.py",), known=False)
    instance = {"instance_id": "x", "FAIL_TO_PASS": ["t.py::test_a"], "PASS_TO_PASS": ["t.py::test_b"]}
    terminal = LocalTerminal()
    terminal.start(str(tmp_path))
    try:
        cut = RunResult(exit_code=0, output="PASSED t.py::test_a\n... [output truncated] ...")
        summary = HarnessGrader(spec, instance, str(log))(cut, terminal)
        assert summary == EvalSummary(passed=2, failed=0, exit_code=0)
        without_log = HarnessGrader(spec, instance)(cut, terminal)
        assert (without_log.passed, without_log.failed) == (1, 1)
    finally:
        terminal.close()


def test_task_carries_the_grader_to_the_env_but_not_to_dicts(tmp_path, make_repo):
    repo = make_repo({"test_a.py": "def test_a():\n    assert True\n"})
    calls = []

    def grader(result, terminal):
        calls.append(result.exit_code)
        return EvalSummary(passed=0, failed=3, exit_code=result.exit_code)

    task = Task(name="t", benchmark="local", path=repo, entrypoint="python -m pytest -q",
                grader=grader)
    assert "grader" not in task.to_dict(include_meta=True)
    env = task.make_env(terminal="local")
    try:
        first = env.reset()
        assert calls == [0] and (first.score, first.max_score, first.resolved) == (0, 3, False)
    finally:
        env.close()


def test_a_failing_grader_falls_back_to_the_pytest_line(tmp_path, make_repo):
    repo = make_repo({"test_a.py": "def test_a():\n    assert True\n"})

    def broken(result, terminal):
        raise RuntimeError("bug in a grader")

    task = Task(name="t", benchmark="local", path=repo, entrypoint="python -m pytest -q",
                grader=broken)
    env = task.make_env(terminal="local")
    try:
        first = env.reset()
        assert (first.score, first.max_score, first.resolved) == (1, 1, True)
    finally:
        env.close()


# ---------------------------------------------------------------- Docker

@pytest.fixture(scope="module")
def fixture_images():
    """Build (cached by tag and content) the image of every fixture instance."""
    from dgym_tui.benchmarks.swebench import SWEBenchError
    from dgym_tui.core.terminals.base import TerminalError

    try:
        return {i: build_fixture_image(i) for i in FIXTURES}
    except (TerminalError, SWEBenchError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"SWE-bench fixture images cannot be built under CI: {exc}")
        pytest.skip(str(exc))


@pytest.mark.docker
@pytest.mark.parametrize("name, instance_id", [
    *(("swebench", i) for i in sorted(FIXTURES)),
    ("swebench-debug", "dgym__django-1"),
    ("swebench-debug", "dgym__sympy-1"),
])
def test_gold_patch_resolves_and_the_base_does_not(name, instance_id, fixture_images, tmp_path):
    instance = FIXTURES[instance_id]
    task = get_benchmark(name, cache_dir=tmp_path / "cache").load(instance_id)
    assert task.image == fixture_images[instance_id] == task.image.lower()
    env = task.make_env()
    try:
        first = env.reset()
        n_f2p, n_p2p = len(instance["FAIL_TO_PASS"]), len(instance["PASS_TO_PASS"])
        assert (first.score, first.max_score, first.resolved) == (n_p2p, n_f2p + n_p2p, False), \
            first.observation
        result = play_solution(env, task)[-1]
        assert (result.score, result.max_score, result.resolved) == (
            n_f2p + n_p2p, n_f2p + n_p2p, True), result.observation
    finally:
        env.close()


@pytest.mark.docker
@pytest.mark.parametrize("instance_id, started", [
    ("dgym__django-1", "python -m pdb ./tests/runtests.py"),
    ("dgym__sympy-1", "python -m pdb bin/test"),
])
def test_debug_variant_runs_script_runners_under_pdb(instance_id, started, fixture_images,
                                                     tmp_path):
    from dgym_tui.core.types import ToolCall

    task = get_benchmark("swebench-debug", cache_dir=tmp_path / "cache").load(instance_id)
    assert started in task.debug_entrypoint
    env = task.make_env()
    try:
        env.reset()
        stop = env.step(ToolCall("pdb", {"command": "where"}))
        assert not stop.error, stop.observation
        assert "<module>()" in stop.observation, stop.observation
    finally:
        env.close()


def test_list_tasks_details_and_json(real_bench, tmp_path, capsys):
    """The CLI prints the harness's command and the test counts, without any image."""
    from dgym_tui.cli.main import main

    path = tmp_path / "real.jsonl"
    assert main(["list-tasks", "swebench", "-p", f"instances={path}", "--details",
                 "-p", "tasks=django__django-11099,sympy__sympy-20590"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:5] == [
        "django__django-11099",
        "  image: swebench/sweb.eval.x86_64.django_1776_django-11099:latest",
        "  test: " + real_bench.describe("django__django-11099")["test_command"],
        "  FAIL_TO_PASS: 1",
        "  PASS_TO_PASS: 2"]
    assert "sympy__sympy-20590" in out and "bin/test -C --verbose" in out
    assert main(["list-tasks", "swebench", "-p", f"instances={path}", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["name"] for r in rows] == real_bench.tasks()
    assert rows[0] == real_bench.describe(rows[0]["name"])


@pytest.mark.docker
def test_prepull_skips_images_that_are_present(fixture_images, capsys):
    from dgym_tui.cli.main import main

    assert SWEBenchBenchmark().prepull(progress=False) == []
    assert main(["prepull", "swebench", "--no-progress"]) == 0
    assert "pulled 0 image(s)" in capsys.readouterr().out


@pytest.mark.docker
def test_new_format_record_resolves_with_its_eval_script(fixture_images, tmp_path):
    """A swebench 5.x record (image, eval_script, log_parser) of the sympy fixture."""
    old = FIXTURES["dgym__sympy-1"]
    script = "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "cd /testbed", "export DGYM_NEW_FORMAT=1",
        "id -u > /etc/dgym-setup-uid",  # setup the harness runs as root
        f"git checkout {old['base_commit']} sympy/core/tests/test_numbers.py",
        "git apply -v - <<'EOF_114329324912'", old["test_patch"].rstrip("\n"), "EOF_114329324912",
        ": '>>>>> Start Test Output'",
        "bin/test -C --verbose sympy/core/tests/test_numbers.py",
        ": '>>>>> End Test Output'",
        f"git checkout {old['base_commit']} sympy/core/tests/test_numbers.py"])
    record = {k: v for k, v in old.items() if k not in ("image_name", "repo", "version")}
    record.update(instance_id="dgym__sympy-new-1", image=fixture_images["dgym__sympy-1"],
                  eval_script=script, log_parser="parse_log_sympy", eval_type="pass_and_fail",
                  repo="dgym/sympy-like", version="1")
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps(record) + "\n")
    bench = SWEBenchBenchmark(instances=str(path), cache_dir=tmp_path / "cache")
    assert bench.describe("dgym__sympy-new-1")["test_command"] == (
        "export DGYM_NEW_FORMAT=1 && bin/test -C --verbose sympy/core/tests/test_numbers.py")
    task = bench.load("dgym__sympy-new-1")
    env = task.make_env()
    try:
        first = env.reset()
        assert (first.score, first.max_score, first.resolved) == (2, 4, False), first.observation
        assert "Setup command failed" not in first.observation
        # the setup line ran as root; the agent's commands run as the sandbox user
        uid = env.terminal.run("cat /etc/dgym-setup-uid; id -u; touch /etc/x").output.split()
        assert uid[:2] == ["0", str(env.terminal.run_as[0])] and "denied" in " ".join(uid)
        result = play_solution(env, task)[-1]
        assert (result.score, result.resolved) == (4, True), result.observation
    finally:
        env.close()


@pytest.mark.docker
def test_a_failing_root_setup_line_is_a_note_in_the_first_observation(make_repo):
    """Each root setup line runs; a failing one is named in reset's observation."""
    from dgym_tui import RepoEnv

    repo = make_repo({"test_a.py": "def test_a():\n    assert True\n"})
    options = {"root_setup": ["exit 3", "id -u > /etc/dgym-setup-uid"]}
    with RepoEnv(repo, entrypoint="python -m pytest -q", terminal="docker",
                 terminal_options=options) as env:
        first = env.reset()
        assert "Setup command failed (exit code 3, as root): exit 3" in first.observation
        assert env.terminal.run("cat /etc/dgym-setup-uid").output.strip() == "0"
        assert first.score == 1, first.observation
