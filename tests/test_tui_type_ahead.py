"""Keys that arrive together, as a paste or a fast typist sends them, through the real app
(Pilot): every key event is posted to the app at once, as Textual's terminal driver does
with the keys of one read, and only then does the test wait. They run in the order typed:
console lines, ``:N`` then a key, editing keys in the code editor; keys typed while a
step runs wait for it and run after it, each echoed once."""

from __future__ import annotations

import asyncio

from textual import events
from tui_helpers import SIZE, console_text, settle, stop_at

from dgym_tui.tui.app import DgymApp

#: tmux-like key names -> (Textual key, character)
_SPECIAL = {"\r": ("enter", "\r"), "\b": ("backspace", "\x7f"), ":": ("colon", ":"),
            " ": ("space", " "), "/": ("slash", "/"), "*": ("asterisk", "*")}


def burst(app, text: str) -> None:
    """Post one key event per character of ``text`` to the app, all at once (``\\r``:
    enter, ``\\b``: backspace)."""
    for char in text:
        key, character = _SPECIAL.get(char, (char, char))
        app.post_message(events.Key(key, character))


def _commands(session) -> list[str]:
    return [turn.action.arguments.get("command") for turn in session.turns
            if turn.action.name == "pdb"]


async def test_console_lines_typed_together_run_in_order(calc_session):
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        app.pdb_console.input.focus()
        await pilot.pause()
        burst(app, "p 111\rp 222\rp 333\r")
        await settle(app, pilot)
        await settle(app, pilot)
        assert _commands(session)[-3:] == ["p 111", "p 222", "p 333"], _commands(session)
        text = console_text(app)
        assert text.index("111") < text.index("222") < text.index("333")
        assert app.pdb_console.input.value == ""
    app.close_session()


async def test_goto_line_then_a_key_typed_together(calc_session):
    """``:4⏎b`` from the source view: the cursor goes to line 4, then ``b`` sets a
    breakpoint there (it is not typed into the console)."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.source_view.focus()
        await pilot.pause()
        burst(app, ":4\rb")
        await settle(app, pilot)
        assert _commands(session) == ["b calc.py:4"], _commands(session)
        assert app.pdb_console.input.value == ""
        assert app.focused is app.source_view
    app.close_session()


async def test_editing_keys_typed_together_in_the_code_editor(calc_session):
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.source_view.go_to(5)
        app.source_view.focus()
        await pilot.pause()
        burst(app, "E")
        await settle(app, pilot)
        area = app.screen.query_one("#code-edit")
        area.focus()
        area.move_cursor((0, len(area.document.lines[0])))
        await pilot.pause()
        burst(app, "abc\bd")
        await settle(app, pilot)
        assert area.document.lines[0].endswith("len(xs[1:])abd"), area.document.lines[0]
        await pilot.press("escape")
        await pilot.pause()
    app.close_session()


async def test_a_key_typed_while_its_step_starts_pdb_runs_after_it(calc_session):
    """``b`` then ``c`` at once from the source view, before pdb ran: ``b`` starts pdb and
    sets the breakpoint, and ``c`` (typed while that step ran) runs after it, to the
    breakpoint. Before, the ``c`` was dropped."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.source_view.go_to(4)
        app.source_view.focus()
        await pilot.pause()
        burst(app, "bc")
        await settle(app, pilot)
        await settle(app, pilot)
        assert _commands(session) == ["b calc.py:4", "c"], _commands(session)
        assert "waits for the step that runs" in console_text(app)
    app.close_session()


async def test_eval_typed_while_a_step_runs_runs_after_it(calc_session):
    """``n`` then ``x`` at once: the eval key, typed while the step runs, waits for it
    (echoed as waiting) and runs after it. Before, it was dropped with a "busy" notice: in
    tmux, ``:rewrite ...⏎`` then Escape and ``x`` in one write lost the eval."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        before = len(session.turns)
        burst(app, "nx")
        await settle(app, pilot)
        await settle(app, pilot)
        assert [turn.action.name for turn in session.turns[before:]] == ["pdb", "eval"]
        assert "eval (waits for the step that runs)" in " ".join(console_text(app).split())
    app.close_session()


async def test_keys_typed_while_a_step_runs_are_echoed_once_each(calc_session):
    """``nnn`` at once: the first n runs; the others arrive while it runs and wait for it
    (echoed once as waiting), then run in turn; the console shows each n that ran once."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        before = len(session.turns)
        echoed = console_text(app).count('pdb(command="n")')
        burst(app, "nnn")
        await settle(app, pilot)
        await settle(app, pilot)
        ran = len(session.turns) - before
        assert ran == 3
        assert console_text(app).count('pdb(command="n")') - echoed == ran
    app.close_session()


async def test_escape_then_keys_typed_together_leave_the_console_in_order(calc_session):
    """Escape, n, n, n typed at once in the console (a terminal sends Escape and the next
    key as one alt+KEY): the three n ran as pdb steps. The keys behind the alt+KEY were
    typed into the console, which still had the focus when they were handled."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        before = len(_commands(session))
        app.pdb_console.input.focus()
        await pilot.pause()
        app.post_message(events.Key("alt+n", "n"))
        burst(app, "nn")
        await settle(app, pilot)
        await settle(app, pilot)
        await settle(app, pilot)
        assert _commands(session)[before:] == ["n", "n", "n"], _commands(session)
        assert app.pdb_console.input.value == ""
        assert app.focused is app.source_view
    app.close_session()


def _note_looks(monkeypatch, seen: list[str]) -> None:
    """Append ``"look"`` to ``seen`` at each look of the ordered keys at the app (has the
    last key's handling settled?)."""
    from dgym_tui.tui import key_order

    settled = key_order._settled
    monkeypatch.setattr(key_order, "_settled", lambda app: seen.append("look") or settled(app))


async def test_a_lone_key_is_not_looked_after_until_it_settles(calc_session, monkeypatch):
    """A key with no key behind it is not looked after (has its handling settled?) until
    the next key comes: looks after every other task until it had kept the app's thread
    busy while the key's step went to pdb on the session's thread (the GIL passed at
    Python's 5 ms switch interval), and one look, scheduled as the key went to the focused
    widget, ran before the key's binding (which comes back to the app behind it): a
    callback through the app's queue and a turn of the other tasks (~0.4 ms of the key's
    way to its step in tmux), to find the key still being handled.
    Keys a step apart still each run, in order, and keys typed together still wait for the
    ones before them."""
    from textual.app import App

    from dgym_tui.tui.live.screen import LiveScreen

    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:4")
        seen: list[str] = []
        _note_looks(monkeypatch, seen)
        on_event, act = App.on_event, LiveScreen.act

        async def let_in(self, event):
            if isinstance(event, events.Key) and not event.is_forwarded:
                seen.append("in")
            await on_event(self, event)

        monkeypatch.setattr(App, "on_event", let_in)
        monkeypatch.setattr(LiveScreen, "act",
                            lambda self, action: seen.append("act") or act(self, action))
        before = len(session.turns)
        for _ in range(3):
            await asyncio.sleep(0.05)  # a key a while after the last one
            seen.clear()
            app.post_message(events.Key("n", "n"))
            await settle(app, pilot)
            # at most: a look as it arrives (the last key settled?) and one before it is
            # let in (when not: Pilot's waits leave messages in the widgets' queues); 5-7
            # before (one after each of the other tasks until it settled), then 3
            assert seen.count("look") <= 2, seen
            assert "in" in seen and "act" in seen, seen
            let_in_at = len(seen) - 1 - seen[::-1].index("in")
            assert seen[let_in_at:seen.index("act")] == ["in"], seen  # no look between
        assert _commands(session)[-3:] == ["n", "n", "n"] and len(session.turns) == before + 3
        burst(app, "nn")
        await settle(app, pilot)
        await settle(app, pilot)
        assert _commands(session)[-2:] == ["n", "n"] and len(session.turns) == before + 5
    app.close_session()
