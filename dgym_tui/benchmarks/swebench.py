"""SWE-bench and SWE-bench-debug: real-repository issues as Docker tasks.

Instances use the SWE-bench format (``instance_id``, ``repo``, ``base_commit``,
``patch``, ``test_patch``, ``FAIL_TO_PASS``, ``PASS_TO_PASS`` as lists or
JSON-encoded lists, ``version``, ``problem_statement``, ...) and come from a
local ``.json`` / ``.jsonl`` file or, when the ``datasets`` extra is installed
and the network allows, a dataset id.

Per instance:

- **Image**: the ``image_template`` option (``"{instance_id}"`` and
  ``"{harness_id}"`` are filled in), else the instance's own ``image_name``
  field, else the SWE-bench harness's per-instance image
  ``swebench/sweb.eval.x86_64.<harness_id>:latest`` where ``harness_id`` is the
  instance id with ``"__"`` replaced by ``"_1776_"``. The repository sits at
  ``repo_dir`` (``/testbed``) in the image, checked out at ``base_commit``.
- **Working copy**: our terminals bind-mount a host folder, so the repository
  is copied out of the image once (a created, never started container;
  ``get_archive``), without ``.git``, into a cache folder keyed by instance and
  image id (``$XDG_CACHE_HOME/dgym-tui/swebench``). That folder is the task's
  ``path``; episodes work on copies of it.
- **Tests** map to the entrypoint as pytest node ids
  (``tests/test_x.py::TestY::test_z[param]``): ``<python> -m pytest -q -rA
  <FAIL_TO_PASS + PASS_TO_PASS>``; score = tests passed, resolved = all pass.
  ``<python>`` is the harness's ``/opt/miniconda3/envs/testbed/bin/python``
  when the image has it, else ``python``. Instances whose ids are not pytest
  node ids (Django's ``test_x (module.Class)``, sympy's bare names) need the
  ``test_command`` option, e.g. ``"{python} tests/runtests.py {tests}"``; the
  score then depends on that command printing a pytest-style summary.
- **swebench** keeps the new tests out of the working copy: setup commands
  store the test files as the ``test_patch`` leaves them in a private folder
  of the container, and the entrypoint runs the tests on a scratch copy of the
  working copy with those files laid over it, with ``--tb=no`` (pytest
  commands) so the output shows test ids and assertion messages, never the
  tests' source.
- **swebench-debug** applies ``test_patch`` to the working copy before the
  episode, so the failing tests exist and pdb can run them (its entrypoint:
  the FAIL_TO_PASS tests under pdb).

The gold ``patch`` is only in ``Task.meta``: never in the working copy, the
description, the entrypoint or the setup commands.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import re
import shlex
import shutil
import tarfile
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dgym_tui.benchmarks.base import Benchmark, Task
from dgym_tui.core.patches import apply_patch, parse_patch, patched_files
from dgym_tui.resources import resource_dir

#: Image name of the SWE-bench harness for one instance.
HARNESS_IMAGE_TEMPLATE = "swebench/sweb.eval.x86_64.{harness_id}:latest"
#: Python of the harness images' "testbed" environment.
HARNESS_PYTHON = "/opt/miniconda3/envs/testbed/bin/python"
#: Where the swebench (non-debug) entrypoint finds the hidden test files in the container.
HIDDEN_TESTS_DIR = "/tmp/.dgym-swebench/tests"
#: Scratch copy the swebench (non-debug) entrypoint runs the tests in.
EVAL_COPY_DIR = "/tmp/.dgym-swebench/run"
#: Largest base64 piece per setup command (one argument must stay under 128 KiB).
_CHUNK = 60_000
#: Marker written next to a complete materialized copy.
_DONE = "materialized.json"


class SWEBenchError(ValueError):
    """An instance cannot be loaded (image missing, bad record, ...); one line says what to do."""


def default_instances() -> Path:
    """Return our offline fixture instances file (``data/swebench/instances.jsonl``)."""
    return resource_dir("data") / "swebench" / "instances.jsonl"


def default_cache_dir() -> Path:
    """Return the cache folder of materialized repositories."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dgym-tui" / "swebench"


def harness_id(instance_id: str) -> str:
    """Return the instance id as the harness writes it in image names (``__`` -> ``_1776_``)."""
    return instance_id.replace("__", "_1776_")


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise SWEBenchError(f"test list {value[:60]!r} is not a JSON list") from None
    return [str(v) for v in value]


def normalize_instance(record: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of an instance with FAIL_TO_PASS / PASS_TO_PASS as Python lists.

    Raises:
        SWEBenchError: a required field is missing.
    """
    missing = [k for k in ("instance_id", "patch", "test_patch", "FAIL_TO_PASS")
               if k not in record]
    if missing:
        raise SWEBenchError(f"instance {record.get('instance_id', '?')!r} lacks "
                            f"{', '.join(missing)}; is this a SWE-bench instance file?")
    out = dict(record)
    out["FAIL_TO_PASS"] = _as_list(record.get("FAIL_TO_PASS"))
    out["PASS_TO_PASS"] = _as_list(record.get("PASS_TO_PASS"))
    return out


def load_instances(source: str | os.PathLike, split: str = "test") -> list[dict[str, Any]]:
    """Read SWE-bench instances from a ``.json`` / ``.jsonl`` file or a dataset id.

    Args:
        source: a file path (JSON list, one JSON object, or JSON Lines), or a
            dataset id such as ``"<org>/SWE-bench_Lite"`` (needs the
            ``datasets`` package and network access).
        split: dataset split for a dataset id.

    Returns:
        Normalized instance dicts (see :func:`normalize_instance`), file order.

    Raises:
        SWEBenchError: the file is malformed, or ``datasets`` is missing for a dataset id.
    """
    path = Path(source).expanduser()
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        try:
            if path.suffix == ".jsonl":
                records = [json.loads(line) for line in text.splitlines() if line.strip()]
            else:
                data = json.loads(text)
                records = data if isinstance(data, list) else [data]
        except json.JSONDecodeError as exc:
            raise SWEBenchError(f"{path}: not valid JSON ({exc})") from None
    elif path.suffix in (".json", ".jsonl") or os.sep in str(source) and path.parent.is_dir():
        raise SWEBenchError(f"instance file {str(path)!r} does not exist")
    else:
        try:
            import datasets  # optional extra, heavy: imported only here
        except ImportError:
            raise SWEBenchError(f"{source!r} is not a file; loading a dataset id needs the "
                                "datasets extra: pip install 'dgym-tui[datasets]'") from None
        records = [dict(r) for r in datasets.load_dataset(str(source), split=split)]
    return [normalize_instance(r) for r in records]


def _is_pytest_id(test: str) -> bool:
    return "::" in test or test.endswith(".py")


def test_args(tests: Iterable[str]) -> str:
    """Quote test ids for a shell command line."""
    return " ".join(shlex.quote(t) for t in tests)


def patch_paths(patch: str) -> list[str]:
    """Return the paths a patch touches (after the change), in patch order."""
    return [fp.path for fp in parse_patch(patch)]


class _Materializer:
    """Copies a repository folder out of an image into the cache (once per image id)."""

    def __init__(self, cache_dir: Path, repo_dir: str) -> None:
        self.cache_dir = cache_dir
        self.repo_dir = posixpath.normpath(repo_dir)

    def __call__(self, instance_id: str, image: str) -> tuple[Path, dict[str, Any]]:
        from dgym_tui.core.terminals.docker import get_client

        client = get_client()
        from docker.errors import ImageNotFound, NotFound

        try:
            image_obj = client.images.get(image)
        except ImageNotFound:
            raise SWEBenchError(
                f"image {image} not found: build or pull it (our fixture: "
                "scripts/build_swebench_fixture.sh; real instances: the SWE-bench harness), "
                "or set image_template") from None
        key = re.sub(r"[^A-Za-z0-9_.-]", "_", instance_id)
        folder = self.cache_dir / f"{key}-{image_obj.id.split(':')[-1][:12]}"
        done = folder / _DONE
        if done.is_file():
            return folder / "repo", json.loads(done.read_text())
        folder.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
        container = client.containers.create(image, command=["true"], network_disabled=True)
        try:
            try:
                stream, _ = container.get_archive(self.repo_dir)
            except NotFound:
                raise SWEBenchError(f"image {image} has no {self.repo_dir}; set repo_dir to "
                                    "where the repository is in the image") from None
            with tempfile.TemporaryFile() as raw:
                for chunk in stream:
                    raw.write(chunk)
                raw.seek(0)
                _extract(raw, staging / "repo")
            info = {"image": image, "image_id": image_obj.id,
                    "python": HARNESS_PYTHON if _exists(container, HARNESS_PYTHON) else "python"}
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        finally:
            container.remove(force=True)
        (staging / _DONE).write_text(json.dumps(info))
        try:
            staging.rename(folder)
        except OSError:  # another process finished first
            shutil.rmtree(staging, ignore_errors=True)
        return folder / "repo", json.loads(done.read_text())


def _exists(container, path: str) -> bool:
    from docker.errors import NotFound

    try:
        stream, _ = container.get_archive(path)
    except NotFound:
        return False
    close = getattr(stream, "close", None)
    if close:
        close()
    return True


def _extract(fileobj, dest: Path) -> None:
    """Extract a ``docker cp`` archive of one folder into ``dest``, dropping the top
    folder name and ``.git``; members a safe extraction refuses are skipped."""
    dest.mkdir(parents=True)
    with tarfile.open(fileobj=fileobj, mode="r:") as tar:
        for member in tar:
            parts = member.name.split("/", 1)
            if len(parts) < 2 or not parts[1]:
                continue
            rel = parts[1]
            if rel == ".git" or rel.startswith(".git/"):
                continue
            member.name = rel
            try:
                tar.extract(member, dest, filter="data")
            except (tarfile.FilterError, OSError):
                continue


def hidden_file_commands(files: dict[str, str], folder: str = HIDDEN_TESTS_DIR) -> list[str]:
    """Shell commands that write ``{relative path: text}`` under ``folder`` in the container.

    Contents travel base64-encoded in pieces small enough for one command argument.
    """
    commands = []
    for rel, text in files.items():
        target = posixpath.join(folder, rel)
        data = base64.b64encode(text.encode("utf-8")).decode("ascii")
        commands.append(f"mkdir -p {shlex.quote(posixpath.dirname(target))} && "
                        f": > {shlex.quote(target)}")
        for i in range(0, len(data), _CHUNK):
            commands.append(f"printf %s {data[i:i + _CHUNK]} | base64 -d >> {shlex.quote(target)}")
    return commands


class SWEBenchBenchmark(Benchmark):
    """SWE-bench instances as Docker tasks (the new tests stay hidden from the agent).

    Args:
        instances: instance file (``.json`` / ``.jsonl``) or dataset id; None uses
            our offline fixture ``data/swebench/instances.jsonl``.
        split: dataset split when ``instances`` is a dataset id.
        image_template: image name with ``{instance_id}`` / ``{harness_id}``
            placeholders, e.g. ``"myimages/{instance_id}:latest"``; None uses the
            instance's ``image_name`` or the harness default.
        repo_dir: where the repository is inside the image.
        cache_dir: where repositories copied out of images are kept.
        test_command: command template for non-pytest test ids, with ``{python}``
            and ``{tests}`` placeholders.
        instance_ids: optional subset of instance ids to keep.

    Raises:
        SWEBenchError: the instances cannot be read.
    """

    name = "swebench"
    #: Apply ``test_patch`` to the working copy before the episode.
    apply_test_patch = False

    def __init__(self, instances: str | os.PathLike | None = None, split: str = "test",
                 image_template: str | None = None, repo_dir: str = "/testbed",
                 cache_dir: str | os.PathLike | None = None, test_command: str | None = None,
                 instance_ids: list[str] | None = None) -> None:
        records = load_instances(instances or default_instances(), split=split)
        if instance_ids:
            records = [r for r in records if r["instance_id"] in set(instance_ids)]
        self.instances = {r["instance_id"]: r for r in records}
        self.image_template = image_template
        self.test_command = test_command
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._materialize = _Materializer(self.cache_dir, repo_dir)

    def tasks(self) -> list[str]:
        """Return the instance ids, sorted."""
        return sorted(self.instances)

    def image_for(self, instance: dict[str, Any]) -> str:
        """Return the Docker image of ``instance`` (see the module docstring)."""
        ids = {"instance_id": instance["instance_id"],
               "harness_id": harness_id(instance["instance_id"])}
        if self.image_template:
            return self.image_template.format(**ids)
        return instance.get("image_name") or HARNESS_IMAGE_TEMPLATE.format(**ids)

    def command_for(self, instance: dict[str, Any], tests: list[str], python: str) -> str:
        """Return the shell command running ``tests`` of ``instance``.

        Raises:
            SWEBenchError: the ids are not pytest node ids and no ``test_command`` is set.
        """
        if self.test_command:
            return self.test_command.format(python=python, tests=test_args(tests))
        odd = [t for t in tests if not _is_pytest_id(t)]
        if odd:
            raise SWEBenchError(f"instance {instance['instance_id']!r} lists tests that are "
                                f"not pytest node ids (e.g. {odd[0]!r}); pass test_command, "
                                "e.g. '{python} tests/runtests.py {tests}'")
        return f"{python} -m pytest -q -rA {test_args(tests)}".rstrip()

    def _load(self, task_name: str) -> Task:
        instance = self.instances[task_name]
        image = self.image_for(instance)
        base, info = self._materialize(task_name, image)
        python = info.get("python", "python")
        tests = [*instance["FAIL_TO_PASS"], *instance["PASS_TO_PASS"]]
        run_tests = self.command_for(instance, tests, python)
        test_files = patch_paths(instance["test_patch"])
        meta = {k: instance.get(k) for k in (
            "instance_id", "repo", "base_commit", "version", "patch", "test_patch",
            "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit")}
        meta.update(image=image, python=python)
        task = Task(name=task_name, benchmark=self.name, path=base, entrypoint=run_tests,
                    description=instance.get("problem_statement", ""), image=image,
                    terminal="docker", readonly=list(test_files), meta=meta,
                    # Harness images install the repository (editable) at repo_dir:
                    # mount the working copy there so imports see the agent's edits.
                    terminal_options={"workdir": self._materialize.repo_dir})
        return self._finish(task, instance, python)

    def _finish(self, task: Task, instance: dict[str, Any], python: str) -> Task:
        """swebench: hide the new tests in the container; run them on a scratch copy."""
        files = {rel: text for rel, text in patched_files(instance["test_patch"], task.path).items()
                 if text is not None}
        task.setup_commands = hidden_file_commands(files)
        task.readonly = [p for p in task.readonly if (task.path / p).exists()]
        # pytest's tracebacks quote the source of failing tests: without them the
        # eval output names the tests and their assertion messages, not their code.
        run_tests = task.entrypoint if self.test_command else f"{task.entrypoint} --tb=no"
        task.entrypoint = (f"rm -rf {EVAL_COPY_DIR} && cp -a . {EVAL_COPY_DIR} && "
                           f"cp -a {HIDDEN_TESTS_DIR}/. {EVAL_COPY_DIR}/ && "
                           f"cd {EVAL_COPY_DIR} && {run_tests}")
        existing = [t for t in instance["PASS_TO_PASS"]
                    if (task.path / t.split("::", 1)[0]).is_file()]
        task.debug_entrypoint = _debug(self.command_for(instance, existing, python))
        return task


def _debug(command: str) -> str | None:
    """The pdb command for a test command (None lets the pdb tool decide)."""
    from dgym_tui.core.tools.base import ToolError

    try:
        from dgym_tui.core.tools.pdb import debug_command
    except ImportError:
        return None
    try:
        return debug_command(command)
    except ToolError:
        return None


class SWEBenchDebugBenchmark(SWEBenchBenchmark):
    """SWE-bench with ``test_patch`` applied before the episode: the failing tests exist
    in the working copy and pdb's entrypoint runs the FAIL_TO_PASS tests.
    Same arguments as :class:`SWEBenchBenchmark`."""

    name = "swebench-debug"
    apply_test_patch = True

    def _finish(self, task: Task, instance: dict[str, Any], python: str) -> Task:
        folder = task.path.parent.parent / (task.path.parent.name + "-debug")
        if not (folder / _DONE).is_file():
            staging = Path(tempfile.mkdtemp(prefix=".debug-", dir=folder.parent))
            try:
                shutil.copytree(task.path, staging / "repo", symlinks=True)
                apply_patch(instance["test_patch"], staging / "repo")
                (staging / _DONE).write_text("{}")
                staging.rename(folder)
            except OSError:
                if not (folder / _DONE).is_file():
                    raise
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        task.path = folder / "repo"
        task.debug_entrypoint = _debug(self.command_for(instance, instance["FAIL_TO_PASS"],
                                                        python))
        return task


#: Tag of our offline fixture's image (one instance: dgym__calc-1).
FIXTURE_IMAGE = "dgym-tui/swebench-fixture:dgym__calc-1"
#: Fixed identity and dates, so the fixture's base commit hash is reproducible.
_GIT_ENV = {"GIT_AUTHOR_NAME": "dgym", "GIT_AUTHOR_EMAIL": "dgym@localhost",
            "GIT_COMMITTER_NAME": "dgym", "GIT_COMMITTER_EMAIL": "dgym@localhost",
            "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
            "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000"}


def build_fixture_image(base: str | None = None, tag: str = FIXTURE_IMAGE,
                        force: bool = False) -> str:
    """Build the image of our offline SWE-bench instance (cached by tag).

    The image is ``base`` plus the fixture repository (``data/swebench/repos/
    dgym__calc``) at ``/testbed``, committed with git at a reproducible hash
    (the instance's ``base_commit``). The build uses no network.

    Args:
        base: base image with python, pytest and git; default env
            ``DGYM_TEST_IMAGE`` or ``dgym-tui/sandbox:test``.
        tag: tag of the built image.
        force: rebuild even when ``tag`` exists.

    Returns:
        ``tag``.

    Raises:
        TerminalError: Docker is unreachable.
        SWEBenchError: the build failed (the message ends with the build log's last line).
    """
    from docker.errors import BuildError, ImageNotFound

    from dgym_tui.core.terminals.docker import get_client

    client = get_client()
    base = base or os.environ.get("DGYM_TEST_IMAGE", "dgym-tui/sandbox:test")
    if not force:
        try:
            client.images.get(tag)
            return tag
        except ImageNotFound:
            pass
    env_lines = " ".join(f"{k}={shlex.quote(v)}" for k, v in _GIT_ENV.items())
    dockerfile = (f"FROM {base}\n"
                  "COPY repo/ /testbed/\n"
                  "WORKDIR /testbed\n"
                  f"RUN {env_lines} sh -c 'git init -q -b main . && git add -A && "
                  "git commit -q -m \"calc: base\"'\n")
    source = resource_dir("data") / "swebench" / "repos" / "dgym__calc"
    with tempfile.TemporaryDirectory(prefix="dgym-fixture-") as ctx:
        shutil.copytree(source, Path(ctx) / "repo",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
        (Path(ctx) / "Dockerfile").write_text(dockerfile)
        try:
            client.images.build(path=ctx, tag=tag, rm=True, network_mode="none")
        except ImageNotFound:
            raise SWEBenchError(f"base image {base} not found: run scripts/setup_docker.sh "
                                "first") from None
        except BuildError as exc:
            raise SWEBenchError(f"building {tag} failed: {exc.msg}") from None
    return tag


__all__ = [
    "FIXTURE_IMAGE",
    "HARNESS_IMAGE_TEMPLATE",
    "SWEBenchBenchmark",
    "SWEBenchDebugBenchmark",
    "SWEBenchError",
    "build_fixture_image",
    "default_instances",
    "harness_id",
    "hidden_file_commands",
    "load_instances",
    "normalize_instance",
]
