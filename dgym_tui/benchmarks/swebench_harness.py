"""The official SWE-bench harness's test commands, log parsers and resolution rule.

Everything here comes from the ``swebench`` package (the optional extra
``pip install 'dgym-tui[swebench]'``, 4.x), imported lazily: importing it
costs several seconds and ~180 MB (it loads ``datasets``, ``pandas`` and
``modal``), so only loading or grading a SWE-bench task pays for it.

Two instance formats are understood:

- **classic** (SWE-bench, Lite, Verified): ``repo`` and ``version`` select the
  harness's specs (``MAP_REPO_VERSION_TO_SPECS``): its ``test_cmd`` plus the
  test directives it derives from ``test_patch`` (``get_test_directives``:
  test files, or Django's dotted modules), its ``eval_commands`` (Django's
  locale exports, ...), and the repository's log parser (``MAP_REPO_TO_PARSER``).
- **new** (the swebench 5.x datasets): ``eval_script`` (a bash script whose
  test commands sit between the harness's start and end markers),
  ``log_parser`` (a parser function's name) and ``eval_type``.

Like the harness, the test files are run whole and the log is parsed
afterwards: test ids are never passed on the command line, so ids the records
hold cut off at a space (``test_x[assert``) match what the parser reads.
Resolved means every FAIL_TO_PASS and every PASS_TO_PASS test passes.

Repositories the harness does not know run ``pytest -rA <test files>`` and
are parsed with its pytest parser.
"""

from __future__ import annotations

import importlib
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from dgym_tui.core.types import EvalSummary

#: The harness's markers around the test output in its eval scripts.
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
#: Conda activation of the harness images' "testbed" environment (POSIX sh).
CONDA_ACTIVATE = (". /opt/miniconda3/bin/activate", "conda activate testbed")
#: Fallback for repositories the harness does not know.
DEFAULT_TEST_CMD = "pytest -rA"
DEFAULT_PARSER = "parse_log_pytest"
#: Largest test log the grader reads back from the container, in bytes.
MAX_LOG_BYTES = 64 * 1024 * 1024

_PARSER_MODULES = ("python", "javascript", "java", "go", "rust", "ruby", "php", "c")


class HarnessMissingError(ImportError, ValueError):
    """The ``swebench`` package is not installed (one line says how to install it).

    A ValueError too, so command lines report it as a user error."""


def swebench_module(name: str) -> Any:
    """Import ``swebench.<name>`` from the official package.

    Raises:
        HarnessMissingError: the package is not installed.
    """
    try:
        return importlib.import_module(f"swebench.{name}")
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "swebench":
            raise HarnessMissingError(
                "SWE-bench tasks need the official harness package: "
                "pip install 'dgym-tui[swebench]'") from None
        raise


@dataclass(frozen=True)
class HarnessSpec:
    """How the harness tests one instance.

    Attributes:
        repo: ``owner/name``.
        version: the instance's version key.
        test_commands: the harness's test command lines, directives included,
            run in the repository root one after the other.
        env: shell lines every test run starts with (conda activation,
            ``export`` lines).
        setup: shell lines run once when an episode starts (e.g. Django's
            ``locale-gen``).
        log_parser: name of the harness's parser function.
        fail_only: the harness grades this repository by failures only.
        known: the harness's tables define the instance (its images have
            the conda environment); False for new-format records and the
            pytest fallback.
        directives: the test directives appended to the last test command
            (test files, Django's dotted modules); empty for new-format records.
        parse: a log parser ``parse(log) -> {test id: status}`` used instead of
            the harness's parser named ``log_parser`` (e.g. a SWE-smith profile's).
    """

    repo: str
    version: str
    test_commands: tuple[str, ...]
    env: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    log_parser: str = DEFAULT_PARSER
    fail_only: bool = False
    known: bool = True
    directives: tuple[str, ...] = ()
    parse: Callable[[str], dict[str, str]] | None = field(default=None, compare=False)

    def env_lines(self, conda: bool = True) -> list[str]:
        """The shell lines every test run starts with.

        Args:
            conda: activate the harness images' conda environment first
                (for instances the harness knows, when the image has it).
        """
        return [*(CONDA_ACTIVATE if conda and self.known else ()), *self.env]

    def command(self, conda: bool = True, tests: str | None = None) -> str:
        """The test run as one shell command line: :meth:`env_lines`, then the tests.

        Args:
            conda: see :meth:`env_lines`.
            tests: replaces the harness's test commands (e.g. a user's template).
        """
        return " && ".join([*self.env_lines(conda), tests or "; ".join(self.test_commands)])


def harness_spec(instance: dict[str, Any]) -> HarnessSpec:
    """Return how the harness tests ``instance`` (either format; see the module docstring).

    Raises:
        HarnessMissingError: ``swebench`` is not installed.
    """
    if instance.get("eval_script"):
        return _spec_from_eval_script(instance)
    constants = swebench_module("harness.constants")
    directives = swebench_module("harness.test_spec.python").get_test_directives(instance)
    repo, version = str(instance.get("repo", "")), str(instance.get("version", ""))
    specs = constants.MAP_REPO_VERSION_TO_SPECS.get(repo, {}).get(version)
    parsers = swebench_module("harness.log_parsers").MAP_REPO_TO_PARSER
    if specs is None or repo not in parsers:
        return HarnessSpec(repo, version, (_join(DEFAULT_TEST_CMD, directives),), known=False,
                           directives=tuple(directives))
    test_cmd = specs["test_cmd"]
    commands = [test_cmd] if isinstance(test_cmd, str) else list(test_cmd)
    commands[-1] = _join(commands[-1], directives)
    lines = [str(line) for line in specs.get("eval_commands", [])]
    return HarnessSpec(
        repo, version, tuple(commands),
        env=tuple(line for line in lines if line.startswith("export ")),
        setup=tuple(line for line in lines if not line.startswith("export ")),
        log_parser=parsers[repo].__name__,
        fail_only=repo in constants.FAIL_ONLY_REPOS, directives=tuple(directives))


def _join(command: str, directives: list[str]) -> str:
    return " ".join([command, *(shlex.quote(d) for d in directives)])


_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
#: Lines of a new-format eval script that prepare the environment of the test run.
_ENV_PREFIXES = ("export ", "conda activate ")
#: Lines of a new-format eval script we leave out: our reset and entrypoint do their work.
_SKIP_PREFIXES = ("git ", "cd ", "set ", ": ", "echo ", "#", "python -m pip install",
                  "pip install", "python setup.py")


def _spec_from_eval_script(instance: dict[str, Any]) -> HarnessSpec:
    """A new-format record: the test commands between the markers, the setup before them."""
    before, tests, inside, heredoc = [], [], None, None
    for raw in str(instance["eval_script"]).splitlines():
        line = raw.strip()
        if heredoc is not None:  # the body of a heredoc (e.g. the test patch): skipped
            heredoc = None if line == heredoc else heredoc
            continue
        match = _HEREDOC.search(line)
        if match:
            heredoc = match.group(1)
            continue
        if START_TEST_OUTPUT in line:
            inside = True
        elif END_TEST_OUTPUT in line:
            inside = False
        elif line and inside:
            tests.append(line)
        elif line and inside is None:
            before.append(line)
    env, setup = [], []
    for line in before:
        if line.startswith("source "):
            env.append(". " + line[len("source "):])
        elif line.startswith(_ENV_PREFIXES):
            env.append(line)
        elif not line.startswith(_SKIP_PREFIXES):
            setup.append(line)
    eval_type = str(instance.get("eval_type", "")).lower()
    return HarnessSpec(str(instance.get("repo", "")), str(instance.get("version", "")),
                       tuple(tests), env=tuple(env), setup=tuple(setup),
                       log_parser=str(instance.get("log_parser") or DEFAULT_PARSER),
                       fail_only="fail_only" in eval_type or "fail-only" in eval_type,
                       known=False)


def parser_function(name: str) -> Any:
    """Return the harness's log parser called ``name`` (e.g. ``"parse_log_django"``).

    Raises:
        HarnessMissingError: ``swebench`` is not installed.
        ValueError: no parser has that name.
    """
    for module in _PARSER_MODULES:
        try:
            parsers = swebench_module(f"harness.log_parsers.{module}")
        except ModuleNotFoundError:
            continue
        function = getattr(parsers, name, None)
        if callable(function):
            return function
    raise ValueError(f"the swebench package has no log parser {name!r}; "
                     "check the record's log_parser field or upgrade swebench")


def parse_log(log: str, spec: HarnessSpec, instance: dict[str, Any]) -> dict[str, str]:
    """Return ``{test id: status}`` (``"PASSED"``, ``"FAILED"``, ...) read from a test log.

    Like the harness, the part between its markers is parsed when the log has
    them; when that part gives nothing, the whole log is.
    """
    if spec.parse is not None:
        return _parse_part(log, lambda text: spec.parse(text))
    function = parser_function(spec.log_parser)
    test_spec = SimpleNamespace(instance_id=instance.get("instance_id"), repo=spec.repo,
                                version=spec.version,
                                FAIL_TO_PASS=instance.get("FAIL_TO_PASS", []),
                                PASS_TO_PASS=instance.get("PASS_TO_PASS", []))
    return _parse_part(log, lambda text: function(text, test_spec))


def _parse_part(log: str, parse: Callable[[str], dict[str, str]]) -> dict[str, str]:
    """Parse the part between the markers when the log has them and it gives something,
    else the whole log."""
    if START_TEST_OUTPUT in log and END_TEST_OUTPUT in log:
        status = parse(log.split(START_TEST_OUTPUT, 1)[1].split(END_TEST_OUTPUT, 1)[0])
        if status:
            return status
    return parse(log)


@dataclass(frozen=True)
class Grade:
    """The harness's verdict on one test log.

    Attributes:
        passed: FAIL_TO_PASS and PASS_TO_PASS tests that pass, in record order.
        failed: those that fail, error, or are missing from the log.
        resolved: the harness's rule: every FAIL_TO_PASS and PASS_TO_PASS test passes.
    """

    passed: tuple[str, ...]
    failed: tuple[str, ...]
    resolved: bool


def grade(status: dict[str, str], fail_to_pass: list[str], pass_to_pass: list[str],
          fail_only: bool = False) -> Grade:
    """Grade a status map with the harness's own report and resolution functions.

    Raises:
        HarnessMissingError: ``swebench`` is not installed.
    """
    grading = swebench_module("harness.grading")
    constants = swebench_module("harness.constants")
    eval_type = constants.EvalType.FAIL_ONLY if fail_only else constants.EvalType.PASS_AND_FAIL
    report = grading.get_eval_tests_report(
        status, {constants.FAIL_TO_PASS: list(fail_to_pass),
                 constants.PASS_TO_PASS: list(pass_to_pass)}, eval_type=eval_type)
    passed, failed = [], []
    for key in (constants.FAIL_TO_PASS, constants.PASS_TO_PASS):
        passed += report[key]["success"]
        failed += report[key]["failure"]
    resolved = grading.get_resolution_status(report) == constants.ResolvedStatus.FULL.value
    return Grade(tuple(passed), tuple(failed), resolved)


def full_log(result: Any, terminal: Any, log_path: str) -> str:
    """The whole test log of an eval: ``log_path`` read back through ``terminal`` (up to
    :data:`MAX_LOG_BYTES`), else the run's own output (``result.output``, maybe cut) when
    there is no log path or terminal, or the log cannot be read."""
    if log_path and terminal is not None:
        read = terminal.run(f"cat {shlex.quote(log_path)}", timeout=120, max_output=MAX_LOG_BYTES)
        if read.exit_code == 0:
            return read.output
    return result.output


@dataclass(frozen=True)
class HarnessGrader:
    """Scores an eval like the harness: parse the full test log, count F2P + P2P.

    The entrypoint writes the whole test log to ``log_path`` in the container
    (its output, which the agent sees, may be cut); the grader reads it back
    through the terminal.

    Attributes:
        spec: the instance's :class:`HarnessSpec`.
        instance: the fields the parsers may read (``instance_id``,
            ``FAIL_TO_PASS``, ``PASS_TO_PASS``).
        log_path: the test log's path in the container; empty: grade the output.
    """

    spec: HarnessSpec
    instance: dict[str, Any]
    log_path: str = ""

    def __call__(self, result: Any, terminal: Any) -> EvalSummary:
        """Return the summary of one entrypoint run (``RunResult``; any ``Terminal``).

        ``passed`` / ``failed`` count the record's FAIL_TO_PASS and PASS_TO_PASS
        tests, so the score is theirs and ``resolved`` follows the harness's rule.
        """
        verdict = self.grade_log(full_log(result, terminal, self.log_path))
        return EvalSummary(passed=len(verdict.passed), failed=len(verdict.failed),
                           exit_code=result.exit_code, timed_out=result.timed_out)

    def grade_log(self, log: str) -> Grade:
        """Grade a test log text (see :func:`grade`)."""
        status = parse_log(log, self.spec, self.instance)
        return grade(status, self.instance.get("FAIL_TO_PASS", []),
                     self.instance.get("PASS_TO_PASS", []), self.spec.fail_only)


__all__ = [
    "END_TEST_OUTPUT",
    "START_TEST_OUTPUT",
    "Grade",
    "HarnessGrader",
    "HarnessMissingError",
    "HarnessSpec",
    "grade",
    "harness_spec",
    "parse_log",
    "full_log",
    "parser_function",
]
