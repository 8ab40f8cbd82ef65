"""Structured inspection of a stopped pdb: stack, variables and breakpoints as data.

A front end that shows a variables / stack / breakpoints pane asks pdb with ONE
hidden command per stop: :func:`inspect_command` builds a ``!exec(...)`` line
whose code runs inside the debugged process, finds the ``pdb.Pdb`` instance on
its own call stack, and prints one JSON document between two markers;
:func:`parse_inspection` reads it back. The code runs in a fresh namespace
(nothing is added to the program's globals), ``!`` lines never become pdb's
``lastcmd``, and the reply is bounded (values elided to ``max_repr``
characters, ``max_items`` children per container, ``max_nodes`` values in all).

The first inspection of a process also keeps the compiled code in the ``pdb`` module of
the debugged process (:data:`CODE_NAME`, named after a hash of the code: another
version's is never run); the next ones send a short line that runs it
(``inspect_command(cached=True)``, ~150 characters instead of ~1,600: the long line
cost pdb ~3-8 ms to read, echo and compile, several times a ``n``). A program that
deletes or replaces it gets no more than it could already print: the reply is parsed
as untrusted data, and a reply without an inspection makes the caller send the whole
code again.

This is display data for a person: it is never part of an observation or a
trajectory step. Values are shown with ``reprlib``, so a hostile ``__repr__``
can still run (as it would under ``p``); callers bound the wait and interrupt.
"""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass, field
from typing import Any

from dgym_tui.core.safetext import strip_controls

#: The markers around the JSON (written by the packed script, so a terminal's echo of
#: the command line never contains them).
BEGIN = "<<dgym-inspect>>"
END = "<</dgym-inspect>>"

# Runs inside the debugged process; ``A`` holds the arguments. Kept small: the
# command line (zlib + base64 of this text) must stay well under a terminal's
# 4 KB line limit.
_SCRIPT = r'''
import sys, json, pdb, bdb, reprlib
f = sys._getframe()
while f is not None and not isinstance(f.f_locals.get("self"), pdb.Pdb):
    f = f.f_back
P = f.f_locals["self"]
R = reprlib.Repr()
R.maxstring = R.maxother = R.maxlong = A["max_repr"]
R.maxlist = R.maxtuple = R.maxdict = R.maxset = R.maxfrozenset = R.maxdeque = 12
R.maxlevel = 3
budget = [A["max_nodes"]]
def kids(v):
    if isinstance(v, dict):
        return [(R.repr(k), x) for k, x in list(v.items())[:A["max_items"]]], len(v)
    if isinstance(v, (list, tuple)):
        return [(str(i), x) for i, x in enumerate(v[:A["max_items"]])], len(v)
    if isinstance(v, (set, frozenset)):
        return [("", x) for x in list(v)[:A["max_items"]]], len(v)
    d = getattr(v, "__dict__", None)
    if isinstance(d, dict) and not isinstance(v, type) and not callable(v) \
            and type(v).__name__ != "module":
        return [(k, x) for k, x in list(d.items())[:A["max_items"]]], len(d)
    return None, 0
def node(name, v, depth):
    budget[0] -= 1
    try:
        r = R.repr(v)
    except Exception as e:
        r = "<repr failed: %s>" % type(e).__name__
    n = {"n": name, "t": type(v).__name__, "r": r[:A["max_repr"] * 2]}
    ch, total = kids(v)
    if ch is not None and total:
        n["len"] = total
        if depth > 0 and budget[0] > 0:
            n["c"] = [node(k, x, depth - 1) for k, x in ch if budget[0] > 0]
    return n
frames = []
for i, (fr, line) in enumerate(P.stack):
    frames.append([fr.f_code.co_filename, line, fr.f_code.co_name])
cur = P.curindex if A["frame"] is None else max(0, min(A["frame"], len(P.stack) - 1))
fr = P.stack[cur][0] if P.stack else None
vs = []
if fr is not None:
    if A["scope"] == "globals":
        src = fr.f_globals
    elif fr is P.curframe:
        src = getattr(P, "curframe_locals", None) or fr.f_locals
    else:
        src = fr.f_locals
    for k in sorted(src, key=str):
        if budget[0] <= 0:
            break
        if k.startswith(("__", "@")) and k not in ("__return__", "__exception__"):
            continue
        v = src[k]
        if A["scope"] == "globals" and type(v).__name__ == "module":
            continue
        vs.append(node(k, v, A["depth"]))
bps = []
for b in bdb.Breakpoint.bpbynumber[1:]:
    if b is not None:
        bps.append([b.number, b.file, b.line, b.cond, b.enabled, b.hits, b.temporary])
sys.stdout.write("<<dgym-inspect>>" + json.dumps({"frames": frames, "current": P.curindex,
    "selected": cur, "vars": vs, "bps": bps, "truncated": budget[0] <= 0}) + "<</dgym-inspect>>\n")
'''

_PACKED = base64.b64encode(zlib.compress(_SCRIPT.encode(), 9)).decode()
#: The attribute of the debugged process's ``pdb`` module that keeps the compiled code.
CODE_NAME = "_dgym_inspect_" + hashlib.sha256(_SCRIPT.encode()).hexdigest()[:16]


@dataclass
class Variable:
    """One value of a frame.

    Attributes:
        name: variable name, dict key repr, list index or ``""`` (set member).
        type: the value's type name.
        repr: the value's repr, elided (``reprlib``).
        length: number of children for containers / objects with attributes (0: none).
        children: the first children, when fetched (None: not fetched or none).
    """

    name: str
    type: str
    repr: str
    length: int = 0
    children: list[Variable] | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Variable:
        kids = data.get("c")  # names and reprs are the program's text: shown as data
        return cls(strip_controls(str(data.get("n", ""))), strip_controls(str(data.get("t", ""))),
                   strip_controls(str(data.get("r", ""))),
                   int(data.get("len", 0) or 0),
                   [cls.from_json(k) for k in kids] if isinstance(kids, list) else None)


@dataclass
class StackFrame:
    """One frame of pdb's stack: ``path`` as the process sees it, 1-based ``line``,
    ``function``; ``relative`` is the repository-relative path (None outside it)."""

    path: str
    line: int
    function: str
    relative: str | None = None


@dataclass
class PdbBreakpoint:
    """A breakpoint as pdb holds it now: its pdb ``number``, ``path`` (repository-
    relative when inside it), ``line``, ``condition``, ``enabled``, ``hits``, ``temporary``."""

    number: int
    path: str
    line: int
    condition: str | None
    enabled: bool
    hits: int
    temporary: bool = False


@dataclass
class Inspection:
    """What a stopped pdb shows: the stack, the selected frame's variables, breakpoints.

    Attributes:
        frames: outermost first (pdb's ``where`` order, runner frames included).
        current: index in ``frames`` of pdb's current frame.
        selected: index of the frame whose variables are in ``variables``.
        variables: the selected frame's locals (or globals), sorted by name; dunder names
            and the ``@py_assert1`` / ``@py_format3`` ... temporaries of pytest's assert
            rewriting (not the program's state) are left out.
        scope: ``"locals"`` or ``"globals"``.
        breakpoints: every breakpoint pdb holds.
        truncated: True when the value budget ran out (some values missing).
    """

    frames: list[StackFrame] = field(default_factory=list)
    current: int = 0
    selected: int = 0
    variables: list[Variable] = field(default_factory=list)
    scope: str = "locals"
    breakpoints: list[PdbBreakpoint] = field(default_factory=list)
    truncated: bool = False

    @property
    def frame(self) -> StackFrame | None:
        """The selected frame, or None when the stack is empty."""
        return self.frames[self.selected] if 0 <= self.selected < len(self.frames) else None


def inspect_command(frame: int | None = None, scope: str = "locals", depth: int = 2,
                    max_repr: int = 120, max_items: int = 30, max_nodes: int = 400,
                    cached: bool = False) -> str:
    """Return the one-line pdb command that prints an :class:`Inspection` as JSON.

    Args:
        frame: index into pdb's stack whose variables to read (None: pdb's
            current frame); pdb's own current frame is not changed.
        scope: ``"locals"`` or ``"globals"`` (modules and dunder names skipped).
        depth: container levels fetched below each variable (0: none).
        max_repr: characters per value repr before elision.
        max_items: children per container.
        max_nodes: values in all (keeps the reply small on huge frames).
        cached: run the code an earlier command of this process kept (:data:`CODE_NAME`:
            a short line); False sends the whole code and keeps it.

    Raises:
        ValueError: unknown ``scope``.
    """
    if scope not in ("locals", "globals"):
        raise ValueError(f"scope must be 'locals' or 'globals', got {scope!r}")
    args = {"frame": frame, "scope": scope, "depth": int(depth), "max_repr": int(max_repr),
            "max_items": int(max_items), "max_nodes": int(max_nodes)}
    if cached:
        return f"!exec(__import__('pdb').{CODE_NAME}, {{'A': {args!r}}})"
    # setattr returns None: the code just kept runs; no name is bound in the frame
    code = ("compile(__import__('zlib').decompress(__import__('base64').b64decode("
            f"'{_PACKED}')).decode(), '<dgym-inspect>', 'exec')")
    return (f"!exec(setattr(__import__('pdb'), '{CODE_NAME}', {code}) or "
            f"__import__('pdb').{CODE_NAME}, {{'A': {args!r}}})")


def parse_inspection(output: str, relative: Any = None, scope: str = "locals") -> Inspection | None:
    """Read the JSON printed by :func:`inspect_command` out of pdb's reply.

    Args:
        output: pdb's reply text.
        relative: ``relative(path) -> str | None`` mapping a path the process
            printed to a repository-relative one (None: keep paths as printed).
        scope: the scope that was asked for.

    Returns:
        The :class:`Inspection`, or None when the reply holds none (pdb not
        stopped, the code failed, output cut).
    """
    start = output.find(BEGIN)
    stop = output.find(END, start + len(BEGIN)) if start >= 0 else -1
    if start < 0 or stop < 0:
        return None
    try:  # the program can print a forged reply: anything malformed is no inspection
        data = json.loads(output[start + len(BEGIN):stop])
        return _inspection(data, relative or (lambda _p: None), scope)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


def _inspection(data: dict[str, Any], rel: Any, scope: str) -> Inspection:
    frames = [StackFrame(str(p), int(n), strip_controls(str(fn)), rel(str(p)))
              for p, n, fn in data["frames"]]
    bps = []
    for num, path, line, cond, enabled, hits, temporary in data["bps"]:
        bps.append(PdbBreakpoint(int(num), rel(str(path)) or str(path), int(line),
                                 strip_controls(str(cond)) if cond else None, bool(enabled),
                                 int(hits), bool(temporary)))
    return Inspection(frames=frames, current=int(data["current"]),
                      selected=int(data["selected"]),
                      variables=[Variable.from_json(v) for v in data["vars"]], scope=scope,
                      breakpoints=bps, truncated=bool(data.get("truncated")))
