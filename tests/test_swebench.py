"""SWE-bench(-debug) loader, the diff reader, and the solution policy on our offline fixtures.

The harness side (commands, parsers, grading per format) is in test_swebench_harness.py."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from solution_helpers import play_solution

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.swebench import (
    HARNESS_IMAGE_TEMPLATE,
    SWEBenchBenchmark,
    SWEBenchError,
    default_instances,
    fixture_image_name,
    harness_id,
    hidden_file_commands,
    load_instances,
)
from dgym_tui.core.fs.patches import PatchError, apply_patch, parse_patch
from dgym_tui.core.types import ToolCall
from dgym_tui.policies.solution import SolutionPolicy
from dgym_tui.support.resources import resource_dir

FIXTURE_REPO = resource_dir("data") / "swebench" / "repos" / "dgym__calc-1"
INSTANCE = "dgym__calc-1"


def _fixture():
    return load_instances(default_instances())[0]


# ---------------------------------------------------------------- no Docker

def test_instances_load_and_normalize(tmp_path):
    inst = _fixture()
    assert inst["instance_id"] == INSTANCE
    assert inst["FAIL_TO_PASS"] == [
        "tests/test_evaluator.py::test_subtraction_is_left_associative",
        "tests/test_evaluator.py::test_division_is_left_associative"]
    assert len(inst["PASS_TO_PASS"]) == 4
    # a JSON list file with real lists (not JSON strings) reads the same
    as_json = tmp_path / "one.json"
    raw = json.loads(default_instances().read_text().splitlines()[0])
    raw["FAIL_TO_PASS"] = json.loads(raw["FAIL_TO_PASS"])
    as_json.write_text(json.dumps([raw]))
    assert load_instances(as_json)[0]["FAIL_TO_PASS"] == inst["FAIL_TO_PASS"]


def test_bad_inputs_are_one_line_errors(tmp_path):
    with pytest.raises(SWEBenchError, match="does not exist"):
        load_instances(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "x"}\n')
    with pytest.raises(SWEBenchError, match="lacks patch, test_patch, FAIL_TO_PASS"):
        load_instances(bad)


def test_image_names():
    bench = SWEBenchBenchmark()
    inst = dict(_fixture())
    # our fixtures name their images like the harness's, in a namespace of their own
    assert bench.image_for(inst) == "dgym-fixture/sweb.eval.x86_64.dgym_1776_calc-1:latest"
    for record in load_instances(default_instances()):
        assert record["image_name"] == fixture_image_name(record["instance_id"])
    assert harness_id("astropy__astropy-12907") == "astropy_1776_astropy-12907"
    inst.pop("image_name")
    real = SWEBenchBenchmark(instances=str(default_instances()))
    assert real.image_for(inst) == HARNESS_IMAGE_TEMPLATE.format(harness_id="dgym_1776_calc-1")
    assert real.image_for(inst) == "swebench/sweb.eval.x86_64.dgym_1776_calc-1:latest"
    # ids with capitals are lowercased, as the harness does
    monai = {**inst, "instance_id": "Project-MONAI__MONAI-5640"}
    assert real.image_for(monai) == "swebench/sweb.eval.x86_64.project-monai_1776_monai-5640:latest"
    local = SWEBenchBenchmark(instances=str(default_instances()), namespace="")
    assert local.image_for(monai) == "sweb.eval.x86_64.project-monai__monai-5640:latest"
    # the record's own image wins over the harness name; a template wins over both
    assert real.image_for({**inst, "image_name": "mine:1"}) == "mine:1"
    assert real.image_for({**inst, "image": "new-format:1"}) == "new-format:1"
    custom = SWEBenchBenchmark(image_template="mine/{instance_id}:v1")
    assert custom.image_for({**inst, "image": "x"}) == "mine/dgym__calc-1:v1"


def test_tasks_file_exclude_and_unknown_ids(tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("# picked\ndgym__django-1\n\ndgym__sympy-1\n")
    assert SWEBenchBenchmark(tasks=str(ids)).tasks() == ["dgym__django-1", "dgym__sympy-1"]
    assert SWEBenchBenchmark(tasks=str(ids), exclude=["dgym__sympy-1"]).tasks() == ["dgym__django-1"]
    assert SWEBenchBenchmark(tasks="dgym__calc-1,dgym__sympy-1").tasks() == [
        "dgym__calc-1", "dgym__sympy-1"]
    assert "dgym__calc-1" not in SWEBenchBenchmark(exclude="dgym__calc-1").tasks()
    with pytest.raises(SWEBenchError, match="did you mean dgym__django-1"):
        SWEBenchBenchmark(tasks=["dgym__djang-1"])


def test_named_sets_map_to_dataset_ids_with_a_pinned_revision(monkeypatch):
    import sys
    import types

    calls = []

    def load_dataset(name, split, revision):
        calls.append((name, split, revision))
        return [json.loads(default_instances().read_text().splitlines()[0])]

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    bench = SWEBenchBenchmark(instances="verified", revision="abc123")
    assert calls == [("SWE-bench/SWE-bench_Verified", "test", "abc123")]
    assert bench.tasks() == ["dgym__calc-1"]
    SWEBenchBenchmark(instances="lite", split="dev")
    assert calls[-1] == ("SWE-bench/SWE-bench_Lite", "dev", None)


def test_patch_reader_agrees_with_git_apply(tmp_path):
    inst = _fixture()
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    shutil.copytree(FIXTURE_REPO, ours)
    shutil.copytree(FIXTURE_REPO, theirs)
    patch = inst["patch"] + inst["test_patch"]
    assert apply_patch(patch, ours) == ["calc/evaluator.py", "tests/test_evaluator.py"]
    subprocess.run(["git", "apply", "-"], input=patch, text=True, cwd=theirs, check=True)
    for rel in ("calc/evaluator.py", "tests/test_evaluator.py"):
        assert (ours / rel).read_text() == (theirs / rel).read_text()
    # applying twice fails and changes nothing
    before = (ours / "calc/evaluator.py").read_text()
    with pytest.raises(PatchError, match="does not apply"):
        apply_patch(inst["patch"], ours)
    assert (ours / "calc/evaluator.py").read_text() == before


def test_patch_reader_new_file_and_no_newline(tmp_path):
    patch = ("diff --git a/new.py b/new.py\nnew file mode 100644\n--- /dev/null\n+++ b/new.py\n"
             "@@ -0,0 +1,2 @@\n+a = 1\n+b = 2\n\\ No newline at end of file\n")
    (fp,) = parse_patch(patch)
    assert fp.old_path is None and fp.path == "new.py"
    apply_patch(patch, tmp_path)
    assert (tmp_path / "new.py").read_text() == "a = 1\nb = 2"


def test_solution_plan_is_one_rewrite_per_hunk(tmp_path):
    inst = _fixture()
    policy = SolutionPolicy.from_patch(inst["patch"], FIXTURE_REPO)
    policy.reset(None)
    plan = policy.plan()
    assert [a["name"] for a in plan] == ["rewrite", "submit"]
    args = plan[0]["arguments"]
    assert (args["path"], args["start"], args["end"]) == ("calc/evaluator.py", 23, 42)
    assert "while self.peek() in" in args["new_code"]


def test_hidden_file_commands_round_trip(tmp_path):
    text = "x = 'é'\n" * 20000  # > one chunk
    commands = hidden_file_commands({"t/test_a.py": text}, folder=str(tmp_path / "h"))
    assert len(commands) > 2
    for command in commands:
        subprocess.run(["sh", "-c", command], check=True)
    assert (tmp_path / "h" / "t" / "test_a.py").read_text(encoding="utf-8") == text


# ---------------------------------------------------------------- Docker

def _gold_lines():
    """Lines the gold patch adds that appear nowhere in the buggy code (stripped)."""
    base = {line.strip() for line in (FIXTURE_REPO / "calc/evaluator.py").read_text().splitlines()}
    added = [line[1:].strip() for line in _fixture()["patch"].splitlines()
             if line.startswith("+") and not line.startswith("+++")]
    lines = [line for line in added if line and line not in base]
    assert len(lines) >= 4
    return lines


@pytest.mark.docker
@pytest.mark.parametrize("name", ["swebench", "swebench-debug"])
def test_solution_resolves_fixture(name, fixture_image, tmp_path):
    bench = get_benchmark(name, cache_dir=tmp_path / "cache")
    task = bench.load(INSTANCE)
    assert task.image == fixture_image and task.terminal == "docker"
    assert task.meta["patch"] == _fixture()["patch"]
    env = task.make_env()
    try:
        first = env.reset()
        steps = play_solution(env, task)
        # failing before: the 2 FAIL_TO_PASS tests fail, the 4 PASS_TO_PASS pass
        assert (first.score, first.max_score, first.resolved) == (4, 6, False)
        assert "test_subtraction_is_left_associative" in first.observation
        final = steps[-1]
        assert [s.action.name for s in steps] == ["rewrite", "submit"]
        assert (final.score, final.max_score, final.resolved, final.done) == (6, 6, True, True)
        assert env.patch().count("+++ b/") == 1 and "calc/evaluator.py" in env.patch()
    finally:
        env.close()


@pytest.mark.docker
def test_repo_copied_from_image_at_base_commit(fixture_image, tmp_path):
    import docker

    out = docker.from_env().containers.run(fixture_image, ["git", "rev-parse", "HEAD"],
                                           remove=True).decode().strip()
    assert out == _fixture()["base_commit"]
    task = get_benchmark("swebench", cache_dir=tmp_path).load(INSTANCE)
    files = sorted(p.relative_to(task.path).as_posix() for p in task.path.rglob("*")
                   if p.is_file())
    assert files == ["README.md", "calc/__init__.py", "calc/evaluator.py", "calc/tokenizer.py",
                     "tests/test_evaluator.py"]
    for rel in files:
        assert (task.path / rel).read_bytes() == (FIXTURE_REPO / rel).read_bytes()


@pytest.mark.docker
def test_debug_variant_has_failing_tests_and_no_gold_patch(fixture_image, tmp_path):
    task = get_benchmark("swebench-debug", cache_dir=tmp_path).load(INSTANCE)
    assert "FAIL_TO_PASS" not in task.description
    env = task.make_env()
    try:
        first = env.reset()
        assert not first.resolved and first.score == 4 and first.max_score == 6
        seen = [first.observation]
        # the new tests are in the working copy, read-only
        view = env.step(ToolCall("view", {"path": "tests/test_evaluator.py"}))
        assert "test_division_is_left_associative" in view.observation
        seen.append(view.observation)
        assert env.step(ToolCall("rewrite", {"path": "tests/test_evaluator.py", "start": 1,
                                             "new_code": "# gone\n"})).error
        seen.append(env.step(ToolCall("listdir", {"path": ".", "depth": 3})).observation)
        for word in ("while", "value", "right"):
            seen.append(env.step(ToolCall("grep", {"pattern": word})).observation)
        # pdb runs the failing tests
        pdb = env.step(ToolCall("pdb", {"command": "c"}))
        seen.append(pdb.observation)
        assert "test_subtraction_is_left_associative" in pdb.observation or \
            "AssertionError" in pdb.observation, pdb.observation
        # inside the sandbox too: nothing anywhere in the working copy holds the fix
        probe = env.terminal.run("cat $(find . -type f -name '*.py')")
        seen.append(probe.output)
        text = "\n".join(seen)
        for line in _gold_lines():
            assert line not in text, line
    finally:
        env.close()


@pytest.mark.docker
def test_swebench_hides_new_tests_from_the_working_copy(fixture_image, tmp_path):
    task = get_benchmark("swebench", cache_dir=tmp_path).load(INSTANCE)
    env = task.make_env()
    try:
        first = env.reset()
        assert (first.score, first.max_score) == (4, 6)
        grep = env.step(ToolCall("grep", {"pattern": "left_associative"}))
        assert "tests/test_evaluator.py" not in grep.observation
        assert _fixture()["patch"] not in "".join(task.setup_commands + [task.entrypoint])
    finally:
        env.close()
