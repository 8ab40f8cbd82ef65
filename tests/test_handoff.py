"""dgym_tui.core.handoff: a thread's word that a command went to another process."""

from __future__ import annotations

import threading

from dgym_tui.core import handoff


def test_handed_off_sets_the_event_of_this_thread_only():
    mine, outer = threading.Event(), threading.Event()
    handoff.handed_off()  # nothing expected: nothing happens
    with handoff.expecting(outer):
        with handoff.expecting(mine):
            other = threading.Thread(target=handoff.handed_off)
            other.start()
            other.join()
            assert not mine.is_set()  # another thread's word
            handoff.handed_off()
        assert mine.is_set() and not outer.is_set()
        handoff.handed_off()  # the outer block's event again
        assert outer.is_set()
