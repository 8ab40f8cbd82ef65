"""SWE-smith loader: the official package's record format, profiles, image names and grading."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from solution_helpers import play_solution

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.swebench import SWEBenchError, build_fixture_image, load_instances
from dgym_tui.benchmarks.swesmith import SWESmithBenchmark, default_instances, fix_patch
from dgym_tui.core.fs.patches import apply_patch
from dgym_tui.core.types import ToolCall
from dgym_tui.support.resources import resource_dir

REQUIRED = ("instance_id", "patch", "FAIL_TO_PASS")
(RECORD,) = load_instances(default_instances(), required=REQUIRED)
INSTANCE = RECORD["instance_id"]
CLEAN = resource_dir("data") / "swesmith" / "repos" / INSTANCE.rsplit(".", 1)[0]


def test_profile_gives_command_parser_and_image():
    bench = SWESmithBenchmark()
    assert bench.tasks() == [INSTANCE]
    spec = bench.spec_for(RECORD)
    assert spec.test_commands == ("bash -c 'source /opt/miniconda3/bin/activate; conda activate "
                                  "testbed; pytest --disable-warnings --color=no --tb=no --verbose'",)
    log = ("tests/test_attrs.py::test_setattr_keeps_the_key FAILED [ 25%]\n"
           "tests/test_dict.py::test_item_access PASSED [ 50%]\n")
    from dgym_tui.benchmarks.swebench_harness import parse_log

    assert parse_log(log, spec, RECORD) == {"tests/test_attrs.py::test_setattr_keeps_the_key": "FAILED",
                                            "tests/test_dict.py::test_item_access": "PASSED"}
    # the record's image wins; without one, the profile's name (lowercase)
    assert bench.image_for(RECORD) == RECORD["image_name"]
    no_image = {k: v for k, v in RECORD.items() if k != "image_name"}
    assert bench.image_for(no_image) == "swebench/swesmith.x86_64.mewwts_1776_addict.75284f95"
    details = bench.describe(INSTANCE)
    assert (details["fail_to_pass"], details["pass_to_pass"]) == (2, 2)


def test_records_without_a_profile_are_a_clear_error(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({**RECORD, "instance_id": "nobody__nothing.1234abcd.x",
                                "repo": "swesmith/nobody__nothing.1234abcd"}) + "\n")
    bench = SWESmithBenchmark(instances=str(path))
    with pytest.raises(SWEBenchError, match="no profile"):
        bench.describe("nobody__nothing.1234abcd.x")


def test_fix_is_the_bug_patch_reversed(tmp_path):
    buggy = tmp_path / "buggy"
    shutil.copytree(CLEAN, buggy)
    apply_patch(RECORD["patch"], buggy)
    fix = fix_patch(buggy, CLEAN, ["addict/addict.py"])
    assert fix.startswith("diff --git a/addict/addict.py b/addict/addict.py\n--- a/addict/addict.py")
    apply_patch(fix, buggy)
    assert (buggy / "addict/addict.py").read_text() == (CLEAN / "addict/addict.py").read_text()


@pytest.fixture(scope="module")
def smith_image():
    from dgym_tui.core.terminals.base import TerminalError

    try:
        return build_fixture_image(INSTANCE, repo=CLEAN, tag=RECORD["image_name"])
    except (TerminalError, SWEBenchError) as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"SWE-smith fixture image cannot be built under CI: {exc}")
        pytest.skip(str(exc))


@pytest.mark.docker
def test_gold_fix_resolves_and_the_bug_does_not(smith_image, tmp_path):
    task = get_benchmark("swesmith", cache_dir=tmp_path / "cache").load(INSTANCE)
    assert task.image == smith_image
    # the bug is in the working copy; the FAIL_TO_PASS test file is not
    assert "name.lower()" in (task.path / "addict/addict.py").read_text()
    assert not (task.path / "tests/test_attrs.py").exists()
    assert (task.path / "tests/test_dict.py").is_file()
    env = task.make_env()
    try:
        first = env.reset()
        assert (first.score, first.max_score, first.resolved) == (2, 4, False), first.observation
        grep = env.step(ToolCall("grep", {"pattern": "test_setattr_keeps_the_key"}))
        assert "tests/test_attrs.py" not in grep.observation
        result = play_solution(env, task)[-1]
        assert (result.score, result.max_score, result.resolved) == (4, 4, True), result.observation
    finally:
        env.close()


def test_details_show_the_profile_command_as_it_runs():
    details = SWESmithBenchmark().describe(INSTANCE)
    assert details["test_command"].startswith("bash -c 'source /opt/miniconda3/bin/activate;")
    assert details["image"] == RECORD["image_name"]
