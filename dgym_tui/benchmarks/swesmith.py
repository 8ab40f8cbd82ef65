"""SWE-smith: synthetic bugs in real repositories, in the official ``swesmith`` package's format.

A SWE-smith record (``instance_id`` = ``<repo name>.<bug id>``, ``repo``,
``patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS``, ``image_name``,
``problem_statement``) describes a bug *introduced* into a repository: its
``patch`` creates the bug, so the fix is that patch reversed. The repository
profile of the official package (``pip install swesmith``; imported only
here) gives the image name, the test command and the log parser.

Per instance:

- **Image**: the record's ``image_name``, else the profile's (the
  repository, clean, at ``/testbed``); ``image_template`` wins over both.
- **Working copy**: the clean repository copied out of the image with the
  bug ``patch`` applied and the FAIL_TO_PASS test files taken out, as the
  SWE-smith task branches do; those files are laid back over a scratch copy
  when the tests run (as for ``swebench``), so the agent never sees them.
- **Tests and grading**: the profile's test command (run with ``bash``), its
  log parser, and SWE-bench's rule: resolved = every FAIL_TO_PASS and
  PASS_TO_PASS test passes. ``Task.meta["gold_patch"]`` is the fix.

The same options as :class:`~dgym_tui.benchmarks.swebench.SWEBenchBenchmark`;
``instances=smith`` loads the published dataset.
"""

from __future__ import annotations

import difflib
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any

from dgym_tui.benchmarks.base import Task, patched_copy
from dgym_tui.benchmarks.swebench import (
    TEST_LOG,
    SWEBenchBenchmark,
    SWEBenchError,
    harness_id,
    patch_paths,
)
from dgym_tui.benchmarks.swebench_harness import (
    HarnessGrader,
    HarnessMissingError,
    HarnessSpec,
)
from dgym_tui.support.resources import resource_dir

#: The published instances.
NAMED_DATASETS = {"smith": "SWE-bench/SWE-smith", "full": "SWE-bench/SWE-smith"}
#: Marker of a complete buggy working copy.


def default_instances() -> Path:
    """Return our offline SWE-smith fixture instances (``data/swesmith/instances.jsonl``)."""
    return resource_dir("data") / "swesmith" / "instances.jsonl"


def profile_for(instance: dict[str, Any]) -> Any:
    """Return the official package's repository profile of ``instance``.

    Raises:
        HarnessMissingError: ``swesmith`` is not installed.
        SWEBenchError: no profile for the instance's repository.
    """
    try:
        from swesmith.profiles import registry
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "swesmith":
            raise HarnessMissingError("SWE-smith tasks need the official package: "
                                      "pip install swesmith") from None
        raise
    try:
        return registry.get_from_inst(instance)
    except KeyError:
        raise SWEBenchError(f"swesmith has no profile for {instance.get('repo')!r} "
                            f"({instance['instance_id']}); upgrade swesmith") from None


def fix_patch(buggy: Path, clean: Path, paths: list[str]) -> str:
    """Return the unified diff (git style) that turns ``buggy`` back into ``clean`` for ``paths``."""
    parts = []
    for rel in paths:
        before = (buggy / rel).read_text(encoding="utf-8") if (buggy / rel).is_file() else ""
        after = (clean / rel).read_text(encoding="utf-8") if (clean / rel).is_file() else ""
        diff = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                    f"a/{rel}", f"b/{rel}")
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                       for line in diff)
        if text:
            parts.append(f"diff --git a/{rel} b/{rel}\n{text}")
    return "".join(parts)


class SWESmithBenchmark(SWEBenchBenchmark):
    """SWE-smith instances as Docker tasks (see the module docstring)."""

    name = "swesmith"
    named_datasets = NAMED_DATASETS
    required_fields = ("instance_id", "patch", "FAIL_TO_PASS")

    @staticmethod
    def default_source() -> Path:
        return default_instances()

    def image_for(self, instance: dict[str, Any]) -> str:
        """Return the Docker image of ``instance``: template, record, then the profile's."""
        if self.image_template:
            return self.image_template.format(instance_id=instance["instance_id"],
                                              harness_id=harness_id(instance["instance_id"]))
        return instance.get("image_name") or profile_for(instance).image_name

    def spec_for(self, instance: dict[str, Any]) -> HarnessSpec:
        """The profile's test command (under ``bash``) and log parser."""
        profile = profile_for(instance)
        command, _ = profile.get_test_cmd(instance)
        return HarnessSpec(str(instance.get("repo", profile.repo_name)), profile.commit[:8],
                           (f"bash -c {shlex.quote(command)}",), log_parser="profile", known=False,
                           parse=profile.log_parser)

    def _load(self, task_name: str) -> Task:
        instance = self.instances[task_name]
        spec = self.spec_for(instance)
        image = self.image_for(instance)
        clean, info = self._materialize(task_name, image)
        f2p_files, p2p_files = profile_for(instance).get_test_files(instance)
        buggy = self._buggy_copy(clean, instance, f2p_files)
        changed = patch_paths(instance["patch"])
        meta = {k: instance.get(k) for k in ("instance_id", "repo", "patch", "FAIL_TO_PASS",
                                             "PASS_TO_PASS")}
        meta.update(image=image, gold_patch=fix_patch(buggy, clean, changed))
        grader = HarnessGrader(spec, {k: instance[k] for k in (
            "instance_id", "FAIL_TO_PASS", "PASS_TO_PASS")}, TEST_LOG)
        task = Task(name=task_name, benchmark=self.name, path=buggy,
                    entrypoint=self.command_for(instance, spec, info.get("python", "python"),
                                                conda=False),
                    description=instance.get("problem_statement", ""), image=image,
                    terminal="docker", meta=meta, grader=grader,
                    readonly=[f for f in p2p_files if (buggy / f).is_file()],
                    terminal_options={"workdir": self._materialize.repo_dir})
        hidden = {f: (clean / f).read_text(encoding="utf-8") for f in f2p_files
                  if (clean / f).is_file()}
        return self._finish(task, instance, spec, info.get("python", "python"),
                            bool(info.get("conda")), hidden=hidden)

    def _debug(self, instance: dict[str, Any], spec: HarnessSpec, tests: list[str], root: Path,
               python: str, conda: bool) -> str | None:
        """pdb runs in the images' conda environment (the test command activates it itself)."""
        return super()._debug(instance, replace(spec, known=True), tests, root, python, conda)

    def _buggy_copy(self, clean: Path, instance: dict[str, Any], hidden: list[str]) -> Path:
        """The clean copy with the bug applied and ``hidden`` test files taken out (cached)."""
        folder = clean.parent.parent / (clean.parent.name + "-buggy")
        return patched_copy(folder, clean, instance["patch"], hidden)


__all__ = ["SWESmithBenchmark", "default_instances", "fix_patch", "profile_for"]
