"""dgym report over two real run folders of the tiny benchmark (tables, csv, json, plot)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from rich.console import Console
from scripted import ScriptedPolicy, small_tools, tiny_config, tiny_policy

from dgym_tui.cli.main import main
from dgym_tui.core.types import ToolCall
from dgym_tui.runs.report import ReportError, build_report, load_episodes, render
from dgym_tui.runs.runner import run_tasks


def _add_only(task):
    """Fixes add; on mul it only submits (not resolved)."""
    if task.name == "add":
        return tiny_policy(task)
    return ScriptedPolicy([ToolCall("submit", {})])


@pytest.fixture
def two_runs(tmp_path, tiny, monkeypatch):
    small_tools(monkeypatch)
    first, second = tmp_path / "first", tmp_path / "second"
    run_tasks(tiny_config(tmp_path, tiny), output_dir=first, policy_factory=tiny_policy,
              console=Console(file=io.StringIO()), progress=False)
    run_tasks(tiny_config(tmp_path, tiny, "llm=other"), output_dir=second, policy_factory=_add_only,
              console=Console(file=io.StringIO()), progress=False)
    return first, second


def test_report_counts_each_system_per_benchmark(two_runs):
    report = build_report(load_episodes(list(two_runs)))
    assert report.systems == ["solution × -", "solution × other"]
    assert report.benchmarks == ["tiny"]
    assert str(report.success[("solution × -", "tiny")]) == "2/2 (100%)"
    assert str(report.success[("solution × other", "tiny")]) == "1/2 (50%)"
    assert report.tasks[("tiny", "mul")] == {"solution × -": True, "solution × other": False}
    assert report.stats["solution × -"]["mean_steps"] == 3.0
    assert report.stats["solution × other"]["mean_steps"] == 2.0  # 3 steps on add, 1 on mul
    assert report.stats["solution × -"]["tokens"] == 720  # ScriptedPolicy: 100 + 20 per step
    markdown = render(report, "markdown")
    assert "| solution × other | 1/2 (50%) |" in markdown
    assert "| tiny/mul | yes | no |" in markdown


def test_dgym_report_formats_and_plot(two_runs, capsys):
    first, second = map(str, two_runs)
    assert main(["report", first, second, "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["system"], r["resolved"], r["total"]) for r in rows] == \
        [("solution × -", "2", "2"), ("solution × other", "1", "2")]
    assert main(["report", first, second, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["tasks"]["tiny/add"] == {"solution × -": True, "solution × other": True}
    assert main(["report", first, second, "--plot"]) == 0
    out = capsys.readouterr().out
    assert "success rate (resolved/total)" in out and "2/2 (100%)" in out
    assert "success rate %" in out  # the plotext chart's title


def test_dgym_report_plot_writes_a_png(two_runs, tmp_path, capsys):
    from PIL import Image  # matplotlib's own dependency

    png = tmp_path / "rates.png"
    assert main(["report", *map(str, two_runs), "--format", "csv", "--plot", str(png)]) == 0
    assert f"wrote {png}" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(png) as image:
        image = image.convert("RGB")
        colours = {colour for _, colour in image.getcolors(maxcolors=1 << 20)}
    assert image.size[0] >= 300 and image.size[1] >= 200
    assert len(colours) > 10  # bars, axes and text drawn, not a blank page
    # the two systems' bars (100% and 50%): matplotlib's first two colours are there
    assert {(31, 119, 180), (255, 127, 14)} <= colours
    with pytest.raises(SystemExit):
        main(["report", str(two_runs[0]), "--plot", str(tmp_path / "rates.txt")])
    assert "give a FILE.png" in capsys.readouterr().err


def test_a_folder_without_results_is_one_line(tmp_path, capsys):
    with pytest.raises(ReportError, match="no task results"):
        load_episodes([tmp_path])
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err
