"""A structured test report that code under test cannot fake by exiting early.

Each eval runs the entrypoint with a small pytest plugin of ours loaded
through ``PYTEST_PLUGINS``. The plugin file is written once per episode by
the host (:func:`install`) into the terminal's ``plugin_dir``, a fresh folder
outside the working copy that commands may read but never write (sandboxed
terminals show it read-only). The plugin appends JSON lines to a report file
in the terminal's private ``scratch`` folder: ``start`` when pytest loads it
(before any conftest or test module is imported), one ``failure`` per failed
test or collection error (test id, traceback frames), one ``status`` per test
report (pytest's category: passed, failed, error, skipped, xfailed, xpassed),
and ``end`` with pytest's exit status when the session finishes. A pytest run
cut short (``os._exit(0)`` in the code under test, a crash, a kill) leaves a
``start`` without an ``end``: :func:`dgym_tui.core.evaluation.summary.summarize`
then counts the run as failed, whatever the exit code says.

The scratch folder is writable by the sandbox, so the host reads the report
back through :class:`dgym_tui.core.fs.safefs.SafeTree` (no link followed, only
a regular file opened, size capped), and whatever it finds there (a link, a
FIFO, a huge or malformed file) makes a failed eval with a one-line reason
(:attr:`PytestReport.problem`), never an exception.

The plugin takes the report path out of the environment when it loads, so
the tests and any pytest they start themselves do not see it or report.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
from dataclasses import dataclass, field

from dgym_tui.core.fs.safefs import SafeTree, SpecialFileError, read_fd

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
_fd = [-1]  # a raw descriptor: no file object, so no ResourceWarning at exit
_config = None
_failures = [0]


def _write(record):
    if _path is None:
        return
    if _fd[0] < 0:
        _fd[0] = os.open(_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                         | getattr(os, "O_CLOEXEC", 0), 0o600)
    data = (json.dumps(record) + "\\n").encode("utf-8")
    while data:
        data = data[os.write(_fd[0], data):]


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
    if _fd[0] >= 0:
        os.close(_fd[0])
        _fd[0] = -1
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
    """Everything the plugin wrote during one eval: one record per pytest session.

    Attributes:
        sessions: the sessions, in the order they started.
        problem: one line saying why the report could not be trusted (not a
            regular file, too big, a line no plugin writes); "" when none. A
            report with a problem counts as a failed eval.
    """

    sessions: list[SessionRecord] = field(default_factory=list)
    problem: str = ""


#: Largest report read back, in bytes (a run of 10,000 tests writes about 0.5 MB).
MAX_REPORT_BYTES = 4 * 1024 * 1024


def install(terminal) -> bool:
    """Write the plugin into ``terminal.plugin_dir``, once, after the terminal started.

    The folder is the host's own (made by the terminal, outside every tree the
    sandbox writes, shown read-only to the commands): the file is created
    through the folder's descriptor (temporary file + rename, mode 0644).
    A terminal without a plugin folder gets nothing (its evals run without a
    report).

    Returns:
        True when the plugin is in place.

    Raises:
        OSError: the folder cannot be written.
    """
    folder = getattr(terminal, "plugin_dir", "")
    if not folder:
        return False
    tree = SafeTree(folder)
    try:
        if tree.kind(PLUGIN + ".py", follow=False) != "file":
            tree.write_bytes(PLUGIN + ".py", PLUGIN_SOURCE.encode("utf-8"), mode=0o644,
                             mkdirs=False)
    finally:
        tree.close()
    return True


#: the terminal width pytest sees in an eval (its separator lines are this wide)
EVAL_COLUMNS = 80


def prepare(terminal, entrypoint: str) -> tuple[str, str | None]:
    """Return ``(command, host report path)`` for one eval of ``entrypoint`` on ``terminal``.

    The command exports what loads the plugin from ``terminal.plugin_dir``
    (see :func:`install`), names a fresh report file in the terminal's scratch
    folder, and sets ``COLUMNS`` (:data:`EVAL_COLUMNS`). Terminals without a
    scratch folder or a plugin folder run the entrypoint as it is and get no
    report (``None``).

    Raises:
        OSError: the scratch folder cannot be opened (it is the host's own folder).
    """
    scratch = getattr(terminal, "scratch", "")
    plugin_dir = getattr(terminal, "plugin_dir", "")
    if not scratch or not plugin_dir:
        return entrypoint, None
    name = f"report-{next(_counter)}.jsonl"
    _remove(scratch, name)
    inside = terminal.scratch_path()
    plugin_inside = terminal.plugin_path()
    # COLUMNS: pytest draws its separator lines as wide as the terminal; 80 columns
    # keep them short in the observation (fewer tokens than the terminals' 200)
    command = (f"export COLUMNS={EVAL_COLUMNS} "
               f"{REPORT_VARIABLE}={shlex.quote(inside + '/' + name)} "
               f"PYTEST_PLUGINS=\"{PLUGIN}${{PYTEST_PLUGINS:+,$PYTEST_PLUGINS}}\" "
               f"PYTHONPATH={shlex.quote(plugin_inside)}\"${{PYTHONPATH:+:$PYTHONPATH}}\"\n"
               f"{entrypoint}")
    return command, os.path.join(scratch, name)


def forget(terminal, path: str | None) -> None:
    """Delete the report file ``path`` (from :func:`prepare`) again before its eval runs:
    a command run since it was prepared may have planted one.

    Raises:
        OSError: the scratch folder cannot be opened (it is the host's own folder).
    """
    scratch = getattr(terminal, "scratch", "")
    if path and scratch and os.path.dirname(path) == scratch:
        _remove(scratch, os.path.basename(path))


def _remove(scratch: str, name: str) -> None:
    tree = SafeTree(scratch)
    try:
        with contextlib.suppress(OSError):  # planted by the sandbox: gone or read safely later
            tree.unlink(name)
    finally:
        tree.close()


def read(path: str | None, max_bytes: int = MAX_REPORT_BYTES) -> PytestReport | None:
    """Read the report file the plugin wrote; None when there is none (pytest never loaded it).

    ``path`` is ``scratch/name`` as :func:`prepare` returned it: the file is
    opened from the scratch folder's descriptor without following a link, and
    only a regular file is read. The file is deleted after reading. Never raises.

    Returns:
        The report; its ``problem`` says why it counts as failed when the file
        is a link, a FIFO or other special file, a folder, larger than
        ``max_bytes``, unreadable, or holds a line nested too deeply for JSON.
        None when there is no such file. Lines that are not JSON objects
        (a line cut by a kill) are skipped.
    """
    if not path:
        return None
    folder, name = os.path.split(path)
    try:
        tree = SafeTree(folder)
    except OSError as exc:
        return PytestReport(problem=f"the test report's folder cannot be opened "
                                    f"({exc.strerror or exc}); counted as failed")
    try:
        return _read_from(tree, name, max_bytes)
    except Exception as exc:  # noqa: BLE001  whatever the sandbox planted: a failed eval
        return PytestReport(problem=f"the test report cannot be read ({type(exc).__name__}); "
                                    "counted as failed")
    finally:
        with contextlib.suppress(OSError):
            tree.unlink(name)
        tree.close()


def _read_from(tree: SafeTree, name: str, max_bytes: int) -> PytestReport | None:
    """Read report ``name`` of ``tree`` (see :func:`read`)."""
    try:
        fd, st, _ = tree.open_file(name, follow=False)
    except FileNotFoundError:
        return None
    except SpecialFileError as exc:
        return PytestReport(problem=f"the test report is a {exc.kind}, not a regular file "
                                    "(made by the code under test); counted as failed")
    except IsADirectoryError:
        return PytestReport(problem="the test report is a folder, not a regular file "
                                    "(made by the code under test); counted as failed")
    except OSError as exc:
        return PytestReport(problem=f"the test report cannot be opened ({exc.strerror or exc}); "
                                    "counted as failed")
    try:
        if st.st_size > max_bytes:
            return PytestReport(problem=f"the test report is larger than {max_bytes:,} bytes "
                                        f"({st.st_size:,}); counted as failed")
        data = read_fd(fd, st.st_size, max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew between fstat and read
        return PytestReport(problem=f"the test report is larger than {max_bytes:,} bytes; "
                                    "counted as failed")
    return parse(data)


def parse(data: bytes) -> PytestReport | None:
    """Parse the plugin's JSON lines (see :func:`read`); None when no session started."""
    report = PytestReport()
    for raw in data.splitlines():
        try:
            record = json.loads(raw)
        except RecursionError:
            return PytestReport(problem="the test report holds a line nested too deeply "
                                        "(no pytest writes it); counted as failed")
        except ValueError:  # not JSON, or not UTF-8
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
