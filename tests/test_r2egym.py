"""R2E-Gym records: loading, R2E-Gym's log parser and rule, and the offline fixture end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from solution_helpers import play_solution

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.r2egym import (
    R2EGrader,
    R2EGymError,
    build_fixture_images,
    compare,
    default_instances,
    issue_text,
    normalize_record,
    solution_files,
    status_map,
)
from dgym_tui.core.terminals.base import RunResult

TASK = "wordstat__5d1f0c2a9b7e"
LOG = """\
============================= test session starts ==============================
collected 3 items

r2e_tests/test_1.py .FF                                                  [100%]
=================================== FAILURES ===================================
=========================== short test summary info ============================
PASSED r2e_tests/test_1.py::test_count_words
FAILED r2e_tests/test_1.py::test_lines_and_tabs - assert 3 == 4
FAILED r2e_tests/test_1.py::\x1b[1mtest_contractions_split\x1b[0m - AssertionError
========================= 2 failed, 1 passed in 0.03s ==========================
"""


def _record() -> dict:
    return json.loads(default_instances().read_text().splitlines()[0])


def test_record_fields_and_the_issue_text():
    rec = normalize_record(_record())
    assert rec["instance_id"] == TASK and rec["repo_name"] == "wordstat"
    assert rec["image"].startswith("dgym-fixture/wordstat_final:")
    assert rec["expected"]["test_1.py::test_contractions_split"] == "FAILED"
    text = issue_text(rec["problem_statement"])
    assert text.startswith("Title: count_words ignores line breaks")
    assert "Do not change the tests" not in text and "[ISSUE]" not in text
    assert issue_text("no marks here") == "no marks here"
    assert list(solution_files(rec["parsed_commit_content"])) == ["wordstat/counter.py"]
    with pytest.raises(R2EGymError, match="no docker_image"):
        normalize_record({"repo_name": "x", "expected_output_json": "{}"})
    with pytest.raises(R2EGymError, match="no expected_output_json"):
        normalize_record({"docker_image": "a/b:c", "expected_output_json": "not json"})


def test_log_parser_and_rule_as_r2e_gym():
    expected = _record()["expected_output_json"]
    expected = json.loads(expected)
    parsed = status_map(LOG, expected)
    assert parsed == {"test_1.py::test_count_words": "PASSED",
                      "test_1.py::test_lines_and_tabs": "FAILED",
                      "test_1.py::test_contractions_split": "FAILED"}
    verdict = compare(parsed, expected)
    assert verdict.mismatched == ["test_1.py::test_lines_and_tabs"] and not verdict.resolved
    fixed = LOG.replace("FAILED r2e_tests/test_1.py::test_lines_and_tabs - assert 3 == 4",
                        "PASSED r2e_tests/test_1.py::test_lines_and_tabs")
    assert compare(status_map(fixed, expected), expected).resolved
    # an expected failure that passes, a test the map lacks, and no summary at all: not resolved
    assert not compare(status_map(fixed.replace("FAILED r2e", "PASSED r2e"), expected),
                       expected).resolved
    extra = fixed + "PASSED r2e_tests/test_1.py::test_new\n"
    assert compare(status_map(extra, expected), expected).extra == ["test_1.py::test_new"]
    assert status_map("collected 0 items", expected) == {}
    # the older naming (Class.test) is matched when the expected map uses it
    older = {"TestWords.test_a": "PASSED"}
    log = "=== short test summary info ===\nPASSED r2e_tests/test_1.py::TestWords::test_a\n"
    assert compare(status_map(log, older), older).resolved


def test_grader_scores_matches_and_reads_the_full_log():
    grader = R2EGrader(json.loads(_record()["expected_output_json"]), log_path="")
    summary = grader(RunResult(exit_code=1, output=LOG), None)
    assert (summary.passed, summary.failed, summary.exit_code) == (2, 1, 1)


def test_list_tasks_details_without_docker(tmp_path):
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent.sock"}
    out = subprocess.run([sys.executable, "-m", "dgym_tui.cli.main", "list-tasks", "r2egym",
                          "--details"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert TASK in out.stdout
    assert "image: dgym-fixture/wordstat_final:5d1f0c2a9b7e" in out.stdout
    assert "test: bash /testbed/run_tests.sh" in out.stdout
    assert "expected_tests: 3" in out.stdout


@pytest.fixture(scope="module")
def r2e_image():
    from dgym_tui.core.terminals.base import TerminalError

    try:
        return build_fixture_images()[TASK]
    except (TerminalError, ValueError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the R2E-Gym fixture image cannot be built under CI: {exc}")
        pytest.skip(str(exc))


@pytest.mark.docker
@pytest.mark.timeout(600)
def test_solution_resolves_the_fixture_and_the_tests_stay_hidden(docker_ready, r2e_image,
                                                                 tmp_path):
    bench = get_benchmark("r2egym", cache_dir=tmp_path / "cache")
    assert bench.prepull(progress=False) == []  # the image is there: nothing to pull
    task = bench.load(TASK)
    assert task.image == r2e_image and task.terminal == "docker"
    assert task.description.startswith("Title: count_words ignores line breaks")
    root = task.path
    assert (root / "wordstat" / "counter.py").is_file() and (root / "tests").is_dir()
    assert not (root / "run_tests.sh").exists() and not (root / "r2e_tests").exists()
    env = task.make_env(tools=["bash", "view", "rewrite", "pdb", "submit"])
    try:
        first = env.reset()
        assert (first.score, first.max_score, first.resolved) == (2, 3, False)
        assert "test_lines_and_tabs" in first.observation
        # the agent's shell finds neither the test script nor the hidden tests in the repository
        from dgym_tui import ToolCall

        r = env.step(ToolCall("bash", {"command": "ls -a; ls r2e_tests run_tests.sh"}))
        assert "counter" not in r.observation and r.data["exit_code"] != 0
        assert "test_contractions_split" not in r.observation
        steps = play_solution(env, task)
        assert [s.action.name for s in steps] == ["rewrite", "submit"]
        final = steps[-1]
        assert (final.score, final.max_score, final.resolved, final.done) == (3, 3, True, True)
        assert "wordstat/counter.py" in env.patch() and "r2e_tests" not in env.patch()
    finally:
        env.close()


def test_copy_out_keeps_absolute_links_and_never_writes_through_them(tmp_path):
    """A hostile image: a link to /etc, then a member written through it, and `..` links."""
    import io
    import tarfile

    from dgym_tui.benchmarks.swebench import _extract

    outside = tmp_path / "outside"
    outside.mkdir()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        def add(name, kind=tarfile.REGTYPE, link="", data=b"x"):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            info.size = 0 if kind != tarfile.REGTYPE else len(data)
            tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

        add("testbed/.venv/bin/python3", tarfile.SYMTYPE, "/usr/bin/python3")
        add("testbed/evil", tarfile.SYMTYPE, str(outside))
        add("testbed/evil/planted.txt")
        add("testbed/up", tarfile.SYMTYPE, "../../outside")
        add("testbed/code.py", data=b"x = 1\n")
    raw.seek(0)
    _extract(raw, tmp_path / "repo", absolute_links=True)
    repo = tmp_path / "repo"
    assert os.readlink(repo / ".venv/bin/python3") == "/usr/bin/python3"
    assert (repo / "code.py").read_text() == "x = 1\n"
    assert not (outside / "planted.txt").exists()  # never written through the link
    assert not (repo / "up").is_symlink()  # a relative link out is still refused
    raw.seek(0)
    _extract(raw, tmp_path / "plain")  # the default (swebench): no absolute links
    assert not os.path.lexists(tmp_path / "plain/.venv/bin/python3")
