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

The program can see it: ``sys.gettrace()`` returns the function (named
``_dgym_continue``) while it runs between breakpoints, and the instance's
``_set_stopinfo`` is an attribute of the instance. The function's ``__module__`` is
``bdb``, as ``trace_dispatch``'s: what libraries ask to tell a debugger is on (pytest-timeout's
``is_debugging``: the module of ``sys.gettrace()``) gets bdb's answer. A program that replaces or calls them
gets no more than it could already do to pdb from inside: pdb's replies stay data to dgym.
A nested debugger (``debug``) is a new instance and keeps bdb's plain trace.
"""

from __future__ import annotations

#: Defines ``install(P)`` (P: a ``pdb.Pdb``; returns nothing; does nothing twice). Runs in
#: the debugged process, in the namespace of the start's ``exec``.
SCRIPT = '''
import sys
def install(P):
    if "_set_stopinfo" in vars(P):
        return
    base, dispatch, canonic, quiet = P._set_stopinfo, P.trace_dispatch, P.canonic, set()
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
    def _set_stopinfo(*args, **kwargs):
        base(*args, **kwargs)
        quiet.clear()
        now = sys.gettrace()
        if P.stoplineno == -1 and P.stopframe and P.botframe and P.breaks:
            if now is not _dgym_continue and now == dispatch:
                sys.settrace(_dgym_continue)
        elif now is _dgym_continue:
            sys.settrace(dispatch)
    P._set_stopinfo = _set_stopinfo
'''


def packed() -> str:
    """:data:`SCRIPT` with one space per indentation level (the same code, ~25% shorter on
    pdb's command line, which the terminal echoes)."""
    lines = []
    for line in SCRIPT.strip("\n").splitlines():
        body = line.lstrip(" ")
        lines.append(" " * ((len(line) - len(body)) // 4) + body)
    return "\n".join(lines) + "\n"
