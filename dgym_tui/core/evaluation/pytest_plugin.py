"""A structured test report that code under test cannot fake by exiting early.

Each eval runs the entrypoint with a small pytest plugin of ours loaded
through ``PYTEST_PLUGINS`` (the plugin file lives in the terminal's private
``scratch`` folder, outside the working copy). The plugin appends JSON lines
to a report file in that folder: ``start`` when pytest loads it (before any
conftest or test module is imported), one ``failure`` per failed test or
collection error (test id, traceback frames), one ``status`` per test report
(pytest's category: passed, failed, error, skipped, xfailed, xpassed), and
``end`` with pytest's exit status when the session finishes. A pytest run cut short
(``os._exit(0)`` in the code under test, a crash, a kill) leaves a ``start``
without an ``end``: :func:`dgym_tui.core.evaluation.summary.summarize` then counts
the run as failed, whatever the exit code says.

The plugin takes the report path out of the environment when it loads, so
the tests and any pytest they start themselves do not see it or report.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import stat
from dataclasses import dataclass, field

#: Module name of the plugin (also its file name, plus ``.py``).
PLUGIN = "dgym_pytest_report"
#: Environment variable holding the report path for the plugin.
REPORT_VARIABLE = "DGYM_PYTEST_REPORT"

#: Caps keeping a report small whatever the tests do.
MAX_FAILURES = 50
MAX_FRAMES = 40

# The plugin runs inside the tested interpreter (any Python 3 with pytest):
# no f-strings beyond 3.6, no annotations, only the standard library and pytest.
PLUGIN_SOURCE = '''\
"""dgym-tui: report pytest's results as JSON lines (see dgym_tui.core.evaluation.pytest_plugin).

PYTEST_DONT_REWRITE (no assertion rewriting: nothing to compile on every run)
"""
import json
import os

import pytest

_path = os.environ.pop("%(var)s", None)
_out = None
_config = None
_failures = [0]


def _write(record):
    global _out
    if _path is None:
        return
    if _out is None:
        _out = open(_path, "a", encoding="utf-8")
    _out.write(json.dumps(record) + "\\n")
    _out.flush()


_write({"event": "start", "pid": os.getpid()})


def _count(category):
    if category:  # written at once: counts survive a run cut short
        _write({"event": "status", "category": category})


def _message(report):
    crash = getattr(report.longrepr, "reprcrash", None)
    text = getattr(crash, "message", None) or str(report.longrepr or "")
    lines = [line for line in text.splitlines() if line.strip()]
    return (lines[0] if lines else "")[:300]


def _failure(report, when):
    if _failures[0] >= %(max_failures)d:
        return
    _failures[0] += 1
    location = getattr(report, "location", None)
    _write({"event": "failure", "test_id": report.nodeid, "when": when,
            "message": _message(report),
            "frames": report.__dict__.get("dgym_frames", []),
            "location": [location[0], location[1] + 1] if location and location[1] is not None
            else None})


def pytest_configure(config):
    global _config
    _config = config


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.excinfo is not None:
        frames = []
        for entry in call.excinfo.traceback:
            frames.append([str(entry.path), entry.lineno + 1])
        report.__dict__["dgym_frames"] = frames[-%(max_frames)d:]


def pytest_runtest_logreport(report):
    if _config is not None:
        status = _config.hook.pytest_report_teststatus(report=report, config=_config)
        _count(status[0] if status else "")
    if report.failed:
        _failure(report, report.when)


def pytest_collectreport(report):
    if report.failed:
        _count("error")
        _failure(report, "collect")
    elif report.skipped:
        _count("skipped")


def pytest_sessionfinish(session, exitstatus):
    if getattr(session.config, "workerinput", None) is not None:
        return  # an xdist worker: the controller reports
    _write({"event": "end", "exitstatus": int(exitstatus)})
''' % {"var": REPORT_VARIABLE, "max_failures": MAX_FAILURES,  # noqa: UP031  the source has braces
       "max_frames": MAX_FRAMES}

_counter = itertools.count(1)


@dataclass
class SessionRecord:
    """One pytest session of the entrypoint, as the plugin reported it.

    Attributes:
        finished: the session wrote its ``end`` record.
        counts: pytest's categories (``passed``, ``failed``, ``error``,
            ``skipped``, ``xfailed``, ``xpassed``) -> number of reports.
        exitstatus: pytest's exit status (None when unfinished).
        failures: ``failure`` records: ``test_id``, ``when``, ``message``,
            ``frames`` (``[path, 1-based line]`` as the tests saw them), ``location``.
    """

    finished: bool = False
    counts: dict[str, int] = field(default_factory=dict)
    exitstatus: int | None = None
    failures: list[dict] = field(default_factory=list)


@dataclass
class PytestReport:
    """Everything the plugin wrote during one eval: one record per pytest session."""

    sessions: list[SessionRecord] = field(default_factory=list)


#: the terminal width pytest sees in an eval (its separator lines are this wide)
EVAL_COLUMNS = 80


def prepare(terminal, entrypoint: str) -> tuple[str, str | None]:
    """Return ``(command, host report path)`` for one eval of ``entrypoint`` on ``terminal``.

    The plugin file is written into the terminal's scratch folder (once) and
    the command exports what loads it, and ``COLUMNS`` (:data:`EVAL_COLUMNS`).
    Terminals without a scratch folder (``scratch`` empty, e.g. a custom Terminal) run the entrypoint as it is
    and get no report (``None``).
    """
    scratch = getattr(terminal, "scratch", "")
    if not scratch:
        return entrypoint, None
    plugin_dir = os.path.join(scratch, "plugin")
    plugin_file = os.path.join(plugin_dir, PLUGIN + ".py")
    if not os.path.exists(plugin_file):
        os.makedirs(plugin_dir, exist_ok=True)
        with open(plugin_file, "w", encoding="utf-8") as f:
            f.write(PLUGIN_SOURCE)
        os.chmod(plugin_dir, 0o755)
        os.chmod(plugin_file, 0o644)
    name = f"report-{next(_counter)}.jsonl"
    host_report = os.path.join(scratch, name)
    if os.path.lexists(host_report):
        os.unlink(host_report)
    inside = terminal.scratch_path()
    # COLUMNS: pytest draws its separator lines as wide as the terminal; 80 columns
    # keep them short in the observation (fewer tokens than the terminals' 200)
    command = (f"export COLUMNS={EVAL_COLUMNS} "
               f"{REPORT_VARIABLE}={shlex.quote(inside + '/' + name)} "
               f"PYTEST_PLUGINS=\"{PLUGIN}${{PYTEST_PLUGINS:+,$PYTEST_PLUGINS}}\" "
               f"PYTHONPATH={shlex.quote(inside + '/plugin')}\"${{PYTHONPATH:+:$PYTHONPATH}}\"\n"
               f"{entrypoint}")
    return command, host_report


def read(path: str | None, max_bytes: int = 4 * 1024 * 1024) -> PytestReport | None:
    """Read the report file the plugin wrote; None when there is none (pytest never loaded it).

    Lines that are not JSON objects are skipped; at most ``max_bytes`` are read.
    The file is deleted after reading.
    """
    if not path:
        return None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            # Only a regular file counts (not a FIFO or device planted by the tests).
            data = f.read(max_bytes) if stat.S_ISREG(os.fstat(f.fileno()).st_mode) else b""
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    report = PytestReport()
    for raw in data.splitlines():
        try:
            record = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        event = record.get("event")
        if event == "start":
            report.sessions.append(SessionRecord())
        elif not report.sessions:
            continue
        elif event == "status":
            counts = report.sessions[-1].counts
            category = str(record.get("category"))
            counts[category] = counts.get(category, 0) + 1
        elif event == "failure":
            report.sessions[-1].failures.append(record)
        elif event == "end":
            current = report.sessions[-1]
            current.finished = True
            status = record.get("exitstatus")
            current.exitstatus = status if isinstance(status, int) else None
    return report if report.sessions else None
