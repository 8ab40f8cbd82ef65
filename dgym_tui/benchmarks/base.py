"""The task and benchmark types every loader returns, and the benchmark registry.

A *benchmark* is a named set of *tasks*; a task is everything needed to start
an episode on one buggy repository: the host folder to copy, the entrypoint,
what the agent is told (``description``), what it may not see (``ignore``) or
change (``readonly``), and ``meta`` — data kept for grading and analysis that
is never shown to the agent (the bug, a gold patch, instance ids).

Loaders register by name in :data:`REGISTRY` as ``"module"`` or
``"module:attribute"`` strings, so a loader's module is imported only when that
benchmark is asked for. With a bare module path, the module's
:class:`Benchmark` subclass whose class attribute ``name`` equals the requested
name is used (one module may define several, e.g. "swebench" and
"swebench-debug"). Third-party packages add benchmarks through the
``dgym_tui.benchmarks`` entry-point group (``name = "module:Class"``).
"""

from __future__ import annotations

import atexit
import difflib
import importlib
import inspect
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from dgym_tui.core import tempdirs

if TYPE_CHECKING:
    from dgym_tui.core.env import RepoEnv

#: Benchmark name -> "module" or "module:attribute" (a Benchmark subclass or factory).
REGISTRY: dict[str, str] = {
    "mini": "dgym_tui.benchmarks.mini:MiniBenchmark",
    "local": "dgym_tui.benchmarks.local:LocalBenchmark",
    "folder": "dgym_tui.benchmarks.folder:FolderBenchmark",
    "exercism": "dgym_tui.benchmarks.exercism",
    # the reference system's name for its Exercism benchmark
    "aider": "dgym_tui.benchmarks.exercism:ExercismBenchmark",
    "swebench": "dgym_tui.benchmarks.swebench",
    "swebench-debug": "dgym_tui.benchmarks.swebench",
    "swesmith": "dgym_tui.benchmarks.swesmith:SWESmithBenchmark",
    "r2egym": "dgym_tui.benchmarks.r2egym:R2EGymBenchmark",
}

ENTRY_POINT_GROUP = "dgym_tui.benchmarks"


@dataclass
class Task:
    """One episode's setup: a buggy repository and how to run and describe it.

    Attributes:
        name: task name, unique within its benchmark (e.g. ``"shopping_cart"``).
        benchmark: the benchmark's name (``"mini"``, ``"local"``, ...).
        path: host folder whose content becomes the working copy; never written.
        entrypoint: shell command that runs the tests (e.g. pytest on one file).
        debug_entrypoint: command pdb starts; None lets the pdb tool derive it
            from ``entrypoint``.
        description: what the agent is told (the symptom, never the bug).
        ignore: gitignore-style patterns the agent cannot see.
        readonly: gitignore-style patterns the agent can see but not change.
        image: Docker image for the sandbox; None uses the environment's default.
        terminal: ``"local"``, ``"docker"`` or None (the environment's default).
        setup_commands: shell commands run in the terminal before the first eval.
        terminal_options: extra Docker terminal options (e.g. ``{"workdir":
            "/testbed"}``), passed as ``RepoEnv(terminal_options=...)``.
        hidden: host paths sandboxed commands must not read, passed as
            ``RepoEnv(hidden=...)`` (e.g. the folder a task was staged from,
            which holds its solutions).
        meta: grading / analysis data never shown to the agent (bug, gold patch,
            instance ids, ...). JSON-ready values.
        grader: scores each eval instead of pytest's summary line (passed to
            ``RepoEnv(grader=...)``; e.g. the SWE-bench harness's log parser);
            not part of :meth:`to_dict`: loaders rebuild it.
        benchmark_options: the options the benchmark was built with
            (:func:`get_benchmark` fills them in), so the task can be loaded
            again from its record.
    """

    name: str
    benchmark: str
    path: Path
    entrypoint: str
    debug_entrypoint: str | None = None
    description: str = ""
    ignore: list[str] = field(default_factory=list)
    readonly: list[str] = field(default_factory=list)
    image: str | None = None
    terminal: str | None = None
    setup_commands: list[str] = field(default_factory=list)
    terminal_options: dict[str, Any] = field(default_factory=dict)
    hidden: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    grader: Callable[..., Any] | None = field(default=None, repr=False, compare=False)
    benchmark_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def env_kwargs(self, **overrides: Any) -> dict[str, Any]:
        """Return the keyword arguments :meth:`make_env` passes to ``RepoEnv``.

        Args:
            **overrides: any ``RepoEnv`` keyword argument; wins over the task's
                own value (e.g. ``terminal="docker"``, ``tools=[...]``).

        Returns:
            dict with ``path`` and the other ``RepoEnv`` keywords (lists and
            dicts copied). ``terminal``, ``image``, ``terminal_options``,
            ``hidden`` and ``grader`` are left out when the task leaves them
            unset, so the environment's defaults apply.
        """
        unset = {"terminal": self.terminal, "image": self.image,
                 "terminal_options": dict(self.terminal_options) or None,
                 "hidden": list(self.hidden) or None, "grader": self.grader}
        return {"path": self.path, "entrypoint": self.entrypoint,
                "debug_entrypoint": self.debug_entrypoint, "task": self.description,
                "ignore": list(self.ignore), "readonly": list(self.readonly),
                "setup_commands": list(self.setup_commands),
                **{key: value for key, value in unset.items() if value is not None}, **overrides}

    def make_env(self, **overrides: Any) -> RepoEnv:
        """Build a (not yet reset) ``RepoEnv`` for this task.

        Args:
            **overrides: ``RepoEnv`` keyword arguments that replace the task's
                values (see :meth:`env_kwargs`).

        Returns:
            a ``dgym_tui.core.env.RepoEnv``; call ``reset()`` to start the episode.

        Raises:
            TypeError: an override is not a ``RepoEnv`` argument.
        """
        from dgym_tui.core.env import RepoEnv  # lazy: loaders stay importable alone

        return RepoEnv(**self.env_kwargs(**overrides))

    def to_dict(self, include_meta: bool = False) -> dict[str, Any]:
        """Return a JSON-ready dict (for trajectory headers).

        Args:
            include_meta: also include ``meta``. Off by default: meta can hold
                the answer (gold patch), and headers may be shown to agents.
        """
        data = asdict(replace(self, grader=None))
        data.pop("grader")
        data["path"] = str(self.path)
        if not include_meta:
            data.pop("meta")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        """Inverse of :meth:`to_dict` (keys that are not fields are ignored; no grader).

        Raises:
            TypeError: ``name``, ``benchmark``, ``path`` or ``entrypoint`` is missing.
        """
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})

    @property
    def ref(self) -> str:
        """``BENCHMARK/TASK``, the ``--task`` syntax that loads this task again."""
        return f"{self.benchmark}/{self.name}"


class Benchmark:
    """A named set of tasks. Subclasses set ``name`` and implement
    :meth:`tasks` and :meth:`_load`; callers use :meth:`load`.
    """

    name: ClassVar[str] = ""
    #: the options the benchmark was built with (set by :func:`get_benchmark`).
    options: dict[str, Any] = {}  # noqa: RUF012  replaced per instance, never mutated

    def tasks(self) -> list[str]:
        """Return the task names, sorted."""
        raise NotImplementedError

    def _load(self, task_name: str) -> Task:
        """Build the task ``task_name``, which is known to be in :meth:`tasks`."""
        raise NotImplementedError

    def load(self, task_name: str) -> Task:
        """Return the task called ``task_name``.

        Raises:
            KeyError: no such task; the message lists the closest names.
        """
        names = self.tasks()
        if task_name not in names:
            raise KeyError(_unknown_message(f"{self.name} task", task_name, names))
        return self._stamped(task_name)

    def describe(self, task_name: str) -> dict[str, Any]:
        """Return what ``dgym list-tasks --details`` shows for ``task_name``.

        Loaders that can say it without preparing the task (no image, no
        copy) override this; the default loads the task.

        Returns:
            dict with at least ``name``, ``image`` (None: the environment's
            default) and ``test_command`` (the entrypoint), JSON-ready.

        Raises:
            KeyError: no such task.
        """
        task = self.load(task_name)
        return {"name": task.name, "image": task.image, "test_command": task.entrypoint}

    def __iter__(self):
        """Yield every :class:`Task` in :meth:`tasks` order."""
        for task_name in self.tasks():
            yield self._stamped(task_name)

    def _stamped(self, task_name: str) -> Task:
        """``_load(task_name)`` with the benchmark's options recorded on the task."""
        task = self._load(task_name)
        task.benchmark_options = dict(self.options)
        return task

    def __len__(self) -> int:
        return len(self.tasks())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


_stage_lock = threading.Lock()
_stage_root: Path | None = None


def stage_copy(folder: str | Path, exclude: Iterable[str] = ()) -> Path:
    """Copy ``folder`` without the ``exclude`` entries into a private staging area.

    Use it when a task folder holds files the agent must never reach (answers,
    gold patches): ``.debugignore`` hides files from the tools, but the working
    copy is bind-mounted whole into the sandbox, where pdb or test code could
    still open them. Caches (``__pycache__``, ``.pytest_cache``) are left out too.

    Args:
        folder: the original task folder (host path).
        exclude: glob patterns of file / folder *names* to leave out at any
            depth (``shutil.ignore_patterns`` semantics), e.g. ``["task.yaml"]``.

    Returns:
        the path of the copy (named like ``folder``), inside one temporary
        folder per process that is removed when the process exits.

    Raises:
        FileNotFoundError: ``folder`` does not exist.
    """
    global _stage_root
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"task folder {str(folder)!r} does not exist")
    with _stage_lock:
        if _stage_root is None:
            _stage_root = Path(tempdirs.make("tasks"))
            atexit.register(shutil.rmtree, _stage_root, True)
        target = Path(tempfile.mkdtemp(prefix=f"{folder.name}-", dir=_stage_root)) / folder.name
    shutil.copytree(folder, target, ignore=shutil.ignore_patterns(
        *exclude, "__pycache__", ".pytest_cache", "*.pyc"))
    return target


def patched_copy(folder: Path, source: Path, patch: str, hidden: Iterable[str] = ()) -> Path:
    """``folder/repo``: a copy of ``source`` with ``patch`` applied and ``hidden`` files removed.

    Made once and cached: the copy is built in a staging folder beside
    ``folder`` and renamed into place with a ``done.json`` marker, so an
    interrupted build is never used and two processes building it at once
    both end up with one complete copy.

    Args:
        folder: where the copy is kept (its parent must exist).
        source: the folder copied (symlinks are kept as links).
        patch: a unified diff applied to the copy (core.patches.apply_patch).
        hidden: paths relative to the copy to delete after the patch.

    Returns:
        ``folder / "repo"``.

    Raises:
        OSError: the copy could not be made (and no other process made it).
        PatchError: the patch does not apply.
    """
    from dgym_tui.core.fs.patches import apply_patch

    done = folder / "done.json"
    if not done.is_file():
        staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        try:
            shutil.copytree(source, staging / "repo", symlinks=True)
            apply_patch(patch, staging / "repo")
            for rel in hidden:
                (staging / "repo" / rel).unlink(missing_ok=True)
            (staging / "done.json").write_text("{}")
            staging.rename(folder)
        except OSError:
            if not done.is_file():
                raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return folder / "repo"


def read_patterns(path: str | Path) -> list[str]:
    """Return the patterns of a gitignore-syntax file (no blanks, no ``#`` comments).

    A missing file gives ``[]``.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def _unknown_message(kind: str, name: str, known: list[str]) -> str:
    """One line: unknown ``name``, close matches (or a few known names)."""
    close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
    if close:
        hint = "did you mean: " + ", ".join(close)
    elif known:
        shown = ", ".join(known[:10]) + (", ..." if len(known) > 10 else "")
        hint = f"known: {shown}"
    else:
        hint = "there are none"
    return f"unknown {kind} {name!r}; {hint}"


def benchmark_names() -> list[str]:
    """Return every registered benchmark name (built-in and entry points), sorted."""
    return sorted(set(REGISTRY) | set(_entry_point_targets()))


def _entry_point_targets() -> dict[str, str]:
    from importlib.metadata import entry_points  # ~10 ms: only when a plugin is looked for

    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _resolve(name: str, target: str) -> Callable[..., Benchmark]:
    """Import ``target`` ("module" or "module:attr") and return the benchmark factory."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise ValueError(
                f"benchmark {name!r} is registered but its module {module_name!r} "
                "is not installed; check the installation"
            ) from exc
        raise  # a dependency of the loader is missing: keep the original error
    if attr:
        try:
            return getattr(module, attr)
        except AttributeError:
            raise ValueError(
                f"benchmark {name!r}: module {module_name!r} has no {attr!r}"
            ) from None
    for _, obj in inspect.getmembers(module, inspect.isclass):
        if issubclass(obj, Benchmark) and obj is not Benchmark and obj.name == name:
            return obj
    raise ValueError(
        f"benchmark {name!r}: module {module_name!r} defines no Benchmark "
        f"subclass with name = {name!r}"
    )


def get_benchmark(name: str, /, **options: Any) -> Benchmark:
    """Return the benchmark called ``name``, built with ``options``.

    Args:
        name: ``"mini"``, ``"local"``, ``"exercism"``, ``"swebench"``,
            ``"swebench-debug"`` or a name added through entry points.
        **options: passed to the loader, e.g. ``get_benchmark("local",
            path="./repo")``.

    Returns:
        a :class:`Benchmark` (``.name``, ``.tasks()``, ``.load(task_name)``).

    Raises:
        ValueError: unknown name (the message lists the known ones), or the
            loader's module is missing.
        BenchmarkOptionError: (a ValueError and a TypeError) an option the
            loader does not take, or a required option not given; the message
            names it and lists the options.
    """
    # A built-in name wins over an entry point: no scan of the installed packages for it.
    targets = REGISTRY if name in REGISTRY else {**_entry_point_targets(), **REGISTRY}
    if name not in targets:
        raise ValueError(_unknown_message("benchmark", name, sorted(targets)))
    factory = _resolve(name, targets[name])
    _check_options(name, factory, options)
    benchmark = factory(**options)
    benchmark.options = dict(options)
    return benchmark


class BenchmarkOptionError(ValueError, TypeError):
    """Options that do not fit a benchmark loader (one line naming the option).

    A TypeError too, as the loader's own call would raise, so older callers
    catching TypeError keep working."""


def _check_options(name: str, factory: Callable[..., Any], options: dict[str, Any]) -> None:
    """Raise BenchmarkOptionError when ``options`` do not fit the loader's signature."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # a builtin or C callable: let the call decide
        return
    params = signature.parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    named = [p.name for p in params
             if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    for option in options:
        if option not in named:
            close = difflib.get_close_matches(option, named, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"options: {', '.join(named) or 'none'}"
            raise BenchmarkOptionError(f"benchmark {name!r} has no option {option!r}; {hint}")
    for p in params:
        if p.name in named and p.default is inspect.Parameter.empty and p.name not in options:
            raise BenchmarkOptionError(f"benchmark {name!r} needs the option {p.name!r} "
                             f"(e.g. {p.name}=...); options: {', '.join(named)}")
