"""The run index: every episode of one or more ``dgym run`` folders as a table row.

A run folder is what ``dgym run`` writes (:mod:`dgym_tui.runs.runner`): one
sub-folder per episode holding ``trajectory.jsonl``, ``status.json`` and
``patch.diff``, plus ``summary.json`` and, once someone reviewed it,
``reviews.jsonl`` (:mod:`dgym_tui.runs.reviews`). A folder given here may also hold
several run folders (one level down). A folder of saved sessions (where ``dgym-tui``
and ``dgym play`` save trajectories: ``<task>-<time>.jsonl`` files side by side, no
``*.py`` and no ``.git`` at its top) is a run too: each trajectory file is an episode
(:attr:`EpisodeRow.file`).

Reading is cheap: a finished episode costs its ``status.json`` and the first
line (header) of its trajectory; only an episode without a final status (a
run still writing it) is read to its end, tolerating a half-written last line.
Bad input never raises: an unreadable status, a corrupt trajectory, a header
of an unsupported schema version give a row with what could be read and
``problem`` saying why the rest is missing. :class:`RunIndex` re-reads only
the episodes whose files changed (size or mtime) since the last refresh.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dgym_tui.episode.records import Usage
from dgym_tui.episode.trajectory import SUPPORTED_VERSIONS, decode_lines
from dgym_tui.runs.files import PATCH_FILE, STATUS_FILE, TRAJECTORY_FILE
from dgym_tui.runs.reviews import REVIEWS_FILE, read_reviews

#: Status states after which an episode's values no longer change.
FINAL_STATES = ("done", "error", "interrupted", "skipped")
#: Row columns in table order: (attribute, heading).
COLUMNS = (("task", "task"), ("benchmark", "benchmark"), ("agent", "agent"), ("model", "model"),
           ("resolved", "resolved"), ("score", "score"), ("steps", "steps"),
           ("tokens", "tokens"), ("cost", "cost $"), ("wall_time", "wall s"),
           ("reason", "end reason"), ("verdict", "review"))


@dataclass
class EpisodeRow:
    """One episode of a run folder.

    Attributes:
        run: the run folder (as given, or the sub-folder of a given folder).
        episode: the episode's folder name inside ``run`` (its id in reviews).
        task / benchmark / agent / model: labels ("?" when unknown).
        state: ``done`` / ``error`` / ``interrupted`` / ``skipped`` (from the
            status), ``running`` (no final status yet) or ``unreadable``.
        resolved / score / max_score / steps / tokens: None when unknown.
        cost: US dollars; wall_time: seconds; None when unknown.
        reason: why the episode ended ("" while running).
        verdict / note: the latest review ("" when none).
        problem: why some values are missing ("" when everything was read).
        file: the trajectory's file name when the episode is a saved session (a lone
            ``*.jsonl`` in ``run``; then ``episode`` is that name too), else "".
    """

    run: Path
    episode: str
    task: str = "?"
    benchmark: str = "?"
    agent: str = "?"
    model: str = "?"
    state: str = "unreadable"
    resolved: bool | None = None
    score: int | None = None
    max_score: int | None = None
    steps: int | None = None
    tokens: int | None = None
    cost: float | None = None
    wall_time: float | None = None
    reason: str = ""
    verdict: str = ""
    note: str = ""
    problem: str = ""
    file: str = ""

    @property
    def folder(self) -> Path:
        """The episode folder (a saved session's: the folder that holds its file)."""
        return self.run if self.file else self.run / self.episode

    @property
    def trajectory(self) -> Path:
        """Path of the episode's ``trajectory.jsonl`` (a saved session's own file)."""
        return self.run / self.file if self.file else self.folder / TRAJECTORY_FILE

    @property
    def patch_file(self) -> Path | None:
        """Path of the episode's ``patch.diff`` (None for a saved session: the patch is in
        its trajectory's footer)."""
        return None if self.file else self.folder / PATCH_FILE

    def cell(self, column: str) -> str:
        """The text shown for ``column`` (an attribute name of :data:`COLUMNS`)."""
        value = getattr(self, column)
        if value is None:
            return "-"
        if column == "resolved":
            return "yes" if value else "no"
        if column == "score":
            return f"{value}/{self.max_score if self.max_score is not None else '?'}"
        if column == "cost":
            return f"{value:.4f}"
        if column == "wall_time":
            return f"{value:.1f}"
        if column == "reason":
            return value or self.state if not self.problem else f"{value or self.state} ({self.problem})"
        return str(value)

    def sort_key(self, column: str) -> tuple[int, Any]:
        """A key that sorts ``column`` with unknown values last."""
        value = getattr(self, column)
        return (1, "") if value is None else (0, value)


def episode_labels(header: dict[str, Any]) -> tuple[str, str, str]:
    """The (agent, model, benchmark) labels of an episode from its trajectory header.

    ``agent`` is the agent spec's name for an LLM agent, else the policy
    (``human``, ``scripted``); ``model`` is ``-`` without an LLM; a missing
    value is ``?``.
    """
    config = header.get("config") or {}
    task = header.get("task") or {}
    policy = str(config.get("policy") or "?")
    agent = Path(str(config.get("agent") or "agent")).stem if policy == "agent" else policy
    model = str(config.get("llm") or "-")
    bench = config.get("benchmark")
    benchmark = bench.get("name") if isinstance(bench, dict) else bench
    return agent, model, str(benchmark or task.get("benchmark") or "?")


def read_header(path: str) -> tuple[dict[str, Any] | None, str]:
    """(header dict or None, problem) from the first line of a trajectory; never raises."""
    try:
        with open(path, "rb") as f:
            line = f.readline()
    except FileNotFoundError:
        return None, "no trajectory"
    except OSError as exc:
        return None, f"trajectory unreadable: {exc.strerror}"
    if not line.strip():
        return None, "empty trajectory"
    try:
        header = json.loads(line)
    except ValueError:
        return None, ("header still being written" if not line.endswith(b"\n")
                      else "corrupt header line")
    if not isinstance(header, dict) or header.get("type") != "header":
        return None, "first line is not a trajectory header"
    version = header.get("schema_version")
    if version not in SUPPORTED_VERSIONS:
        return header, (f"schema version {version} (this dgym-tui reads "
                        f"{SUPPORTED_VERSIONS[0]}-{SUPPORTED_VERSIONS[-1]})")
    return header, ""


def _read_status(folder: str) -> tuple[dict[str, Any] | None, str]:
    try:
        with open(os.path.join(folder, STATUS_FILE), "rb") as f:
            data = json.loads(f.read())
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as exc:
        return None, f"status.json unreadable ({type(exc).__name__})"
    if not isinstance(data, dict):
        return None, "status.json is not an object"
    return data, ""


def _scan_steps(path: str, row: EpisodeRow) -> str:
    """Fill ``row`` from a trajectory read to its end (an episode still running);
    return a problem ("" if none). A cut-off last line is skipped silently."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        return f"trajectory unreadable: {exc.strerror}"
    lines = data.split(b"\n")
    complete = lines[:-1]  # the part after the last newline is still being written
    steps = 0
    usage = Usage()
    footer = None
    for lineno, record, _problem in decode_lines(complete[1:], 2):
        if record is None:
            return f"corrupt line {lineno}"
        if record.get("type") == "step":
            steps += 1
            with contextlib.suppress(TypeError, ValueError):
                usage = usage + Usage.from_dict(record.get("usage"))
        elif record.get("type") == "footer":
            footer = record
    row.steps = steps
    row.tokens = usage.prompt_tokens + usage.completion_tokens
    row.cost = round(usage.cost, 6)
    if footer is not None:
        row.state = "done"
        row.resolved = bool(footer.get("resolved"))
        row.score, row.max_score = footer.get("score"), footer.get("max_score")
        row.steps = footer.get("steps", steps)
        row.reason = str(footer.get("reason") or "")
        row.wall_time = footer.get("wall_time")
    return ""


def read_episode(run: Path, episode: str, file: bool = False) -> EpisodeRow:
    """Read one episode folder (or saved session) into a row; never raises.

    Args:
        run: the run folder.
        episode: the episode's folder name inside ``run``.
        file: ``episode`` is a saved session's trajectory file in ``run``.

    Returns:
        An :class:`EpisodeRow`; ``problem`` names what could not be read.
    """
    row = EpisodeRow(run=run, episode=episode, task=episode, file=episode if file else "")
    trajectory = str(row.trajectory)
    status, status_problem = (None, "") if file else _read_status(str(row.folder))
    header, header_problem = read_header(trajectory)
    problems = [p for p in (status_problem, header_problem) if p]
    if header is not None:
        config = header.get("config")
        if isinstance(config, dict) and isinstance(header.get("task"), dict):
            row.agent, row.model, row.benchmark = episode_labels(header)
            row.task = str(header["task"].get("name") or episode)
    if status is not None:
        try:
            row.task = str(status.get("task") or row.task)
            row.state = str(status.get("state") or "done")
            row.resolved = bool(status.get("resolved"))
            row.score, row.max_score = int(status.get("score", 0)), int(status.get("max_score", 0))
            row.steps = int(status.get("steps", 0))
            row.tokens = int(status.get("prompt_tokens", 0)) + int(status.get("completion_tokens", 0))
            row.cost = float(status.get("cost", 0.0))
            row.wall_time = float(status.get("wall_time", 0.0))
            row.reason = str(status.get("reason") or status.get("error") or "")
        except (TypeError, ValueError):
            problems.append("status.json has bad values")
    if (status is None or row.state not in FINAL_STATES) and header is not None \
            and not header_problem.startswith("schema"):
        row.state = "running"
        problem = _scan_steps(trajectory, row)
        if problem:
            problems.append(problem)
    elif status is None and not problems:
        problems.append("no status and no trajectory")
    if status is None and header is None:
        row.state = "unreadable"
    row.problem = "; ".join(problems)
    return row


def _is_episode(path: str) -> bool:
    return os.path.exists(os.path.join(path, TRAJECTORY_FILE)) or \
        os.path.exists(os.path.join(path, STATUS_FILE))


def _session_files(folder: str | os.PathLike[str]) -> list[str]:
    """The names of the ``*.jsonl`` files at the top of ``folder`` that may be saved
    sessions (every one but ``reviews.jsonl``), sorted; [] when unreadable."""
    try:
        return sorted(e.name for e in os.scandir(folder) if e.name.endswith(".jsonl")
                      and e.name != REVIEWS_FILE and e.is_file(follow_symlinks=False))
    except OSError:
        return []


def holds_sessions(folder: str | os.PathLike[str]) -> bool:
    """True when ``folder`` is a folder of saved sessions: a trajectory file (a ``*.jsonl``
    whose first line is a trajectory header) at its top, and neither ``*.py`` nor ``.git``
    there (a repository). Never raises."""
    given = Path(folder)
    try:
        if not given.is_dir() or (given / ".git").exists() or any(given.glob("*.py")):
            return False
    except OSError:
        return False
    return any(read_header(str(given / name))[0] is not None for name in _session_files(given))


def find_runs(paths: list[str | os.PathLike[str]]) -> list[Path]:
    """The run folders among ``paths``: each path itself when it holds episode
    folders (or a ``summary.json``) or saved sessions (:func:`holds_sessions`), else
    its sub-folders that do (unless the path looks like a repository: ``.git`` or
    ``*.py`` at its top). Never raises; a missing path gives nothing."""
    runs: list[Path] = []
    for given in map(Path, paths):
        if not given.is_dir():
            continue
        subs = sorted(e.path for e in os.scandir(given) if e.is_dir())
        if ((given / "summary.json").exists() or any(_is_episode(s) for s in subs)
                or holds_sessions(given)):
            runs.append(given)
            continue
        if (given / ".git").exists() or any(given.glob("*.py")):
            continue  # a repository, not a folder of runs
        runs.extend(Path(s) for s in subs
                    if (Path(s) / "summary.json").exists()
                    or any(_is_episode(e.path) for e in os.scandir(s) if e.is_dir()))
    return list(dict.fromkeys(runs))


def is_run_folder(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is (or holds) a ``dgym run`` output folder."""
    return bool(find_runs([path]))


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


@dataclass
class RunIndex:
    """The rows of some run folders, kept up to date by :meth:`refresh`.

    Args:
        paths: run folders, or folders holding run folders.

    Attributes:
        rows: one :class:`EpisodeRow` per episode, by run then episode name.
    """

    paths: list[Path]
    rows: list[EpisodeRow] = field(default_factory=list)
    _cache: dict[tuple[Path, str], tuple[Any, EpisodeRow]] = field(default_factory=dict)
    _reviews: dict[Path, tuple[Any, dict[str, dict[str, Any]]]] = field(default_factory=dict)

    def refresh(self) -> bool:
        """Re-scan the folders; re-read only episodes whose files changed.

        Returns:
            True when any row was added, removed or changed.
        """
        rows: list[EpisodeRow] = []
        seen: set[tuple[Path, str]] = set()
        changed = False
        for run in find_runs(self.paths):
            reviews = self._run_reviews(run)
            try:
                names = sorted(e.name for e in os.scandir(run) if e.is_dir())
            except OSError:
                continue
            files = set(_session_files(run))
            for name in sorted([*names, *files]):
                folder = os.path.join(run, name)
                if name in files:  # a saved session
                    stamp = (None, _stamp(folder))
                else:
                    stamp = (_stamp(os.path.join(folder, STATUS_FILE)),
                             _stamp(os.path.join(folder, TRAJECTORY_FILE)))
                if stamp == (None, None):
                    continue
                key = (run, name)
                seen.add(key)
                cached = self._cache.get(key)
                if cached is None or cached[0] != stamp:
                    row = read_episode(run, name, file=name in files)
                    self._cache[key] = (stamp, row)
                    changed = True
                else:
                    row = cached[1]
                if row.file and row.state == "unreadable":
                    continue  # a *.jsonl that is no trajectory
                review = reviews.get(name) or {}
                verdict, note = str(review.get("verdict", "")), str(review.get("note", ""))
                if (row.verdict, row.note) != (verdict, note):
                    row.verdict, row.note = verdict, note
                    changed = True
                rows.append(row)
        for key in set(self._cache) - seen:
            del self._cache[key]
            changed = True
        self.rows = rows
        return changed

    def _run_reviews(self, run: Path) -> dict[str, dict[str, Any]]:
        stamp = _stamp(os.path.join(run, REVIEWS_FILE))
        cached = self._reviews.get(run)
        if cached is None or cached[0] != stamp:
            cached = (stamp, read_reviews(run) if stamp else {})
            self._reviews[run] = cached
        return cached[1]


def index_runs(paths: list[str | os.PathLike[str]]) -> list[EpisodeRow]:
    """Read every episode of ``paths`` (run folders or folders of run folders). Never raises."""
    index = RunIndex([Path(p) for p in paths])
    index.refresh()
    return index.rows


def summarize(rows: list[EpisodeRow]) -> dict[str, float]:
    """Totals over ``rows``.

    Returns:
        ``{"episodes", "resolved", "success_rate" (0-1), "mean_steps", "cost" (US$),
        "running", "problems"}``; rates and means are 0.0 for no episode.
    """
    ended = [r for r in rows if r.state not in ("running", "unreadable")]
    steps = [r.steps for r in rows if r.steps is not None]
    resolved = sum(bool(r.resolved) for r in rows)
    return {"episodes": len(rows), "resolved": resolved,
            "success_rate": resolved / len(ended) if ended else 0.0,
            "mean_steps": sum(steps) / len(steps) if steps else 0.0,
            "cost": sum(r.cost or 0.0 for r in rows),
            "running": sum(r.state == "running" for r in rows),
            "problems": sum(bool(r.problem) for r in rows)}
