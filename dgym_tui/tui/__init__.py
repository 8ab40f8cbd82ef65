"""The Textual front end (``dgym-tui``): app, widgets, screens and the replay view.

Importing this package sets Textual's screen update rate, the environment variable
``TEXTUAL_FPS`` (Textual's documented setting, read once when Textual is first imported),
to :data:`FRAMES_PER_SECOND` unless the environment already sets it. :func:`pause_gc` and
:func:`resume_gc` pause the garbage collector for the app's start-up.
"""

import gc
import os

#: Frames per second at most (Textual's default: 60). Textual draws a changed screen at
#: the next tick of its screen's update timer, every 1 / TEXTUAL_FPS s, so a pdb stop's
#: panes reached the terminal up to 16.7 ms after the app had updated them: a median wait
#: of 11-15 ms per stop, up to 27 ms (``bench/bench_tui.py``, a `u` / `d` stop split into
#: its parts, 2026-11-26). At 120 the wait is at most 8.3 ms (median 1.6 ms, same run). A
#: screen is drawn only when something on it changed, so an idle app draws nothing more;
#: a continuous change (scrolling) is drawn up to twice as often.
FRAMES_PER_SECOND = 120

os.environ.setdefault("TEXTUAL_FPS", str(FRAMES_PER_SECOND))

_gc_paused = False  # by pause_gc, not by the program


def pause_gc() -> None:
    """Pause the garbage collector until :func:`resume_gc` (the app calls it after its
    first frame; ``dgym-tui`` calls this before it imports the app).

    Importing the app's modules and mounting the ~55 widgets of the first screen make
    enough objects for many young-generation passes, none of which finds garbage worth
    the time: paused from the command's start, the first frame came 15-18 ms sooner
    (main-thread CPU to the first frame with the footer's keys, 0.229-0.231 ->
    0.211-0.216 s; paused from the app's load only, 0.215-0.226 s; two runs of 11 rounds
    in turn of ``bench/bench_tui.py``'s first-paint script, 2026-11-26). A collector the
    program had already disabled stays disabled, and :func:`resume_gc` leaves it so.
    Idempotent."""
    global _gc_paused
    if gc.isenabled():
        gc.disable()
        _gc_paused = True


def resume_gc() -> None:
    """Undo :func:`pause_gc` (idempotent)."""
    global _gc_paused
    if _gc_paused:
        _gc_paused = False
        gc.enable()
