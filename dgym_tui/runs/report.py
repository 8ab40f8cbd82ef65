"""``dgym report RUN_DIR...``: success rates across runs, a per-task matrix, steps, tokens, cost.

A run folder is what ``dgym run`` writes: one sub-folder per task holding
``status.json`` and ``trajectory.jsonl``. Each episode is labelled by the run
config in its trajectory header: the *system* (agent spec and LLM entry; or
the policy for ``solution`` / ``human`` runs) and the benchmark. Episodes
that ended (``done``, or ``error``: an attempt that failed counts as not
resolved) are counted; interrupted ones are not (they run again on resume).
When two folders hold the same system × benchmark × task, the later one given wins.
"""

from __future__ import annotations

import csv
import io
import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from dgym_tui.core.safetext import one_line
from dgym_tui.runs.index import episode_labels, read_header
from dgym_tui.runs.runner import STATUS_FILE, TRAJECTORY_FILE, read_status

#: Output formats of :func:`render`.
FORMATS = ("table", "markdown", "csv", "json")
COUNTED_STATES = ("done", "skipped", "error")


class ReportError(ValueError):
    """A run folder cannot be read (one line saying which and why)."""


@dataclass
class Episode:
    """One counted episode of a run folder."""

    run: str
    agent: str
    model: str
    benchmark: str
    task: str
    resolved: bool
    steps: int
    tokens: int
    cost: float
    state: str

    @property
    def system(self) -> str:
        """``agent × model`` label of the row this episode belongs to."""
        return f"{self.agent} × {self.model}"


def load_episodes(run_dirs: list[str | Path]) -> list[Episode]:
    """Read the counted episodes of ``run_dirs`` (see the module docstring).

    Returns:
        Episodes in folder order, task folders sorted by name; a later folder's
        episode replaces an earlier one of the same system × benchmark × task.

    Raises:
        ReportError: a folder does not exist or holds no task folder with a status.
    """
    found: dict[tuple[str, str, str], Episode] = {}
    for run_dir in map(Path, run_dirs):
        if not run_dir.is_dir():
            raise ReportError(f"{run_dir}: not a folder; give the output folder of a dgym run")
        folders = sorted(p.parent for p in run_dir.glob(f"*/{STATUS_FILE}"))
        if not folders:
            raise ReportError(f"{run_dir}: no task results (*/{STATUS_FILE}); "
                              "is it the output folder of a dgym run?")
        for folder in folders:
            status = read_status(folder)
            if status is None or status.state not in COUNTED_STATES:
                continue
            agent, model, benchmark = episode_labels(
                read_header(str(folder / TRAJECTORY_FILE))[0] or {})
            episode = Episode(run=str(run_dir), agent=agent, model=model, benchmark=benchmark,
                              task=status.task, resolved=bool(status.resolved),
                              steps=status.steps,
                              tokens=status.prompt_tokens + status.completion_tokens,
                              cost=status.cost, state=status.state)
            found[(episode.system, benchmark, status.task)] = episode
    return list(found.values())


@dataclass
class Cell:
    """Resolved / total episodes of one system on one benchmark."""

    resolved: int = 0
    total: int = 0

    @property
    def rate(self) -> float:
        """Share resolved, 0.0 to 1.0 (0.0 when there is no episode)."""
        return self.resolved / self.total if self.total else 0.0

    def __str__(self) -> str:
        return f"{self.resolved}/{self.total} ({self.rate:.0%})"


@dataclass
class Report:
    """Everything ``dgym report`` shows.

    Attributes:
        systems: row labels (``agent × model``), in first-seen order.
        benchmarks: column labels, in first-seen order.
        success: ``{(system, benchmark): Cell}``.
        tasks: ``{(benchmark, task): {system: resolved}}``.
        stats: ``{system: {"episodes", "mean_steps", "tokens", "cost"}}``.
    """

    systems: list[str]
    benchmarks: list[str]
    success: dict[tuple[str, str], Cell]
    tasks: dict[tuple[str, str], dict[str, bool]]
    stats: dict[str, dict[str, float]]


def build_report(episodes: list[Episode]) -> Report:
    """Aggregate ``episodes`` into a :class:`Report`."""
    systems = list(dict.fromkeys(e.system for e in episodes))
    benchmarks = list(dict.fromkeys(e.benchmark for e in episodes))
    success: dict[tuple[str, str], Cell] = defaultdict(Cell)
    tasks: dict[tuple[str, str], dict[str, bool]] = defaultdict(dict)
    stats: dict[str, dict[str, float]] = {}
    for e in episodes:
        cell = success[(e.system, e.benchmark)]
        cell.total += 1
        cell.resolved += e.resolved
        tasks[(e.benchmark, e.task)][e.system] = e.resolved
    for system in systems:
        mine = [e for e in episodes if e.system == system]
        stats[system] = {"episodes": len(mine),
                         "mean_steps": round(sum(e.steps for e in mine) / len(mine), 2),
                         "tokens": sum(e.tokens for e in mine),
                         "cost": round(sum(e.cost for e in mine), 6)}
    return Report(systems, benchmarks, dict(success), dict(sorted(tasks.items())), stats)


def _tables(report: Report) -> list[tuple[str, list[str], list[list[str]]]]:
    """The three tables as (title, header, rows) of plain strings."""
    success = [[system] + [str(report.success[(system, b)]) if (system, b) in report.success
                           else "-" for b in report.benchmarks]
               for system in report.systems]
    matrix = [[f"{bench}/{task}"] + [("yes" if solved[s] else "no") if s in solved else "-"
                                     for s in report.systems]
              for (bench, task), solved in report.tasks.items()]
    stats = [[s, str(int(v["episodes"])), f"{v['mean_steps']:.1f}", str(int(v["tokens"])),
              f"{v['cost']:.4f}"] for s, v in report.stats.items()]
    return [("success rate (resolved/total)", ["agent × model", *report.benchmarks], success),
            ("per task: resolved?", ["task", *report.systems], matrix),
            ("episodes, mean steps, tokens, cost", ["agent × model", "episodes", "mean steps",
                                                    "tokens", "cost $"], stats)]


def markdown_table(title: str, header: list[str], rows: list[list[str]]) -> str:
    """A ``### title`` heading and a markdown table (``|`` in cells escaped), no final newline."""

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([f"### {title}", "", line(header),
                      "|" + "|".join("---" for _ in header) + "|", *map(line, rows)])


def to_json(report: Report) -> dict[str, Any]:
    """Return the report as a JSON-ready dict: ``success`` (one entry per system ×
    benchmark: resolved, total, rate), ``tasks`` (``"bench/task" -> {system: bool}``)
    and ``stats`` (per system)."""
    return {
        "success": [{"system": s, "benchmark": b, **asdict(c), "rate": round(c.rate, 4)}
                    for (s, b), c in report.success.items()],
        "tasks": {f"{b}/{t}": solved for (b, t), solved in report.tasks.items()},
        "stats": report.stats,
    }


def render(report: Report, fmt: str = "markdown") -> str:
    """Return the report as text.

    Args:
        report: from :func:`build_report`.
        fmt: ``"markdown"`` (three tables), ``"csv"`` (one row per system ×
            benchmark: system, benchmark, resolved, total, rate, then the
            system's mean_steps, tokens, cost) or ``"json"`` (:func:`to_json`).
            ``"table"`` is drawn by :func:`print_report`.

    Raises:
        ReportError: unknown format.
    """
    if fmt == "markdown":
        return "\n\n".join(markdown_table(*table) for table in _tables(report)) + "\n"
    if fmt == "json":
        return json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(["system", "benchmark", "resolved", "total", "rate", "mean_steps",
                         "tokens", "cost"])
        for (system, bench), cell in report.success.items():
            s = report.stats[system]
            writer.writerow([system, bench, cell.resolved, cell.total, f"{cell.rate:.4f}",
                             s["mean_steps"], int(s["tokens"]), s["cost"]])
        return buf.getvalue()
    raise ReportError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def print_report(report: Report, console: Any) -> None:
    """Draw the three tables with rich on ``console``."""
    from rich.table import Table
    from rich.text import Text

    for title, header, rows in _tables(report):
        table = Table(title=title)
        for i, column in enumerate(header):
            table.add_column(column, justify="left" if i == 0 else "right", no_wrap=i == 0)
        for row in rows:  # names from run folders: text, never markup
            table.add_row(*(Text(one_line(str(cell))) for cell in row))
        console.print(table)


def plot(report: Report, width: int | None = None, height: int | None = None) -> str:
    """Return a terminal bar chart (plotext) of the success rates in %, one group of
    bars per benchmark, one bar per system."""
    import plotext as plt

    plt.clear_figure()
    plt.theme("clear")
    if width and height:
        plt.plotsize(width, height)
    series = [[round(100 * report.success.get((s, b), Cell()).rate, 1) for b in report.benchmarks]
              for s in report.systems]
    if len(series) == 1:
        plt.bar(report.benchmarks, series[0], label=report.systems[0])
    else:
        plt.multiple_bar(report.benchmarks, series, labels=report.systems)
    plt.ylim(0, 100)
    plt.title("success rate %")
    return plt.uncolorize(plt.build())  # the clear theme still writes reset codes


def plot_png(report: Report, path: str | Path) -> Path:
    """Write the success rates (%) as a PNG bar chart: one group of bars per
    benchmark, one bar per system (matplotlib: ``pip install 'dgym-tui[plot]'``).

    Returns:
        ``path`` as a Path.

    Raises:
        ReportError: matplotlib is not installed, or the file cannot be written.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ReportError("--plot FILE.png needs matplotlib: pip install 'dgym-tui[plot]'") \
            from None
    path = Path(path)
    figure = Figure(figsize=(max(4.0, 1.5 * len(report.benchmarks) * len(report.systems)), 4),
                    layout="constrained")
    axes = figure.add_subplot()
    width = 0.8 / len(report.systems)
    for i, system in enumerate(report.systems):
        rates = [100 * report.success.get((system, b), Cell()).rate for b in report.benchmarks]
        axes.bar([x + i * width for x in range(len(report.benchmarks))], rates, width,
                 label=system)
    axes.set_xticks([x + width * (len(report.systems) - 1) / 2
                     for x in range(len(report.benchmarks))], report.benchmarks)
    axes.set_ylim(0, 100)
    axes.set_ylabel("resolved %")
    axes.set_title("success rate %")
    figure.legend(loc="outside lower center", ncols=min(3, len(report.systems)))
    try:
        figure.savefig(path, format="png")
    except OSError as exc:
        raise ReportError(f"{path}: cannot write the plot ({exc.strerror or exc})") from None
    return path
