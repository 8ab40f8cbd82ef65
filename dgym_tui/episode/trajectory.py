"""Versioned JSONL trajectories: write one line per event, read them back safely.

A trajectory file holds one JSON object per line:

- a ``header`` (schema version, task, run config, tool schemas, environment,
  versions, start time, the initial observation as a StepResult dict, and
  ``files``: every visible file's git blob id at the start);
- one ``step`` line per turn of the episode (see :class:`dgym_tui.episode.records.Turn`;
  a step that changed files adds the whole ``patch`` and the ``originals`` of
  the files changed for the first time);
- a ``footer`` (resolved, score, max score, steps, patch, reason, end time;
  ``applied_to_source``: each apply of the changes to the original repository
  before the episode's end), absent when the episode was interrupted;
- after the footer, one ``applied`` line per apply made once the episode had
  ended (the app's ``w`` after a submit): ``after_step``, ``files``, ``at``.
  :func:`read_trajectory` adds them to the footer's ``applied_to_source``.

:class:`TrajectoryWriter` writes and flushes every line before it returns, so a
process killed mid-episode (a crash, SIGKILL) leaves a file readable up to its last
finished step; by default a thread of the writer then calls ``fsync`` on it, off the
step's path, so a machine that loses power loses at most the last few milliseconds' lines;
the footer is on disk when :meth:`TrajectoryWriter.write_footer` returns.

:func:`read_trajectory` validates each line against a small JSON schema
and names the line number of a corrupt entry; a final line cut off mid-write
is tolerated (``Trajectory.truncated`` is set).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dgym_tui.core.types import StepResult
from dgym_tui.episode.records import Turn

_log = logging.getLogger(__name__)

#: Version written. 2 added what replay rebuilds the source from: the header's
#: ``files`` / ``readonly_files`` and each file-changing step's ``patch`` /
#: ``originals``. Version 1 files are still read (their source cannot be rebuilt).
SCHEMA_VERSION = 2
SUPPORTED_VERSIONS = (1, 2)


class TrajectoryError(Exception):
    """A trajectory file cannot be read: missing, corrupt, or of an unknown version.

    The message names the file and, for a bad entry, its 1-based line number.
    """


_TOOL_CALL = {"type": ["object", "null"], "required": ["name"]}
_SCHEMAS: dict[str, dict[str, Any]] = {
    "header": {
        "type": "object",
        "required": ["type", "schema_version", "task", "config", "tools", "environment",
                     "started_at", "initial"],
        "properties": {
            "schema_version": {"type": "integer"},
            "task": {"type": "object"},
            "config": {"type": "object"},
            "tools": {"type": "array"},
            "environment": {"type": "object"},
            "initial": {"type": "object", "required": ["observation"]},
        },
    },
    "step": {
        "type": "object",
        "required": ["type", "step", "actor", "decision", "proposed", "action", "observation"],
        "properties": {
            "step": {"type": "integer", "minimum": 1},
            "actor": {"enum": ["agent", "human"]},
            "decision": {"enum": ["auto", "approved", "edited", "rejected", "manual"]},
            "proposed": _TOOL_CALL,
            "action": _TOOL_CALL,
            "observation": {"type": "string"},
            "result": {"type": ["object", "null"]},
            "usage": {"type": ["object", "null"]},
        },
    },
    "footer": {
        "type": "object",
        "required": ["type", "resolved", "score", "max_score", "steps", "reason"],
        "properties": {
            "resolved": {"type": "boolean"},
            "steps": {"type": "integer"},
            "patch": {"type": ["string", "null"]},
        },
    },
    "applied": {
        "type": "object",
        "required": ["type", "after_step", "files", "at"],
        "properties": {
            "after_step": {"type": "integer", "minimum": 0},
            "files": {"type": "array", "items": {"type": "string"}},
            "at": {"type": "string"},
        },
    },
}


@functools.cache
def _validators() -> dict[str, Any]:
    """``{entry type: jsonschema validator}``, built on the first read (jsonschema is
    imported only then: writing a trajectory, as the app does at start, needs none)."""
    from jsonschema import Draft202012Validator

    return {kind: Draft202012Validator(schema) for kind, schema in _SCHEMAS.items()}


def _json_default(value: Any) -> Any:
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if isinstance(value, (Path, set, frozenset, tuple)):
        return str(value) if isinstance(value, Path) else list(value)
    return str(value)


def dumps(record: dict[str, Any]) -> str:
    """Serialize one record to a single JSON line (no trailing newline).

    Objects with ``to_dict`` are converted, paths become strings, anything else
    unknown becomes its ``str``.
    """
    return json.dumps(record, ensure_ascii=False, default=_json_default)


class _Syncer:
    """Call ``fsync`` on one file in a thread whenever asked, coalescing requests (an
    ``fsync`` took ~1-8 ms, on the path of every step when done in line). The thread starts on a
    request and ends once idle for :attr:`IDLE` seconds: none outlives the writes.

    Args:
        fd: the file's descriptor (duplicated: the writer closes its own).
        name: what the thread is called.
    """

    #: Seconds the thread waits for another request before it ends.
    IDLE = 1.0

    def __init__(self, fd: int, name: str) -> None:
        self._fd = os.dup(fd)
        self._name = name
        self._cond = threading.Condition()
        self._wanted = self._done = 0
        self._closing = False
        self._thread: threading.Thread | None = None

    def request(self) -> None:
        """Ask for an ``fsync`` of everything written so far (returns at once)."""
        with self._cond:
            self._wanted += 1
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the ``fsync`` of every request so far returned (True), or
        ``timeout`` seconds passed (False)."""
        with self._cond:
            wanted = self._wanted
            return self._cond.wait_for(lambda: self._done >= wanted, timeout)

    def close(self) -> None:
        """A last ``fsync``, waited for; then the descriptor closes."""
        self.request()
        self.wait()
        with self._cond:
            self._closing = True
            thread = self._thread
            self._cond.notify_all()
        if thread is not None:
            thread.join()
        os.close(self._fd)

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._cond.wait_for(lambda: self._wanted > self._done or self._closing,
                                           self.IDLE) or self._wanted <= self._done:
                    self._thread = None  # idle (or closing): a request starts another
                    return
                target = self._wanted
            try:
                os.fsync(self._fd)
            except OSError as exc:  # the lines stay written; only their durability is late
                _log.warning("fsync of a trajectory failed: %s", exc)
            with self._cond:
                self._done = target
                self._cond.notify_all()


class TrajectoryWriter:
    """Append-only writer of one trajectory file. Thread-safe.

    Each line is written and flushed before the call returns (a killed process leaves
    every line written so far).

    Args:
        path: the file to create (parent folders are made; an existing file is
            replaced).
        fsync: also ``os.fsync`` each line (survives a machine crash or a power loss, not
            only a killed process), in a thread of the writer right after the line is
            written (:meth:`sync` waits for it); the footer's ``fsync`` is waited for.

    Raises:
        OSError: the file cannot be created.
    """

    def __init__(self, path: str | os.PathLike[str], fsync: bool = True) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._file = open(self.path, "w", encoding="utf-8")  # noqa: SIM115  closed in close()
        self._syncer = _Syncer(self._file.fileno(), "trajectory-fsync") if fsync else None
        self.lines = 0

    def _write(self, record: dict[str, Any]) -> None:
        line = dumps(record) + "\n"
        with self._lock:
            if self._file.closed:
                raise ValueError(f"trajectory {self.path} is already closed")
            self._file.write(line)
            self._file.flush()
            if self._syncer is not None:
                self._syncer.request()
            self.lines += 1

    def sync(self, timeout: float | None = None) -> bool:
        """Wait until every line written so far is on disk (``fsync`` returned).

        Args:
            timeout: seconds at most (None: no limit).

        Returns:
            True when they are (or the writer does not fsync), False on timeout.
        """
        return True if self._syncer is None else self._syncer.wait(timeout)

    def write_header(self, header: dict[str, Any]) -> None:
        """Write the header line; ``type`` and ``schema_version`` are filled in."""
        self._write({"type": "header", "schema_version": SCHEMA_VERSION, **header})

    def write_step(self, step: dict[str, Any]) -> None:
        """Write one step line; ``type`` is filled in."""
        self._write({**step, "type": "step"})

    def write_footer(self, footer: dict[str, Any]) -> None:
        """Write the footer line and close the file."""
        self._write({**footer, "type": "footer"})
        self.close()

    def close(self) -> None:
        """Close the file, its lines on disk first (a last ``fsync``); idempotent."""
        with self._lock:
            if not self._file.closed:
                self._file.close()
                if self._syncer is not None:
                    self._syncer.close()


def append_applied(path: str | os.PathLike[str], applied: dict[str, Any]) -> None:
    """Append one ``applied`` line (``after_step``, ``files``, ``at``) to a finished
    trajectory: the changes were applied to the original after the footer was written.

    Raises:
        OSError: the file cannot be written.
    """
    with open(path, "a", encoding="utf-8") as f:
        f.write(dumps({"type": "applied", **applied}) + "\n")
        f.flush()
        os.fsync(f.fileno())


@dataclass
class Trajectory:
    """A trajectory read back from disk.

    Attributes:
        path: the file it was read from.
        header: the header record (dict).
        steps: the step records, oldest first; ``steps[i]["step"] == i + 1``.
        footer: the footer record, or None when the episode did not finish.
        truncated: the last line was cut off mid-write and was skipped.
    """

    path: Path
    header: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)
    footer: dict[str, Any] | None = None
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.steps)

    def __getitem__(self, index: int) -> dict[str, Any]:
        """Return the step record at 0-based ``index`` (negative indexes allowed)."""
        return self.steps[index]

    def step(self, number: int) -> dict[str, Any]:
        """Return the step record with 1-based step ``number``.

        Raises:
            IndexError: no such step.
        """
        if not 1 <= number <= len(self.steps):
            raise IndexError(f"step {number} out of range 1..{len(self.steps)}")
        return self.steps[number - 1]

    @property
    def finished(self) -> bool:
        """True when the episode ended normally (a footer was written)."""
        return self.footer is not None

    @property
    def initial(self) -> StepResult:
        """The StepResult of ``env.reset()`` stored in the header."""
        return StepResult.from_dict(self.header["initial"])

    def result(self, number: int) -> StepResult | None:
        """StepResult after 1-based step ``number`` (None for a rejected turn)."""
        data = self.step(number).get("result")
        return StepResult.from_dict(data) if data else None

    def turns(self) -> list[Turn]:
        """All steps as :class:`dgym_tui.episode.records.Turn` objects (for replay / display)."""
        return [Turn.from_record(record) for record in self.steps]


def decode_lines(lines: Iterable[bytes], first: int = 1
                 ) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """Decode JSONL lines (without their newlines), skipping blank ones; the one line
    parser of trajectory readers.

    Args:
        lines: the lines, in file order.
        first: the 1-based line number of ``lines[0]``.

    Yields:
        ``(line number, record, problem)``: the record is the line's JSON object and
        problem ``""``; for a line that is not one, record None and problem
        ``"not JSON: MSG"`` or ``"not a JSON object"``.
    """
    for number, line in enumerate(lines, start=first):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError
            yield number, None, f"not JSON: {getattr(exc, 'msg', 'not UTF-8')}"
            continue
        if isinstance(value, dict):
            yield number, value, ""
        else:
            yield number, None, "not a JSON object"


def _check(record: dict[str, Any], lineno: int, path: Path) -> str:
    kind = str(record.get("type"))
    validator = _validators().get(kind)
    if validator is None:
        raise TrajectoryError(f"{path}:{lineno}: unknown entry type {kind!r} "
                              "(expected header, step, footer or applied)")
    error = next(iter(sorted(validator.iter_errors(record), key=str)), None)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "entry"
        raise TrajectoryError(f"{path}:{lineno}: bad {kind} entry ({where}): {error.message}")
    return kind


def read_trajectory(path: str | os.PathLike[str]) -> Trajectory:
    """Read and validate a trajectory file.

    Args:
        path: a ``.jsonl`` file written by :class:`TrajectoryWriter`.

    Returns:
        A :class:`Trajectory`. ``truncated`` is True when the final line was
        cut off mid-write (it is skipped); ``footer`` is None for an episode
        that did not finish.

    Raises:
        TrajectoryError: the file is missing or empty, a line is not valid
            JSON (other than a cut-off last line), an entry lacks required keys,
            entries are out of order, or the schema version is not supported.
            The message names the line number.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise TrajectoryError(f"{path}: no such trajectory file") from None
    except OSError as exc:
        raise TrajectoryError(f"{path}: cannot read trajectory: {exc}") from None
    *lines, rest = data.split(b"\n")
    cut_off = len(lines) + 1 if rest.strip() else 0  # the last line has no newline
    header: dict[str, Any] | None = None
    steps: list[dict[str, Any]] = []
    footer: dict[str, Any] | None = None
    truncated = False
    for lineno, record, problem in decode_lines([*lines, rest] if cut_off else lines):
        if problem.startswith("not JSON"):
            if lineno == cut_off:
                truncated = True
                break
            raise TrajectoryError(f"{path}:{lineno}: corrupt entry ({problem})")
        if record is None:
            raise TrajectoryError(f"{path}:{lineno}: entry is not a JSON object")
        kind = _check(record, lineno, path)
        if footer is not None:
            if kind != "applied":
                raise TrajectoryError(f"{path}:{lineno}: entry after the footer")
            footer.setdefault("applied_to_source", []).append(
                {key: record[key] for key in ("after_step", "files", "at")})
            continue
        if kind == "applied":
            raise TrajectoryError(f"{path}:{lineno}: an applied entry before the footer")
        if kind == "header":
            if header is not None:
                raise TrajectoryError(f"{path}:{lineno}: second header")
            version = record["schema_version"]
            if version not in SUPPORTED_VERSIONS:
                raise TrajectoryError(
                    f"{path}:{lineno}: schema version {version} is not supported "
                    f"(this dgym-tui reads versions {SUPPORTED_VERSIONS[0]} to "
                    f"{SUPPORTED_VERSIONS[-1]}); upgrade dgym-tui")
            header = record
            continue
        if header is None:
            raise TrajectoryError(f"{path}:{lineno}: the first entry must be the header")
        if kind == "step":
            expected = len(steps) + 1
            if record["step"] != expected:
                raise TrajectoryError(
                    f"{path}:{lineno}: step number {record['step']}, expected {expected}")
            steps.append(record)
        else:
            footer = record
    if header is None:
        raise TrajectoryError(f"{path}: empty trajectory (no header)")
    return Trajectory(path=path, header=header, steps=steps, footer=footer, truncated=truncated)
