"""The Textual front end (``dgym-tui``): app, widgets, screens and the replay view.

Importing this package sets Textual's screen update rate, the environment variable
``TEXTUAL_FPS`` (Textual's documented setting, read once when Textual is first imported),
to :data:`FRAMES_PER_SECOND` unless the environment already sets it. :func:`pause_gc` and
:func:`resume_gc` pause the garbage collector for the app's start-up.
"""

import gc
import os

#: Frames per second at most (Textual's default: 60): a changed screen waits for the next
#: tick, so this halves the wait of a pdb stop's panes; an idle app draws nothing more
#: (measurements: docs/performance.md).
FRAMES_PER_SECOND = 120

os.environ.setdefault("TEXTUAL_FPS", str(FRAMES_PER_SECOND))

_gc_paused = False  # by pause_gc, not by the program


def pause_gc() -> None:
    """Pause the garbage collector until :func:`resume_gc` (the app calls it after its
    first frame; ``dgym-tui`` calls this before it imports the app).

    The start-up's imports and first widgets make many young-generation passes that find
    no garbage (docs/performance.md). A collector the program had already disabled stays
    disabled, and :func:`resume_gc` leaves it so. Idempotent."""
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
