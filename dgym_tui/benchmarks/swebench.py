"""SWE-bench and SWE-bench-debug: real-repository issues as Docker tasks, graded like the harness.

Instances come from a local ``.json`` / ``.jsonl`` file, a dataset id, or a
named set (``lite``, ``verified``, ``full``; needs the ``datasets`` package and
network access; ``revision`` pins the dataset version). Both record formats
are read: the classic one (``instance_id``, ``repo``, ``version``,
``base_commit``, ``patch``, ``test_patch``, ``FAIL_TO_PASS``,
``PASS_TO_PASS`` as lists or JSON-encoded lists, ``problem_statement``) and
the new one of the swebench 5.x datasets (plus ``image``, ``eval_script``,
``log_parser``, ``eval_type``). ``tasks`` (ids, or a file of ids one per
line) and ``exclude`` pick the instances.

Tests, grading, image, working copy and setup per instance: docs/benchmarks.md. The
gold ``patch`` is only in ``Task.meta``: never in the working copy, the description,
the entrypoint or the setup commands.
"""

from __future__ import annotations

import base64
import difflib
import glob
import hashlib
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

from dgym_tui.benchmarks.base import Benchmark, Task, patched_copy
from dgym_tui.benchmarks.swebench_harness import HarnessGrader, HarnessSpec, harness_spec
from dgym_tui.core import tempdirs
from dgym_tui.core.fs.patches import parse_patch, patched_files
from dgym_tui.support.resources import resource_dir

#: Image name of the SWE-bench harness for one instance (namespace "swebench").
HARNESS_IMAGE_TEMPLATE = "swebench/sweb.eval.x86_64.{harness_id}:latest"
#: Python of the harness images' "testbed" environment.
HARNESS_PYTHON = "/opt/miniconda3/envs/testbed/bin/python"
#: The harness images' conda activation script.
HARNESS_CONDA = "/opt/miniconda3/bin/activate"
#: Where the swebench (non-debug) entrypoint finds the hidden test files in the container.
HIDDEN_TESTS_DIR = "/tmp/.dgym-swebench/tests"
#: Scratch copy the swebench (non-debug) entrypoint runs the tests in.
EVAL_COPY_DIR = "/tmp/.dgym-swebench/run"
#: The full log of the last test run, read back by the grader.
TEST_LOG = "/tmp/.dgym-swebench/test.log"
#: Named instance sets: dataset ids of the harness's datasets.
NAMED_DATASETS = {"full": "SWE-bench/SWE-bench", "lite": "SWE-bench/SWE-bench_Lite",
                  "verified": "SWE-bench/SWE-bench_Verified"}
#: Namespace of our offline fixture images (built from the sandbox image).
FIXTURE_NAMESPACE = "dgym-fixture"
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


def harness_image(instance_id: str, namespace: str | None = "swebench", arch: str = "x86_64",
                  tag: str = "latest") -> str:
    """Return the harness's image name of an instance, as its ``TestSpec`` writes it.

    Args:
        instance_id: e.g. ``"Project-MONAI__MONAI-5640"``.
        namespace: registry namespace (``"swebench"`` for the published
            images); None or ``""``: the name of a locally built image.
        arch: ``"x86_64"`` or ``"arm64"``.
        tag: image tag.

    Returns:
        e.g. ``"swebench/sweb.eval.x86_64.project-monai_1776_monai-5640:latest"``.
    """
    key = f"sweb.eval.{arch}.{instance_id.lower()}:{tag}"
    return harness_id(f"{namespace}/{key}") if namespace else key


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            raise SWEBenchError(f"test list {value[:60]!r} is not a JSON list") from None
    return [str(v) for v in value]


#: Fields every SWE-bench record has.
REQUIRED_FIELDS = ("instance_id", "patch", "test_patch", "FAIL_TO_PASS")


def normalize_instance(record: dict[str, Any],
                       required: tuple[str, ...] = REQUIRED_FIELDS) -> dict[str, Any]:
    """Return a copy of an instance with FAIL_TO_PASS / PASS_TO_PASS as Python lists.

    Args:
        record: one instance as read.
        required: fields it must have.

    Raises:
        SWEBenchError: a required field is missing.
    """
    missing = [k for k in required if k not in record]
    if missing:
        raise SWEBenchError(f"instance {record.get('instance_id', '?')!r} lacks "
                            f"{', '.join(missing)}; is this a SWE-bench instance file?")
    out = dict(record)
    out["FAIL_TO_PASS"] = _as_list(record.get("FAIL_TO_PASS"))
    out["PASS_TO_PASS"] = _as_list(record.get("PASS_TO_PASS"))
    return out


def load_instances(source: str | os.PathLike, split: str = "test", revision: str | None = None,
                   named: dict[str, str] | None = None,
                   required: tuple[str, ...] = REQUIRED_FIELDS) -> list[dict[str, Any]]:
    """Read SWE-bench instances from a ``.json`` / ``.jsonl`` file, a dataset id or a named set.

    Args:
        source: a file path (JSON list, one JSON object, or JSON Lines), a
            named set (``"lite"``, ``"verified"``, ``"full"``), or a dataset id
            such as ``"SWE-bench/SWE-bench_Lite"`` (needs the ``datasets``
            package and network access).
        split: dataset split for a dataset id.
        revision: dataset revision (commit or tag) to pin; None: the latest.
        named: named sets -> dataset ids (default :data:`NAMED_DATASETS`).
        required: fields every record must have.

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
        name = (NAMED_DATASETS if named is None else named).get(str(source).lower(), str(source))
        try:
            import datasets  # optional extra, heavy: imported only here
        except ImportError:
            raise SWEBenchError(f"{source!r} is not a file; loading a dataset id needs the "
                                "datasets extra: pip install 'dgym-tui[datasets]'") from None
        records = [dict(r) for r in datasets.load_dataset(name, split=split, revision=revision)]
    return [normalize_instance(r, required) for r in records]


def read_ids(value: str | Iterable[str] | None) -> list[str]:
    """Return instance ids from a list, a file of ids (one per line, ``#`` comments) or
    a comma-separated string; None gives ``[]``."""
    if value is None:
        return []
    if isinstance(value, str):
        path = Path(value).expanduser()
        if path.is_file():
            lines = path.read_text(encoding="utf-8").splitlines()
            return [line.strip() for line in lines if line.strip() and not line.startswith("#")]
        return [part.strip() for part in value.split(",") if part.strip()]
    return [str(v) for v in value]


def select(records: list[dict[str, Any]], tasks: str | Iterable[str] | None = None,
           exclude: str | Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Keep the records named by ``tasks`` (all when None), minus those in ``exclude``.

    Raises:
        SWEBenchError: an id in ``tasks`` is not among the records (closest ids named).
    """
    known = [r["instance_id"] for r in records]
    wanted, dropped = read_ids(tasks), set(read_ids(exclude))
    unknown = [t for t in wanted if t not in set(known)]
    if unknown:
        close = difflib.get_close_matches(unknown[0], known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SWEBenchError(f"{len(unknown)} task id(s) not in the instances, e.g. "
                            f"{unknown[0]!r}{hint}")
    keep = set(wanted) if wanted else set(known)
    return [r for r in records if r["instance_id"] in keep and r["instance_id"] not in dropped]


def patch_paths(patch: str) -> list[str]:
    """Return the paths a patch touches (after the change), in patch order."""
    return [fp.path for fp in parse_patch(patch)]


class _Materializer:
    """Copies a repository folder out of an image into the cache (once per image id).

    ``absolute_links``: keep symbolic links whose target is an absolute path (a
    virtual environment's ``bin/python``); they point into the container, and every
    other member is still extracted with the ``data`` filter (which resolves links on
    disk, so nothing is ever written through one).
    """

    def __init__(self, cache_dir: Path, repo_dir: str, absolute_links: bool = False) -> None:
        self.cache_dir = cache_dir
        self.repo_dir = posixpath.normpath(repo_dir)
        self.absolute_links = absolute_links

    def cached_info(self, instance_id: str, image: str) -> dict[str, Any] | None:
        """What an earlier copy of ``image`` recorded (``python``, ``conda``), without Docker;
        None when there is none."""
        key = re.sub(r"[^A-Za-z0-9_.-]", "_", instance_id)
        for done in sorted(self.cache_dir.glob(f"{glob.escape(key)}-*/{_DONE}")):
            try:
                info = json.loads(done.read_text())
            except (OSError, ValueError):
                continue
            if info.get("image") == image:
                return info
        return None

    def __call__(self, instance_id: str, image: str) -> tuple[Path, dict[str, Any]]:
        from dgym_tui.core.terminals.docker import get_client

        client = get_client()
        from docker.errors import ImageNotFound, NotFound

        try:
            image_obj = client.images.get(image)
        except ImageNotFound:
            raise SWEBenchError(
                f"image {image} not found: pull it (dgym prepull swebench ...), build it "
                "(our fixtures: scripts/build_swebench_fixture.sh; real instances: the "
                "SWE-bench harness), or set image_template") from None
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
                _extract(raw, staging / "repo", self.absolute_links)
            info = {"image": image, "image_id": image_obj.id,
                    "python": HARNESS_PYTHON if _exists(container, HARNESS_PYTHON) else "python",
                    "conda": _exists(container, HARNESS_CONDA)}
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
    stream.close()  # a generator of the archive's chunks: nothing is read
    return True


def _extract(fileobj, dest: Path, absolute_links: bool = False) -> None:
    """Extract a ``docker cp`` archive of one folder into ``dest``, dropping the top
    folder name and ``.git``; members a safe extraction refuses are skipped, except
    symbolic links to absolute paths when ``absolute_links``."""
    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        if absolute_links and member.issym() and member.linkname.startswith("/"):
            tarfile.data_filter(member.replace(linkname="target", deep=False), path)
            return member  # the name is checked; the target stays as the image has it
        return tarfile.data_filter(member, path)

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
                tar.extract(member, dest, filter=keep)
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
        instances: instance file (``.json`` / ``.jsonl``), named set (``lite``,
            ``verified``, ``full``) or dataset id; None uses our offline
            fixtures ``data/swebench/instances.jsonl``.
        split: dataset split for a dataset id or named set.
        revision: dataset revision to pin (commit or tag) for a dataset id.
        tasks: instance ids to keep: a list, a file of ids (one per line) or a
            comma-separated string; None keeps all.
        exclude: instance ids to leave out (same forms as ``tasks``).
        namespace: namespace of the harness image names: ``"swebench"`` (the
            published images); ``""``: locally built harness images.
        image_template: image name with ``{instance_id}`` / ``{harness_id}``
            placeholders, e.g. ``"myimages/{instance_id}:latest"``; wins over
            the record's image and the harness name.
        repo_dir: where the repository is inside the image.
        cache_dir: where repositories copied out of images are kept.
        test_command: replaces the harness's test command: a template with
            ``{python}``, ``{tests}`` (FAIL_TO_PASS + PASS_TO_PASS ids, quoted)
            and ``{directives}`` (the harness's test directives); the harness's
            log parser still grades its output.

    Raises:
        SWEBenchError: the instances cannot be read, or ``tasks`` names unknown ids.
    """

    name = "swebench"
    #: Named instance sets of this benchmark (``instances=lite``).
    named_datasets = NAMED_DATASETS
    #: Fields every record of this benchmark has.
    required_fields = REQUIRED_FIELDS

    @staticmethod
    def default_source() -> Path:
        """The instances file used when ``instances`` is not given (our offline fixtures)."""
        return default_instances()

    def __init__(self, instances: str | os.PathLike | None = None, split: str = "test",
                 revision: str | None = None, tasks: str | list[str] | None = None,
                 exclude: str | list[str] | None = None, namespace: str = "swebench",
                 image_template: str | None = None, repo_dir: str = "/testbed",
                 cache_dir: str | os.PathLike | None = None,
                 test_command: str | None = None) -> None:
        records = load_instances(instances or self.default_source(), split=split,
                                 revision=revision, named=self.named_datasets,
                                 required=self.required_fields)
        self.instances = {r["instance_id"]: r for r in select(records, tasks, exclude)}
        self.namespace = namespace
        self.image_template = image_template
        self.test_command = test_command
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        self._materialize = _Materializer(self.cache_dir, repo_dir)

    def tasks(self) -> list[str]:
        """Return the instance ids, sorted."""
        return sorted(self.instances)

    def image_for(self, instance: dict[str, Any]) -> str:
        """Return the Docker image of ``instance`` (see the module docstring)."""
        if self.image_template:
            return self.image_template.format(instance_id=instance["instance_id"],
                                              harness_id=harness_id(instance["instance_id"]))
        return (instance.get("image") or instance.get("image_name")
                or harness_image(instance["instance_id"], self.namespace))

    def spec_for(self, instance: dict[str, Any]) -> HarnessSpec:
        """Return how the harness tests ``instance``.

        Raises:
            HarnessMissingError: the ``swebench`` package is not installed.
        """
        return harness_spec(instance)

    def command_for(self, instance: dict[str, Any], spec: HarnessSpec, python: str = "python",
                    conda: bool = True) -> str:
        """Return the shell command that runs the tests of ``instance`` (no output redirection).

        Args:
            instance: the normalized record.
            spec: its :meth:`spec_for`.
            python: the image's Python (for a ``test_command`` template).
            conda: activate the harness images' conda environment first.
        """
        return spec.command(conda=conda, tests=self._user_tests(instance, spec, python))

    def _user_tests(self, instance: dict[str, Any], spec: HarnessSpec, python: str) -> str | None:
        """The ``test_command`` template filled in; None without one."""
        if not self.test_command:
            return None
        tests = [*instance["FAIL_TO_PASS"], *instance["PASS_TO_PASS"]]
        return self.test_command.format(python=python, tests=shlex.join(tests),
                                        directives=shlex.join(spec.directives))

    def describe(self, task_name: str) -> dict[str, Any]:
        """What ``dgym list-tasks --details`` shows; needs neither the image nor a copy.

        The test command is the one run in the harness's images (conda
        activated) unless an earlier load recorded that the image has no conda.

        Returns:
            ``{"name", "image", "test_command", "repo", "version", "fail_to_pass",
            "pass_to_pass"}`` (the last two are counts), and ``"root_setup"``
            (the harness's setup lines, run as root when the container starts)
            when the repository has any.
        """
        instance = self.instances[task_name] if task_name in self.instances else None
        if instance is None:
            self.load(task_name)  # raises the KeyError naming close ids
        spec = self.spec_for(instance)
        image = self.image_for(instance)
        info = self._materialize.cached_info(task_name, image) or {}
        return {"name": task_name, "image": image,
                "test_command": self.command_for(instance, spec, info.get("python", "python"),
                                                 conda=info.get("conda", True)),
                "repo": instance.get("repo"), "version": instance.get("version"),
                "fail_to_pass": len(instance["FAIL_TO_PASS"]),
                "pass_to_pass": len(instance["PASS_TO_PASS"]),
                **({"root_setup": " && ".join(spec.setup)} if spec.setup else {})}

    def prepull(self, progress: bool = True) -> list[str]:
        """Pull the images of every task that are not present yet.

        Args:
            progress: draw a progress bar (images done, bytes of the current one).

        Returns:
            the images pulled.

        Raises:
            TerminalError: Docker is unreachable.
            SWEBenchError: an image cannot be pulled (the message names it).
        """
        from dgym_tui.benchmarks.prepull import pull_images

        return pull_images([self.image_for(self.instances[t]) for t in self.tasks()],
                           progress=progress)

    def _load(self, task_name: str) -> Task:
        instance = self.instances[task_name]
        spec = self.spec_for(instance)
        image = self.image_for(instance)
        base, info = self._materialize(task_name, image)
        python = info.get("python", "python")
        test_files = patch_paths(instance["test_patch"])
        meta = {k: instance.get(k) for k in (
            "instance_id", "repo", "base_commit", "version", "patch", "test_patch",
            "FAIL_TO_PASS", "PASS_TO_PASS", "environment_setup_commit")}
        meta.update(image=image, python=python)
        command = self.command_for(instance, spec, python, conda=bool(info.get("conda")))
        grader = HarnessGrader(spec, {k: instance[k] for k in (
            "instance_id", "FAIL_TO_PASS", "PASS_TO_PASS")}, TEST_LOG)
        task = Task(name=task_name, benchmark=self.name, path=base, entrypoint=command,
                    description=instance.get("problem_statement", ""), image=image,
                    terminal="docker", readonly=list(test_files), meta=meta,
                    grader=grader,
                    # Harness images install the repository (editable) at repo_dir:
                    # mount the working copy there so imports see the agent's edits.
                    # The harness runs its setup lines (Django's locale-gen) as root.
                    terminal_options={"workdir": self._materialize.repo_dir,
                                      "root_setup": list(spec.setup)})
        return self._finish(task, instance, spec, python, bool(info.get("conda")))

    def _finish(self, task: Task, instance: dict[str, Any], spec: HarnessSpec, python: str,
                conda: bool, hidden: dict[str, str] | None = None) -> Task:
        """swebench: hide the new tests in the container; run them on a scratch copy.

        ``hidden``: ``{relative path: text}`` of the hidden test files; None:
        the files as ``test_patch`` leaves them.
        """
        if hidden is None:
            hidden = {rel: text for rel, text in
                      patched_files(instance["test_patch"], task.path).items() if text is not None}
        task.setup_commands += hidden_file_commands(hidden)
        task.readonly = [p for p in task.readonly if (task.path / p).exists()]
        # pytest's tracebacks quote the source of failing tests: without them the
        # eval output names the tests, not the hidden tests' code.
        command = _no_tracebacks(task.entrypoint)
        task.entrypoint = (f"rm -rf {EVAL_COPY_DIR} && cp -a . {EVAL_COPY_DIR} && "
                           f"cp -a {HIDDEN_TESTS_DIR}/. {EVAL_COPY_DIR}/ && "
                           f"cd {EVAL_COPY_DIR} && {logged(command)}")
        existing = [t for t in instance["PASS_TO_PASS"]
                    if (task.path / t.split("::", 1)[0]).is_file()]
        task.debug_entrypoint = self._debug(instance, spec, existing, task.path, python, conda)
        return task

    def _debug(self, instance: dict[str, Any], spec: HarnessSpec, tests: list[str],
               root: Path, python: str, conda: bool) -> str | None:
        """The pdb command: ``tests`` when they are whole pytest node ids of files in
        ``root``, else the harness's test command on its directives."""
        env = spec.env_lines(conda)
        whole = tests and all(_is_node_id(t) and (root / t.split("::", 1)[0]).is_file()
                              for t in tests)
        if whole and not self.test_command:
            return _debug_command(env, shlex.join(["pytest", *tests]))
        command = self._user_tests(instance, spec, python) or spec.test_commands[-1]
        return _debug_command(env, command)


def logged(command: str) -> str:
    """``command`` with its whole output kept in :data:`TEST_LOG`, printed, and its exit status."""
    folder = posixpath.dirname(TEST_LOG)
    return (f"mkdir -p {folder}; {{ {command} ; }} > {TEST_LOG} 2>&1; s=$?; "
            f"cat {TEST_LOG}; exit $s")


def _is_node_id(test: str) -> bool:
    """A whole pytest node id: ``path.py::name`` with balanced brackets (not cut off)."""
    return "::" in test and test.split("::", 1)[0].endswith(".py") and \
        test.count("[") == test.count("]")


_TB = re.compile(r"(?<!\S)--tb[= ]\S+")


def _no_tracebacks(command: str) -> str:
    """pytest commands with ``--tb=no`` (the hidden tests' source stays out of the output)."""
    if not re.search(r"(?<![\w/.-])pytest(?![\w.-])", command):
        return command
    if _TB.search(command):
        return _TB.sub("--tb=no", command)
    return re.sub(r"(?<![\w/.-])pytest(?![\w.-])", "pytest --tb=no", command, count=1)


def _debug_command(env: Iterable[str], command: str) -> str | None:
    """The pdb form of a test command (None lets the pdb tool decide), after ``env`` lines.

    Scripts run by path (Django's ``./tests/runtests.py``, sympy's ``bin/test``)
    are started with ``python``; pytest gets ``-q`` (its progress line would
    otherwise run into pdb's ``>`` line, and the stopped frame is read from that).
    """
    from dgym_tui.core.tools.base import ToolError
    from dgym_tui.core.tools.pdb import debug_command

    words = shlex.split(command)
    i = 0
    while i < len(words) and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[i]):
        i += 1
    if i < len(words) and "/" in words[i] and "python" not in words[i].rsplit("/", 1)[-1]:
        words.insert(i, "python")
    if "pytest" in words and "-q" not in words:
        words.insert(words.index("pytest") + 1, "-q")
    try:
        debug = debug_command(shlex.join(words))
    except ToolError:
        return None
    return " && ".join([*env, debug])


class SWEBenchDebugBenchmark(SWEBenchBenchmark):
    """SWE-bench with ``test_patch`` applied before the episode: the failing tests exist
    in the working copy and pdb's entrypoint runs the FAIL_TO_PASS tests (or, when
    their ids are not whole pytest node ids, the harness's test command).
    Same arguments as :class:`SWEBenchBenchmark`."""

    name = "swebench-debug"

    def _finish(self, task: Task, instance: dict[str, Any], spec: HarnessSpec, python: str,
                conda: bool) -> Task:
        folder = task.path.parent.parent / (task.path.parent.name + "-debug")
        task.path = patched_copy(folder, task.path, instance["test_patch"])
        task.entrypoint = logged(task.entrypoint)
        task.debug_entrypoint = self._debug(instance, spec, instance["FAIL_TO_PASS"], task.path,
                                            python, conda)
        return task


#: Fixed identity and dates, so the fixtures' base commit hashes are reproducible.
_GIT_ENV = {"GIT_AUTHOR_NAME": "dgym", "GIT_AUTHOR_EMAIL": "dgym@localhost",
            "GIT_COMMITTER_NAME": "dgym", "GIT_COMMITTER_EMAIL": "dgym@localhost",
            "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000",
            "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000"}
#: Image label holding a hash of a fixture's repository: a changed fixture is rebuilt.
_FIXTURE_LABEL = "dgym-tui.fixture-hash"


def fixture_repo(instance_id: str) -> Path:
    """Return the repository folder of our fixture instance ``instance_id`` (``data/swebench/repos``)."""
    return resource_dir("data") / "swebench" / "repos" / instance_id


def fixture_image_name(instance_id: str) -> str:
    """Return the image name of a fixture instance: the harness's, in :data:`FIXTURE_NAMESPACE`
    (the fixture records name it in ``image_name``)."""
    return harness_image(instance_id, FIXTURE_NAMESPACE)


def _tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
            digest.update(oct(path.stat().st_mode & 0o111).encode() + path.read_bytes())
    return digest.hexdigest()[:16]


def build_fixture_image(instance_id: str = "dgym__calc-1", base: str | None = None,
                        force: bool = False, repo: Path | None = None,
                        tag: str | None = None, run: str | None = None) -> str:
    """Build the image of one offline fixture instance (cached by tag and content).

    The image is ``base`` plus the fixture repository (``data/swebench/repos/
    <instance_id>``) at ``/testbed`` (on ``PYTHONPATH``, as the harness images
    install the repository), committed with git at a reproducible hash
    (the instance's ``base_commit``); it is named like the harness's images
    (:func:`fixture_image_name`). The build uses no network. An image of that
    name built from the same repository content is reused.

    Args:
        instance_id: the fixture instance.
        base: base image with python, pytest and git; default env
            ``DGYM_TEST_IMAGE`` or ``dgym-tui/sandbox:test``.
        force: rebuild even when the image is up to date.
        repo: the repository folder (default :func:`fixture_repo` of the instance).
        tag: the image name (default :func:`fixture_image_name` of the instance).
        run: one more shell line run in ``/testbed`` after the commit (part of the
            image's identity).

    Returns:
        the image name.

    Raises:
        TerminalError: Docker is unreachable.
        SWEBenchError: no such fixture, or the build failed (the message ends
            with the build log's last line).
    """
    from docker.errors import BuildError, ImageNotFound

    from dgym_tui.core.terminals.docker import get_client

    source = repo or fixture_repo(instance_id)
    if not source.is_dir():
        raise SWEBenchError(f"no fixture repository {str(source)!r}")
    tag = tag or fixture_image_name(instance_id)
    client = get_client()
    base = base or os.environ.get("DGYM_TEST_IMAGE", "dgym-tui/sandbox:test")
    content = _tree_hash(source) + (f"-{hashlib.sha256(run.encode()).hexdigest()[:8]}"
                                    if run else "")
    if not force:
        try:
            if client.images.get(tag).labels.get(_FIXTURE_LABEL) == content:
                return tag
        except ImageNotFound:
            pass
    env_lines = " ".join(f"{k}={shlex.quote(v)}" for k, v in _GIT_ENV.items())
    # PYTHONPATH stands for the harness images' editable install of the repository
    dockerfile = (f"FROM {base}\n"
                  "COPY repo/ /testbed/\n"
                  "WORKDIR /testbed\n"
                  "ENV PYTHONPATH=/testbed\n"
                  f"LABEL {_FIXTURE_LABEL}={content}\n"
                  f"RUN {env_lines} sh -c 'git init -q -b main . && git add -A && "
                  "git commit -q -m base'\n"
                  + (f"RUN {run}\n" if run else ""))
    with tempfile.TemporaryDirectory(prefix=tempdirs.prefix("fixture")) as ctx:
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


def build_fixture_images(base: str | None = None, force: bool = False) -> dict[str, str]:
    """Build every fixture instance's image (see :func:`build_fixture_image`).

    Returns:
        ``{instance id: image name}``.
    """
    ids = [r["instance_id"] for r in load_instances(default_instances())]
    return {i: build_fixture_image(i, base=base, force=force) for i in ids}


__all__ = [
    "HARNESS_IMAGE_TEMPLATE",
    "SWEBenchBenchmark",
    "SWEBenchDebugBenchmark",
    "SWEBenchError",
    "build_fixture_image",
    "build_fixture_images",
    "fixture_image_name",
    "harness_image",
    "select",
    "default_instances",
    "harness_id",
    "hidden_file_commands",
    "load_instances",
    "normalize_instance",
]
