"""Keys that arrive together (type-ahead, a paste of lines, a fast typist) are handled one
after the other, each to its end, in the order they were typed.

Textual hands every key to the focused widget's own message queue and runs a key's
binding only when the key has bubbled back up to the app. Keys read in one burst were
all handed over before the first one's binding ran: ``p 111⏎p 222⏎`` submitted
``p 111p 222`` (Enter is a binding of the input line, the letters are not), ``:20⏎b``
typed ``b`` into the console before ``:20⏎`` moved the focus back to the source view, and
in an editor ``abc``, Backspace, ``d`` deleted the ``d``. (Textual issue #6605.)

:class:`OrderedKeys` (a mixin of the app) lets one key at a time through: a key that
arrives while an earlier one is still being handled waits, and goes on once every
widget of the screen has handled what that earlier key caused (the key itself, its
binding, the messages and focus changes that followed).
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

from textual import events
from textual.message_pump import MessagePump

#: At most this many looks (each after the other tasks ran once) for an earlier key's
#: handling to settle; then the next key goes on anyway (nothing waits for ever).
SETTLE_LOOKS = 200


def _settled(app: Any) -> bool:
    """Whether every widget of the app's screen (and the screen) has handled all of its
    messages."""
    try:
        nodes = list(app.screen.walk_children(with_self=True))
    except Exception:  # noqa: BLE001  no screen yet / any more
        return True
    # A pump handles a message without yielding to the other tasks unless a handler
    # really waits (a sync handler, or a coroutine that does no I/O, runs to its end), so
    # an empty queue seen from another task is (nearly always) a handled one.
    return not any(node._message_queue.qsize() for node in nodes)


class OrderedKeys(MessagePump):
    """App mixin: keys and pastes from the terminal are let through one at a time.

    The first key of a burst is handled at once (no delay for a single key); the ones
    that arrive while it is being handled wait in order (:attr:`_held_keys`).

    The app is looked at (is it settled?) only while a key waits: a key's handling with
    no other key behind it is not looked at until the next key arrives. Looking until
    settled after every key kept the app's thread busy (a look, then the other tasks
    once, 5-7 times a key), so the GIL went to the session's thread, whose step the key
    had just started, only at Python's switch interval (5 ms). One look after a lone key
    (a callback through the app's queue, a turn of the other tasks, a walk of the ~45
    widgets) still came before the key's binding, which comes back to the app behind it,
    and found its handling unsettled: ``n``'s key to action 2.1 -> 1.7 ms in tmux.
    """

    _key_in_flight = False
    _held_keys: deque[events.Event] | None = None
    _next_key: events.Event | None = None  # the held key handed back to the app
    _looking = False  # a look (_let_next_key_in) is scheduled

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, (events.Key, events.Paste)) and not event.is_forwarded:
            if event is self._next_key:
                self._next_key = None
            elif self._key_in_flight and not self._looking and not self._held_keys \
                    and not self._message_queue.qsize() and _settled(self):
                pass  # the last key's handling settled since its look: this one goes on
            elif self._key_in_flight:
                if self._held_keys is None:
                    self._held_keys = deque()
                self._held_keys.append(event)
                self._look()
                return
            self._key_in_flight = True
            try:
                await super().on_event(event)  # type: ignore[misc]
            finally:
                if self._held_keys:  # a key waits: look until it can go on
                    self._look()
                # else the next key to arrive looks (a look now ran before this key's
                # binding, which comes back to the app behind it, and found it unsettled)
            return
        await super().on_event(event)  # type: ignore[misc]

    def _look(self) -> None:
        """Schedule a look at the app (:meth:`_let_next_key_in`) unless one is."""
        if not self._looking:
            self._looking = True
            self.call_later(self._let_next_key_in)

    def type_next(self, *keys: events.Key) -> None:
        """Make ``keys`` the next keys handled, in this order, before the keys already
        waiting: what the key being handled stands for (the console's ``alt+KEY``, which
        is Escape then KEY). With no key being handled they are posted to the app."""
        if not self._key_in_flight:
            for key in keys:
                self.post_message(key)
            return
        if self._held_keys is None:
            self._held_keys = deque()
        self._held_keys.extendleft(reversed(keys))
        self._look()

    async def _let_next_key_in(self, looks: int = 0) -> None:
        """Once the screen and the app settled, hand the next waiting key (if any) to
        the app. Not settled: look again after the app's other messages (the key bubbled
        back for its binding, what that binding posted) while a key waits; with none
        waiting, the key stays in flight and the next key to arrive looks again."""
        await asyncio.sleep(0)  # the widgets' tasks run
        held = self._held_keys
        settled: bool = not self._message_queue.qsize() and _settled(self)
        if not settled and looks < SETTLE_LOOKS:
            if held:
                self.call_later(self._let_next_key_in, looks + 1)
            else:
                self._looking = False
            return
        self._looking = False
        if not held:
            self._key_in_flight = False
            return
        # back through the app's queue, handled by on_event as the next key; keys
        # arriving meanwhile wait behind it
        self._next_key = held.popleft()
        if not self.post_message(self._next_key):  # the app is closing
            self._next_key = None
            self._key_in_flight = False
