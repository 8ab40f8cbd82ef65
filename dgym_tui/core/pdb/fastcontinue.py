"""A cheap ``continue`` for the pdb processes dgym starts: code sent into the debugged process.

While pdb continues to a breakpoint, bdb's trace function sees a ``call`` event for every
Python function the program enters, and each one runs several Python-level bdb methods
(``trace_dispatch`` -> ``dispatch_call`` -> ``stop_here`` -> ``break_anywhere`` ->
``canonic``): ~2 us a call on Python 3.11, most of a ``c`` over ``import pytest``
(~58,000 calls). With the stop line at -1 (``set_continue``: stop only at breakpoints),
``stop_here`` is false for every frame, so bdb's answer to a ``call`` event is "no local
trace" whenever the frame's file holds no breakpoint (``break_anywhere``). :data:`SCRIPT`
gives one ``pdb.Pdb`` instance a global trace function for exactly that state: it returns
None at once for a file it already found without a breakpoint (one set look-up) and hands
every other event to the instance's own ``trace_dispatch``, so frames get the same local
trace functions and pdb stops where it would have stopped.

How it is switched: the instance's ``_set_stopinfo`` (every bdb command that resumes the
program goes through it: ``continue``, ``step``, ``next``, ``until``, ``return``, a
program's restart, ``set_trace``) is wrapped. After bdb's own, the wrapper forgets the
files it knew (breakpoints may have changed since), then puts the cheap function in place
of ``trace_dispatch`` as the global trace function when bdb continues with breakpoints
(stop line -1, a stop frame and a bottom frame set, ``breaks`` not empty) and the global
trace function is bdb's (never over a program's own, nor where bdb set none: post mortem),
and puts ``trace_dispatch`` back when it is anything else. bdb's other ways of setting the
trace (``set_quit``, the ``debug`` command, ``run``) set their own function over it, as
they would over ``trace_dispatch``. Breakpoints only change while pdb is in control (a
command, a ``commands`` list, a temporary breakpoint deleted when hit, which stops), and
pdb resumes through ``_set_stopinfo`` afterwards.

Before any code of a breakpoint's file has run, not even that function is needed: while
``continue`` runs (the state above) and no breakpoint's file is the file of a module in
``sys.modules``, of a frame on the current stack, or of code seen since the install (below),
the global trace is None and nothing is traced: bdb's answer to every ``call`` of that
stretch would be "no local trace", and the frames already on the stack are in files without
breakpoints, where bdb's ``line`` events never stop (stop line -1). An audit hook
(``sys.addaudithook``: one per instance, it cannot be removed) watches how code starts:
``exec`` (builtin ``exec``/``eval``, every importer's module exec, ``runpy``, pytest's
assertion rewriter) and ``function.__new__`` carry the code object, ``compile`` and
``code.__new__`` the file name. It records those file names always; while the trace is
off, one of a breakpoint's file puts ``_dgym_continue`` back from inside the hook, so the
frame about to start gets its ``call`` event, as under bdb. It also puts it back when a
module that reads the trace function to tell a debugger is on appears (pytest-timeout,
python-dotenv, hypothesis, numpy.testing: with one imported the trace stays on), and at
the first event of the debugged thread once another thread exists or has run code (bdb
traces only the thread that runs pdb). A ``sys.settrace`` of the program's own ends the
stretch without putting anything back (its trace, or none, is what it would have had). The
hook does a dictionary look-up and returns when the trace is on; it never raises (an
exception in a hook aborts the audited operation): a failure of its own puts the trace back.

A module of a breakpoint's file that imports others before it defines anything (a test
file's ``import pytest`` at its top) gets one more step: when such a module (every one of
them on the stack, none finished: the files' only code so far) starts another file's
module and none of their code so far, nor of their current line, made a function or a
class or jumped back (read with ``dis``, once per code object), the global trace goes off again
when each of those modules has one more import to make before anything else: before a
function, a class, a jump, a return, a line with a breakpoint, outside any ``try``, of a
module not yet loaded (``IMPORT_NAME``, absolute). That import's audit event (``import``,
raised when the module is not in ``sys.modules``) puts ``_dgym_continue`` back, and so does
any event once the module is in ``sys.modules`` (another import loaded it meanwhile: the
module's import would raise none). Else the global trace becomes ``getattr``: a C function
whose answer to a ``call`` event (``getattr(frame, "call", None)``) is None, bdb's answer
for those frames, without a Python call (it saves the Python call, not the interpreter's
frame work around it: ~5 of ~40 ms over ``import pytest``). The modules'
frames get a local trace function that puts ``_dgym_continue`` back at their next event
(their next line, an exception, their return) and hands it to bdb: a line of theirs with a
breakpoint still stops, and their functions are traced from their first call. A module of
a breakpoint's file started meanwhile puts ``_dgym_continue`` back at once.

What this cannot see, where pdb could stop and dgym's would not: code with one file name
that holds code of another (marshal data built so, or ``code.replace`` of its constants),
run by ``exec`` of the outer one; a module put in ``sys.modules`` with no audit event
(by assignment, or a builtin or extension module loaded through ``importlib``) that a
breakpoint's module imports next, while that module's earlier import runs, followed by no
audit event before the import; and a breakpoint's file whose code another thread ran,
called by the debugged thread before it raises any audit event.

The program can see it: ``sys.gettrace()`` returns the function (named
``_dgym_continue``) while it runs between breakpoints, and the instance's
``_set_stopinfo`` is an attribute of the instance. The function's ``__module__`` is
``bdb``, as ``trace_dispatch``'s: what libraries ask to tell a debugger is on (pytest-timeout's
``is_debugging``: the module of ``sys.gettrace()``) gets bdb's answer. Until code of a breakpoint's file runs,
``sys.gettrace()`` is None, and builtin ``getattr`` while such a module imports others
(bdb's: its ``trace_dispatch``); the audit hook runs for the
program's audit events (its time; a hook of the program added later sees the
``sys.settrace`` and ``sys._getframe`` events of the switch). A program that replaces or
calls them gets no more than it could already do to pdb from inside: pdb's replies stay
data to dgym.
A nested debugger (``debug``) is a new instance and keeps bdb's plain trace.
"""

from __future__ import annotations

import binascii
import zlib

#: Defines ``install(P)`` (P: a ``pdb.Pdb``; returns nothing; does nothing twice). Runs in
#: the debugged process, in the namespace of the start's ``exec``.
SCRIPT = '''
import sys, _thread, dis
def install(P):
    if "_set_stopinfo" in vars(P):
        return
    base, dispatch, canonic, quiet = P._set_stopinfo, P.trace_dispatch, P.canonic, set()
    me, seen, own, other = _thread.get_ident(), set(), [False], [False]
    mode, mods, first, instructions, nexts = [0], [], {}, {}, set()
    where = {"exec": 0, "function.__new__": 0, "compile": 1, "code.__new__": 1}
    readers = ("pytest_timeout", "dotenv", "hypothesis", "numpy.testing")
    def _dgym_continue(frame, event, arg):
        name = frame.f_code.co_filename
        if event == "call":
            if name in quiet:
                return None
            if canonic(name) not in P.breaks:
                quiet.add(name)
                return None
        return dispatch(frame, event, arg)
    _dgym_continue.__module__ = "bdb"
    bdb_codes = (dispatch.__func__.__code__, _dgym_continue.__code__)
    def hit(name):
        return type(name) is str and canonic(name) in P.breaks
    def trace(fn):
        own[0] = True
        try:
            sys.settrace(fn)
        finally:
            own[0] = False
    def wake():
        mode[0] = 0
        now = sys.gettrace()
        if now is None or now is getattr:
            trace(_dgym_continue)
    def resume(frame, event, arg):
        frame.f_trace = dispatch
        if mode[0] == 3 and sys.gettrace() is getattr:
            trace(_dgym_continue)
            mode[0] = 2
        return dispatch(frame, event, arg)
    def cold():
        if _thread.get_ident() != me or _thread._count() or None in seen:
            return False
        if any(n in sys.modules for n in readers) or any(hit(n) for n in seen):
            return False
        for m in list(sys.modules.values()):
            d = getattr(m, "__dict__", None)
            f = d.get("__file__") if type(d) is dict else None
            if type(f) is str and canonic(f) in P.breaks:
                return False
        f = sys._getframe()
        while f is not None:
            if canonic(f.f_code.co_filename) in P.breaks:
                return False
            f = f.f_back
        return True
    def pristine(f):
        code = f.f_code
        at = first.get(code)
        if at is None:
            at = len(code.co_code)
            for i in dis.get_instructions(code):
                if "BACKWARD" in i.opname:
                    at = -1
                    break
                if i.opname in ("MAKE_FUNCTION", "LOAD_BUILD_CLASS"):
                    at = min(at, i.offset)
            first[code] = at
        end, line = len(code.co_code), f.f_lineno
        for start, _, number in code.co_lines():
            if start > f.f_lasti and number is not None and number != line:
                end = min(end, start)
        return code.co_name == "<module>" and f.f_trace in (dispatch, resume) and at >= end
    def next_import(f):
        code = f.f_code
        body = instructions.get(code)
        if body is None:
            body = instructions[code] = list(dis.get_instructions(code))
        lasti, lines = f.f_lasti, P.breaks.get(canonic(code.co_filename), ())
        for start, end, *_ in dis._parse_exception_table(code):
            if start <= lasti < end:
                return None
        for k, i in enumerate(body):
            if i.offset <= lasti:
                continue
            if i.offset >= first[code] or i.positions.lineno in lines:
                return None
            if i.opname == "IMPORT_NAME":
                level = body[k - 2]
                if level.opname != "LOAD_CONST" or level.argval != 0:
                    return None
                if i.argval in sys.modules or i.argval in sys.builtin_module_names:
                    return None
                return i.argval
            if any(w in i.opname for w in ("JUMP", "RETURN", "RAISE", "YIELD", "SEND")):
                return None
        return None
    def shade():
        frames, f = [], sys._getframe(2)
        while f is not None:
            if f.f_code in bdb_codes:
                return 0
            if canonic(f.f_code.co_filename) in P.breaks:
                if not pristine(f):
                    return 0
                frames.append(f)
            f = f.f_back
        if not mods or sorted(map(id, mods)) != sorted(id(f.f_code) for f in frames):
            return 0
        names = [next_import(f) for f in frames]
        if all(names):
            nexts.clear()
            nexts.update(names)
            trace(None)
            return 4
        for f in frames:
            f.f_trace = resume
        trace(getattr)
        return 3
    def hook(event, args):
        try:
            at = where.get(event)
            if at is not None:
                name = getattr(args[at], "co_filename", args[at])
                if len(seen) > 50000:
                    seen.clear()
                    seen.add(None)
                if type(name) is str:
                    seen.add(name)
            m = mode[0]
            if not m or own[0]:
                return
            if _thread.get_ident() != me:
                other[0] = True
                return
            if event == "sys.settrace":
                mode[0] = 0
                return
            if other[0] or _thread._count() or (
                    (event == "exec" or event == "import")
                    and any(n in sys.modules for n in readers)):
                wake()
                return
            if m == 4 and (event == "import" and args[0] in nexts
                           or any(n in sys.modules for n in nexts)):
                trace(_dgym_continue)
                mode[0] = m = 2
            if at is None:
                return
            if hit(name):
                if event == "function.__new__":
                    wake()
                    return
                if event == "exec":
                    mods.append(args[0])
                if m != 2:
                    trace(_dgym_continue)
                    mode[0] = 2
            elif event == "exec" and m == 2:
                mode[0] = shade()
        except Exception:
            try:
                if mode[0] and _thread.get_ident() == me:
                    wake()
            except Exception:
                pass
    def _set_stopinfo(*args, **kwargs):
        was, mode[0] = mode[0], 0
        mods.clear()
        base(*args, **kwargs)
        quiet.clear()
        now = sys.gettrace()
        ours = now is _dgym_continue or (was and (now is None or now is getattr))
        nexts.clear()
        if P.stoplineno == -1 and P.stopframe and P.botframe and P.breaks:
            if ours or now == dispatch:
                if cold():
                    other[0] = False
                    trace(None)
                    mode[0] = 1
                elif now is not _dgym_continue:
                    trace(_dgym_continue)
        elif ours:
            trace(dispatch)
    P._set_stopinfo = _set_stopinfo
    sys.addaudithook(hook)
'''


#: :data:`SCRIPT`'s file name in a terminal's plugin folder (read-only to the commands):
#: pdb reads it from there at its start (a short command line; :func:`compact` where a
#: terminal has no plugin folder).
FILE = "dgym_fast_continue.py"


def packed() -> str:
    """:data:`SCRIPT` with one space per indentation level (the same code, ~25% shorter on
    pdb's command line, which the terminal echoes)."""
    lines = []
    for line in SCRIPT.strip("\n").splitlines():
        body = line.lstrip(" ")
        lines.append(" " * ((len(line) - len(body)) // 4) + body)
    return "\n".join(lines) + "\n"


def compact() -> str:
    """Python code that defines ``install`` as :data:`SCRIPT` does, from :func:`packed`
    compressed (zlib, base64): ~2,500 characters instead of ~5,400 on pdb's command line,
    which pdb reads through readline and the terminal echoes (~2.5 ms of the pdb process's
    CPU per 1,000 characters). Imports ``zlib`` and ``binascii`` in the debugged process."""
    data = binascii.b2a_base64(zlib.compress(packed().encode(), 9), newline=False)
    return f"import zlib, binascii\nexec(zlib.decompress(binascii.a2b_base64({data!r})))\n"
