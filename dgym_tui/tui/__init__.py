"""The Textual front end (``dgym-tui``): app, widgets, screens and the replay view.

Importing this package sets Textual's screen update rate, the environment variable
``TEXTUAL_FPS`` (Textual's documented setting, read once when Textual is first imported),
to :data:`FRAMES_PER_SECOND` unless the environment already sets it.
"""

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
