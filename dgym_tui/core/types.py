"""Plain data types shared by the environment, the turn loop and the front ends.

Nothing here imports a UI or an LLM library. Every type converts to and from
JSON-ready dicts (``to_dict`` / ``from_dict``) because trajectories store them.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

#: uids (and gids, the same number) a root-started sandbox draws its own from
#: (:func:`dgym_tui.core.terminals.identity.sandbox_ids`). A working copy handed to one of
#: them is still dgym's: the stale sweep (``workspace.remove_stale_folders``) deletes it.
SANDBOX_UID_RANGE = range(1_500_000_000, 1_600_000_000)

#: Task text used when none is given (``RepoEnv(task=None)``; the app corrects it on screen
#: when every test passes at the start).
DEFAULT_TASK = ("The entrypoint's tests fail. Find the bug in the repository, fix it, and "
                "call submit when the tests pass.")


def new_call_id() -> str:
    """Return a fresh tool-call id of the form ``call_<12 hex digits>``."""
    return f"call_{uuid.uuid4().hex[:12]}"


@dataclass
class ToolCall:
    """One action: the name of a tool and its arguments.

    Attributes:
        name: tool name as registered (``"pdb"``, ``"view"``, ...).
        arguments: keyword arguments for the tool, JSON-ready. A JSON string is
            accepted too; the environment decodes it before validation.
        id: the tool-call id; LLM providers send one, otherwise one is made.
    """

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str = field(default_factory=new_call_id)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"id": str, "name": str, "arguments": dict | str}``."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolCall:
        """Build from the dict made by :meth:`to_dict`; a missing id gets a new one."""
        return cls(
            name=data["name"],
            arguments=data.get("arguments") or {},
            id=data.get("id") or new_call_id(),
        )


def decode_arguments(arguments: dict[str, Any] | str | None) -> dict[str, Any]:
    """A tool call's arguments as a dict: a dict as is, a JSON object string decoded;
    None, ``""`` and ``"null"`` are no arguments.

    Raises:
        ValueError: the text is not valid JSON, or not a JSON object; the message
            completes "the arguments of TOOL ..." (e.g. ``"must be a JSON object, not list"``).
    """
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as exc:
            raise ValueError(f"are not valid JSON ({exc.msg} at position {exc.pos}); "
                             "give a JSON object") from None
        if arguments is None:
            return {}
    if not isinstance(arguments, dict):
        raise ValueError(f"must be a JSON object, not {type(arguments).__name__}")
    return arguments


_EXAMPLE_VALUES: dict[str | None, Any] = {"integer": 1, "number": 1, "boolean": True, "array": [],
                                   "object": {}}


def example_arguments(parameters: dict[str, Any], optional: bool = False) -> dict[str, Any]:
    """Placeholder arguments for a tool's JSON-schema ``parameters``, for examples in
    messages and help: ``1`` for a number, ``True``, ``[]``, ``{}``, ``"<name>"`` for
    text (a type list such as ``["integer", "null"]`` counts as its first non-null type).

    Args:
        parameters: the tool's JSON schema (``{"properties": ..., "required": [...]}``).
        optional: every property, in the order of ``properties``; otherwise the
            required ones only, in the order of ``required``.

    Returns:
        ``{argument name: placeholder}`` in the schema's order.
    """
    properties = parameters.get("properties") or {}
    required = parameters.get("required") or []
    names = list(properties) if optional else [n for n in required if n in properties]
    example = {}
    for name in names:
        spec = properties[name] if isinstance(properties[name], dict) else {}
        kind = spec.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), None)
        example[name] = _EXAMPLE_VALUES.get(kind, f"<{name}>")
    return example


@dataclass
class FailedTest:
    """One failed test (or collection error) of an eval, from pytest's structured report.

    Attributes:
        test_id: pytest's node id, e.g. ``"tests/test_app.py::test_add"``.
        path: working-copy-relative file where the failure is best looked at:
            the first traceback frame in the repository's own non-test code
            (where the test enters the code under test), else the deepest
            frame in a working-copy file; None when no frame is in the working copy.
        line: 1-based line in ``path`` (None with it).
        message: one line (the exception), at most 300 characters.
        when: ``"setup"``, ``"call"``, ``"teardown"`` or ``"collect"``.
        frames: ``(relative path, line)`` of the traceback frames inside the
            working copy, outermost first.
    """

    test_id: str
    path: str | None = None
    line: int | None = None
    message: str = ""
    when: str = "call"
    frames: list[tuple[str, int]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["frames"] = [list(f) for f in self.frames]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FailedTest:
        kwargs = {k: data[k] for k in data if k in cls.__dataclass_fields__}
        kwargs["frames"] = [tuple(f) for f in kwargs.get("frames") or []]
        return cls(**kwargs)


@dataclass
class EvalSummary:
    """The result of one run of the entrypoint.

    Counts come from pytest's structured report (our plugin) when pytest ran,
    else from pytest's closing summary line, else the exit status counts as
    one test. ``total`` is passed + failed + errors (skipped tests do not
    count towards the score). ``exit_code`` is the entrypoint's exit status,
    None on timeout. ``failures`` lists the failed tests with their location
    (empty without a report). ``problem`` is a one-line reason why the run
    counts as failed although the exit code may say otherwise (pytest cut
    short before its report, or the exit code disagreeing with it); "" when none.
    """

    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    exit_code: int | None = None
    timed_out: bool = False
    failures: list[FailedTest] = field(default_factory=list)
    problem: str = ""

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["failures"] = [f.to_dict() for f in self.failures]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalSummary:
        kwargs = {k: data[k] for k in data if k in cls.__dataclass_fields__}
        kwargs["failures"] = [FailedTest.from_dict(f) for f in kwargs.get("failures") or []]
        return cls(**kwargs)


@dataclass
class StepResult:
    """What :meth:`RepoEnv.reset` and :meth:`RepoEnv.step` return.

    Attributes:
        observation: the text the agent reads.
        action: the tool call that was executed (None for reset).
        done: the episode is over (submit was called).
        resolved: the last eval passed every test (score == max_score > 0).
        score: tests passed in the last eval.
        max_score: tests counted in the last eval (passed + failed + errors).
        breakpoints: sorted ``(relative path, line)`` pairs, 1-based lines.
        conditions: ``"path:line" -> condition`` for conditional breakpoints.
        frame: ``(relative path, line)`` of the stopped pdb frame, or None when
            no pdb session is stopped inside the working copy.
        eval: the last eval's parsed summary, or None before any eval.
        eval_output: the last eval's (possibly truncated) output text.
        changed_files: relative paths that differ from the original repository.
        error: True when the action was refused (bad tool, bad arguments,
            a path outside the workspace, ...); the observation says why.
        elapsed: wall time of the step in seconds.
        start: how the step's Python process started: ``"preloaded"`` (a spare
            that imported pytest ahead of time became it), ``"cold"``, or ""
            when the step started none (an eval, a pdb start or restart do).
        data: the tool's machine-readable fields (``ToolOutput.data``; JSON-ready,
            per tool in docs/internals.md); ``{}`` for reset and refused actions.
    """

    observation: str
    action: ToolCall | None = None
    done: bool = False
    resolved: bool = False
    score: int = 0
    max_score: int = 0
    breakpoints: list[tuple[str, int]] = field(default_factory=list)
    conditions: dict[str, str] = field(default_factory=dict)
    frame: tuple[str, int] | None = None
    eval: EvalSummary | None = None
    eval_output: str = ""
    changed_files: list[str] = field(default_factory=list)
    error: bool = False
    elapsed: float = 0.0
    start: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict; tuples become 2-element lists."""
        data = asdict(self)
        data["action"] = self.action.to_dict() if self.action else None
        data["breakpoints"] = [list(bp) for bp in self.breakpoints]
        data["frame"] = list(self.frame) if self.frame else None
        data["eval"] = self.eval.to_dict() if self.eval else None
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepResult:
        """Inverse of :meth:`to_dict`; unknown keys are ignored."""
        kwargs = {k: data[k] for k in data if k in cls.__dataclass_fields__}
        if kwargs.get("action"):
            kwargs["action"] = ToolCall.from_dict(kwargs["action"])
        kwargs["breakpoints"] = [tuple(bp) for bp in kwargs.get("breakpoints") or []]
        if kwargs.get("frame"):
            kwargs["frame"] = tuple(kwargs["frame"])
        if kwargs.get("eval"):
            kwargs["eval"] = EvalSummary.from_dict(kwargs["eval"])
        return cls(**kwargs)


class WorkspaceError(Exception):
    """A path is refused (outside the working copy, hidden, read-only, binary, ...).

    The message is one line the agent can act on.
    """


class ApplyConflictError(WorkspaceError):
    """Applying the session's changes would overwrite changes made to the original.

    Nothing was written. Attributes: ``files``, the relative paths that were
    changed in the original since the session started and could not be merged.
    """

    def __init__(self, files: list[str]) -> None:
        self.files = list(files)
        shown = ", ".join(self.files[:10]) + (" ..." if len(self.files) > 10 else "")
        super().__init__(f"not applied: {shown} changed in the original since the session "
                         "started and cannot be merged; merge by hand from the session's patch")
