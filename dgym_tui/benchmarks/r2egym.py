"""R2E-Gym: real-repository issues in R2E-Gym's format, graded like R2E-Gym's own runner.

Records come from a local ``.json`` / ``.jsonl`` file, a dataset id, or a
named set (``lite``, ``subset``, ``v1``; needs the ``datasets`` extra and
network access). A record holds ``docker_image`` (or ``image_name``),
``repo_name``, ``commit_hash``, ``problem_statement``, ``expected_output_json``
(the test id -> status map a correct fix gives, as JSON text or an object) and
``parsed_commit_content`` (the fixing commit, JSON; its non-test files' new
content is the reference solution). A record has no id of its own: the task is
named ``<repo_name>__<first 12 characters of commit_hash>`` unless it carries
``instance_id``. ``tasks`` / ``exclude`` pick records as for ``swebench``.

Image, working copy, task text and grading per record: docs/benchmarks.md.
The reference solution is only in ``Task.meta`` (``solution_files``).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from dgym_tui.benchmarks.base import Benchmark, Task
from dgym_tui.benchmarks.swebench import (
    SWEBenchBenchmark,
    _Materializer,
    build_fixture_image,
    hidden_file_commands,
    load_instances,
    select,
)
from dgym_tui.benchmarks.swebench_harness import full_log
from dgym_tui.core.types import EvalSummary
from dgym_tui.support.resources import resource_dir

#: The published sets (``instances=lite`` etc.).
NAMED_DATASETS = {"lite": "R2E-Gym/R2E-Gym-Lite", "subset": "R2E-Gym/R2E-Gym-Subset",
                  "v1": "R2E-Gym/R2E-Gym-V1"}
#: What R2E-Gym keeps out of the agent's reach (moved out of the repository).
HIDDEN_NAMES = ("run_tests.sh", "r2e_tests")
#: Private folder in the container: the test script and the hidden tests.
PRIVATE_DIR = "/tmp/.dgym-r2egym"
#: The full test log of the last eval, in the container (the grader reads it).
TEST_LOG = f"{PRIVATE_DIR}/test.log"
#: Where the tests run: a scratch copy of the working copy.
RUN_DIR = f"{PRIVATE_DIR}/run"
_HIDDEN_FILE = "r2e_hidden.json"
#: Run as root when the container starts: R2E-Gym's images keep the interpreter their
#: ``.venv`` links to under ``/root`` (uv's), which the sandbox's unprivileged user must reach.
ROOT_SETUP = ["chmod a+x /root 2>/dev/null; if [ -d /root/.local ]; then "
              "chmod -R a+rX /root/.local; fi; true"]
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STATUSES = ("PASSED", "FAILED", "ERROR")


class R2EGymError(ValueError):
    """An R2E-Gym record or instance file cannot be used (the message says why)."""


def default_instances() -> Path:
    """Our offline fixture records (``data/r2egym/instances.jsonl``)."""
    return resource_dir("data") / "r2egym" / "instances.jsonl"


def issue_text(statement: str) -> str:
    """The text between ``[ISSUE]`` and ``[/ISSUE]`` (stripped), else ``statement`` itself."""
    match = re.search(r"\[ISSUE\](.*)\[/ISSUE\]", statement or "", re.DOTALL)
    return match.group(1).strip() if match else (statement or "")


def normalize_record(record: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of an R2E-Gym record with ``instance_id``, ``image``, ``repo_name``,
    ``commit_hash`` and ``expected`` (the expected map as a dict) filled in.

    Raises:
        R2EGymError: no image, or no usable expected test map.
    """
    out = dict(record)
    image = record.get("docker_image") or record.get("image_name")
    if not image:
        raise R2EGymError(f"record {record.get('instance_id') or record.get('repo_name') or '?'!r} "
                          "has no docker_image; is this an R2E-Gym record?")
    repo = str(record.get("repo_name") or record.get("repo")
               or image.rsplit("/", 1)[-1].split(":")[0].removesuffix("_final"))
    commit = str(record.get("commit_hash") or (image.rsplit(":", 1)[-1] if ":" in image else ""))
    expected = record.get("expected_output_json")
    if isinstance(expected, str):
        try:
            expected = json.loads(expected)
        except json.JSONDecodeError:
            expected = None
    if not isinstance(expected, dict) or not expected:
        raise R2EGymError(f"record {repo}@{commit[:12]} has no expected_output_json map "
                          "(test id -> PASSED / FAILED / ERROR)")
    out.update(image=image, repo_name=repo, commit_hash=commit,
               expected={str(k): str(v) for k, v in expected.items()},
               instance_id=str(record.get("instance_id") or f"{repo}__{commit[:12]}"))
    return out


# -- R2E-Gym's pytest log parser and its rule ------------------------------------------------

def _clean(key: str) -> str:
    return _ANSI.sub("", key).split(" - ")[0].strip()


def parse_pytest_log(log: str) -> list[tuple[str, list[str], str]]:
    """The test lines after pytest's "short test summary info" (``-rA`` output).

    Returns:
        ``[(file path, node id parts after the file, status), ...]`` for lines
        starting with PASSED, FAILED or ERROR, in log order; ``[]`` without
        that section.
    """
    if "short test summary info" not in log:
        return []
    tail = _ANSI.sub("", log).replace("\r", "").split("short test summary info", 1)[1]
    rows = []
    for line in tail.strip().split("\n"):
        status = next((s for s in _STATUSES if line.startswith(s)), None)
        if status is None:
            continue
        node = line[len(status):].strip().split(" - ")[0].strip()
        path, *parts = node.split("::")
        rows.append((path, parts, status))
    return rows


def _key(path: str, parts: list[str], style: str) -> str:
    if style == "dotted":  # the older runner: Class.test
        return ".".join(parts) if parts else path
    return f"{PurePosixPath(path).name}::{parts[-1]}" if parts else PurePosixPath(path).name


def status_map(log: str, expected: dict[str, str]) -> dict[str, str]:
    """R2E-Gym's ``{test id: status}`` of a log, its ids written as ``expected`` writes them.

    R2E-Gym's parser has named tests two ways over time (``file.py::test`` and
    ``Class.test``); the way that matches more of ``expected``'s ids is used.
    """
    rows = parse_pytest_log(log)
    wanted = {_clean(k) for k in expected}
    best: dict[str, str] = {}
    for style in ("file", "dotted"):
        parsed = {_clean(_key(path, parts, style)): status for path, parts, status in rows}
        if not best or len(wanted & set(parsed)) > len(wanted & set(best)):
            best = parsed
    return best


@dataclass
class Verdict:
    """How a log compares with the expected map.

    Attributes:
        matched: expected test ids whose status is the expected one.
        mismatched: expected test ids with another status, or missing from the log.
        extra: test ids in the log that the expected map lacks.
    """

    matched: list[str]
    mismatched: list[str]
    extra: list[str]

    @property
    def resolved(self) -> bool:
        """R2E-Gym's rule: the same tests, each with its expected status."""
        return bool(self.matched) and not self.mismatched and not self.extra


def compare(parsed: dict[str, str], expected: dict[str, str]) -> Verdict:
    """Compare a parsed status map with the expected one (ids cleaned as R2E-Gym does)."""
    want = {_clean(k): v for k, v in expected.items() if _clean(k)}
    got = {_clean(k): v for k, v in parsed.items() if _clean(k)}
    matched = [k for k in want if got.get(k) == want[k]]
    return Verdict(matched, [k for k in want if got.get(k) != want[k]],
                   [k for k in got if k not in want])


@dataclass
class R2EGrader:
    """Scores an eval like R2E-Gym's runner (see the module docstring).

    Attributes:
        expected: the record's expected ``{test id: status}`` map.
        log_path: the full test log in the container; empty: grade the output.
    """

    expected: dict[str, str]
    log_path: str = TEST_LOG

    def __call__(self, result: Any, terminal: Any) -> EvalSummary:
        """Return the summary of one entrypoint run (``RunResult``; any ``Terminal``):
        ``passed`` = expected tests with their expected status, ``failed`` = the rest
        plus tests the expected map lacks."""
        verdict = self.grade_log(full_log(result, terminal, self.log_path))
        return EvalSummary(passed=len(verdict.matched),
                           failed=len(verdict.mismatched) + len(verdict.extra),
                           exit_code=result.exit_code, timed_out=result.timed_out)

    def grade_log(self, log: str) -> Verdict:
        """Compare a test log with the expected map."""
        return compare(status_map(log, self.expected), self.expected)


# -- the reference solution ---------------------------------------------------------------

def _is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1] if parts else ""
    return (name.startswith("test_") or name.endswith("_test.py")
            or any(p in ("test", "tests", "testing") for p in parts[:-1]))


def solution_files(parsed_commit: Any) -> dict[str, str]:
    """``{path: new content}`` of the fixing commit's non-test files (``parsed_commit_content``).

    Returns ``{}`` when the record carries no usable commit (the solution policy then
    has nothing to apply).
    """
    if isinstance(parsed_commit, str):
        try:
            parsed_commit = json.loads(parsed_commit)
        except json.JSONDecodeError:
            return {}
    files = {}
    for diff in (parsed_commit or {}).get("file_diffs") or []:
        header = (diff.get("header") or {}).get("file") or {}
        path = header.get("path") or diff.get("path") or ""
        content = diff.get("new_file_content")
        if path and isinstance(content, str) and not _is_test_path(path):
            files[path] = content
    return files


# -- the benchmark ------------------------------------------------------------------------

class R2EGymBenchmark(Benchmark):
    """R2E-Gym records as Docker tasks (see the module docstring).

    Args:
        instances: a file, a dataset id, or ``lite`` / ``subset`` / ``v1``;
            default: our offline fixture.
        split: the dataset split (``train``).
        revision: the dataset revision to pin.
        tasks, exclude: task names (or a file of them) to keep / drop.
        image_template: image name with ``{repo}`` and ``{commit}``; None: the record's.
        repo_dir: where the repository is in the image.
        cache_dir: where working copies are kept (default: the ``swebench`` cache).
    """

    name = "r2egym"

    def __init__(self, instances: str | os.PathLike | None = None, split: str = "train",
                 revision: str | None = None, tasks: str | list[str] | None = None,
                 exclude: str | list[str] | None = None, image_template: str | None = None,
                 repo_dir: str = "/testbed", cache_dir: str | os.PathLike | None = None) -> None:
        from dgym_tui.benchmarks.swebench import default_cache_dir

        try:
            raw = load_instances(instances or default_instances(), split=split,
                                 revision=revision, named=NAMED_DATASETS, required=())
        except ValueError as exc:
            raise R2EGymError(str(exc)) from None
        records = [normalize_record(r) for r in raw]
        self.instances = {r["instance_id"]: r for r in select(records, tasks, exclude)}
        self.image_template = image_template
        self.repo_dir = repo_dir
        cache = Path(cache_dir).expanduser() if cache_dir else default_cache_dir().parent / "r2egym"
        self._materialize = _Materializer(cache, repo_dir, absolute_links=True)

    def tasks(self) -> list[str]:
        """The task names, sorted."""
        return sorted(self.instances)

    def image_for(self, record: dict[str, Any]) -> str:
        """The record's image, or ``image_template`` filled in."""
        if self.image_template:
            return self.image_template.format(repo=record["repo_name"],
                                              commit=record["commit_hash"])
        return record["image"]

    def test_command(self) -> str:
        """The image's test script as R2E-Gym runs it."""
        return f"bash {self.repo_dir}/run_tests.sh"

    def describe(self, task_name: str) -> dict[str, Any]:
        """What ``dgym list-tasks r2egym --details`` shows; needs no Docker.

        Returns:
            ``{"name", "image", "test_command", "repo", "commit", "expected_tests"}``
            (the last: how many tests the expected map names).
        """
        if task_name not in self.instances:
            self.load(task_name)  # raises the KeyError naming close names
        record = self.instances[task_name]
        return {"name": task_name, "image": self.image_for(record),
                "test_command": self.test_command(), "repo": record["repo_name"],
                "commit": record["commit_hash"], "expected_tests": len(record["expected"])}

    #: ``dgym prepull r2egym``: pull the images of every task not present yet (as swebench).
    prepull = SWEBenchBenchmark.prepull

    def _load(self, task_name: str) -> Task:
        record = self.instances[task_name]
        image = self.image_for(record)
        base, _info = self._materialize(task_name, image)
        hidden = _take_hidden(base)
        if "run_tests.sh" not in hidden:
            raise R2EGymError(f"image {image} has no {self.repo_dir}/run_tests.sh; is it an "
                              "R2E-Gym image (or set repo_dir)?")
        setup = [f"rm -rf {PRIVATE_DIR} && mkdir -p {PRIVATE_DIR}/hidden/r2e_tests",
                 *hidden_file_commands(hidden, f"{PRIVATE_DIR}/hidden"),
                 f"if [ -d /r2e_tests ]; then cp -a /r2e_tests/. {PRIVATE_DIR}/hidden/r2e_tests/; fi"]
        meta = {"instance_id": task_name, "repo": record["repo_name"],
                "commit_hash": record["commit_hash"], "image": image,
                "expected_output": record["expected"],
                "solution_files": solution_files(record.get("parsed_commit_content"))}
        python = "$(if [ -x .venv/bin/python ]; then echo .venv/bin/python; else echo python; fi)"
        return Task(name=task_name, benchmark=self.name, path=base, entrypoint=_entrypoint(),
                    debug_entrypoint=f"{python} -m pdb -m pytest -s -p no:cacheprovider",
                    description=issue_text(record.get("problem_statement", "")), image=image,
                    terminal="docker", setup_commands=setup, meta=meta,
                    ignore=[f"/{name}" for name in HIDDEN_NAMES], readonly=[],
                    grader=R2EGrader(dict(record["expected"])),
                    terminal_options={"workdir": self.repo_dir, "root_setup": ROOT_SETUP})


def _entrypoint() -> str:
    """The eval: a scratch copy of the working copy (``.venv`` linked, not copied) with the
    hidden tests laid in, the image's script run there, its whole log kept and printed."""
    hidden = f"{PRIVATE_DIR}/hidden"
    return (f"rm -rf {RUN_DIR} && mkdir -p {RUN_DIR} && "
            f"tar -C . --exclude=./.venv --exclude=./r2e_tests --exclude=./run_tests.sh "
            f"-cf - . | tar -C {RUN_DIR} -xf - && "
            f"{{ [ ! -e .venv ] || ln -s \"$PWD/.venv\" {RUN_DIR}/.venv; }} && "
            f"cp -a {hidden}/r2e_tests {RUN_DIR}/r2e_tests && cd {RUN_DIR} && "
            f"{{ bash {hidden}/run_tests.sh ; }} > {TEST_LOG} 2>&1; s=$?; cat {TEST_LOG}; exit $s")


def _take_hidden(base: Path) -> dict[str, str]:
    """Move ``run_tests.sh`` and ``r2e_tests`` out of a materialized copy (once).

    Their texts are kept beside the copy (``r2e_hidden.json``, written before
    anything is deleted), so later loads find them there.

    Returns:
        ``{relative path: text}``.
    """
    import shutil

    store = base.parent / _HIDDEN_FILE
    if store.is_file():
        return json.loads(store.read_text(encoding="utf-8"))
    hidden: dict[str, str] = {}
    for name in HIDDEN_NAMES:
        path = base / name
        if path.is_file() and not path.is_symlink():
            hidden[name] = path.read_text(encoding="utf-8", errors="replace")
        elif path.is_dir() and not path.is_symlink():
            for file in sorted(path.rglob("*")):
                if file.is_file() and not file.is_symlink() and "__pycache__" not in file.parts:
                    hidden[file.relative_to(base).as_posix()] = file.read_text(
                        encoding="utf-8", errors="replace")
    tmp = store.with_suffix(".tmp")
    tmp.write_text(json.dumps(hidden), encoding="utf-8")
    tmp.replace(store)
    for name in HIDDEN_NAMES:
        path = base / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    return hidden


# -- the offline fixture ------------------------------------------------------------------

def fixture_repo(instance_id: str) -> Path:
    """The repository folder of our fixture record ``instance_id`` (``data/r2egym/repos``)."""
    return resource_dir("data") / "r2egym" / "repos" / instance_id


#: The fixture images' ``.venv``, as R2E-Gym's images have one (``bin/python`` an
#: absolute link to the interpreter; the system's packages, pytest among them, visible).
FIXTURE_VENV = "python3 -m venv --without-pip --system-site-packages /testbed/.venv"


def build_fixture_images(base: str | None = None, force: bool = False) -> dict[str, str]:
    """Build the image of every fixture record, offline, from the sandbox image.

    Each image is ``base`` plus ``data/r2egym/repos/<task name>`` at ``/testbed``
    (with its ``run_tests.sh`` and ``r2e_tests``, as R2E-Gym's images have them) and a
    ``.venv`` (:data:`FIXTURE_VENV`), named as the record's ``docker_image`` (see
    :func:`dgym_tui.benchmarks.swebench.build_fixture_image`).

    Returns:
        ``{task name: image}``.
    """
    bench = R2EGymBenchmark()
    return {name: build_fixture_image(name, base=base, force=force, repo=fixture_repo(name),
                                      tag=bench.image_for(bench.instances[name]),
                                      run=FIXTURE_VENV)
            for name in bench.tasks()}


__all__ = ["NAMED_DATASETS", "R2EGrader", "R2EGymBenchmark", "R2EGymError", "Verdict",
           "build_fixture_images", "compare", "default_instances", "issue_text",
           "normalize_record", "parse_pytest_log", "solution_files", "status_map"]
