"""A pdb stop redraws what changed and lays the screen out at most once (real pdb, Pilot).

Each layout of the screen costs every visible pane's scroll bars and a reflow of ~60
widgets; a pane rebuilt from scratch redraws all its rows. ``bench/bench_tui.py``
measures the time a stop takes; these tests pin down the behaviour that keeps it short.
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.text import Text
from textual.geometry import Region
from tui_helpers import SIZE, screen_text, settle, stop_at

from dgym_tui.tui import app as app_module
from dgym_tui.tui import screen_hold
from dgym_tui.tui.actions import pdb_call
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.widgets.status_bar import StatusLine, StatusSpinner


async def _run(app, pilot, command: str) -> int:
    """Run pdb ``command`` as a key does; return how many times the screen was laid out
    from the key to the app settled."""
    layouts = []
    app.screen.screen_layout_refresh_signal.subscribe(app, layouts.append)
    try:
        assert app.episode_screen.act(pdb_call(command))
        await settle(app, pilot)
    finally:
        app.screen.screen_layout_refresh_signal.unsubscribe(app)
    return len(layouts)


def _backgrounds(app, widget) -> list[set[str]]:
    """The background colours on the app's screen, per row of ``widget``'s content (scroll
    bars left out; the exported SVG's cell rectangles: 12.2 px wide, 24.4 px tall, from
    y 1.5)."""
    region = widget.scrollable_content_region
    rows: list[set[str]] = [set() for _ in range(region.height)]
    for fill, x, y, width in re.findall(
            r'<rect fill="([^"]+)" x="([^"]+)" y="([^"]+)" width="([^"]+)"',
            app.export_screenshot()):
        row, first = round((float(y) - 1.5) / 24.4), round(float(x) / 12.2)
        last = first + round(float(width) / 12.2)
        if region.y <= row < region.bottom and first < region.right and last > region.x:
            rows[row - region.y].add(fill)
    return rows


def _long_loop_app(make_repo, tmp_path) -> DgymApp:
    """The app on a calc repository whose test loops 40 times in ``average`` (a breakpoint
    at calc.py:4 stops 40 times)."""
    from tui_helpers import CALC, ENTRYPOINT

    from dgym_tui.core.env import RepoEnv
    from dgym_tui.episode.session import Session

    repo = make_repo({"calc.py": CALC, "test_calc.py": "from calc import average\n\n\n"
                      "def test_many():\n    assert average([4] * 40) == 4\n"})
    return DgymApp(session=Session(RepoEnv(repo, entrypoint=ENTRYPOINT), None,
                                   trajectory_path=tmp_path / "t.jsonl"))


class TestStopRedraw:
    async def test_next_updates_the_panes_in_place(self, calc_session):
        """``n`` in the same function: the variables keep their nodes (an expanded one stays
        open) and only the changed value's label changes; the stack keeps its rows and its
        highlight; the screen is laid out once for the echoed command and once for the
        answer (the console grew each time). ``u`` (another function) rebuilds the
        variables and moves the stack's marker in place. The tree is as tall as its rows
        (its pane's blank rows are not drawn with it)."""
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            variables, stack = app.query_one("#variables"), app.query_one("#stack")
            nodes = {node.data.name: node for node in variables.root.children}
            assert set(nodes) == {"xs", "total", "x"}
            nodes["xs"].expand()
            await settle(app, pilot)  # the tree grew a row: laid out before the count
            total_label = nodes["total"].label.plain
            options, highlighted = list(stack.options), stack.highlighted
            assert await _run(app, pilot, "n") <= 2  # the command echoed, then its answer
            assert variables.shown["total"] == "4"
            now = {node.data.name: node for node in variables.root.children}
            assert all(now[name] is nodes[name] for name in nodes)  # relabelled in place
            assert nodes["xs"].is_expanded
            assert nodes["total"].label.plain != total_label
            assert "total = 4" in nodes["total"].label.plain
            assert list(stack.options) == options and stack.highlighted == highlighted
            assert "calc.py:3" in str(stack.options[highlighted].prompt)
            rows = [stack.render_line(y).text for y in range(stack.size.height)]
            assert "calc.py:3" in rows[highlighted] and "calc.py:4" not in "".join(rows)
            assert "▶ average  calc.py:3" in screen_text(app)  # the row on screen, too

            # the variables tree, rebuilt at another height, is laid out once more after
            # the frame that drew it (Textual's Tree rebuilds its lines when resized)
            assert await _run(app, pilot, "u") <= 3
            assert stack.inspection.frame.function == "test_single"
            assert list(stack.options) == options  # same frames: the marker moved in place
            assert str(stack.options[stack.highlighted].prompt).startswith("▶")
            assert not str(stack.options[highlighted].prompt).startswith("▶")
            rows = [stack.render_line(y).text for y in range(stack.size.height)]
            assert [row.startswith("▶") for row in rows[:2]] == [False, True]
            screen = screen_text(app)
            assert "▶ test_single" in screen and "▶ average" not in screen
            colours = _backgrounds(app, stack)  # the highlight moved to row 1 on screen
            assert colours[1] != colours[0] and colours[0] == colours[2]
            stack.focus()
            await pilot.press("down")  # the cursor only: option 2 highlighted, no pdb call
            assert stack.highlighted == 2
            stack.show_inspection(stack.inspection)  # the same stop again: back to option 1
            await pilot.pause()
            colours = _backgrounds(app, stack)
            assert stack.highlighted == 1 and colours[2] == colours[0] != colours[1]
            assert not any(node is nodes["xs"] for node in variables.root.children)
            assert variables.size.height == len(variables.root.children)
            box = app.query_one("#variables-box")
            assert box.size.height > variables.size.height
            await pilot.click("#variables-box", offset=(2, box.size.height - 1))
            assert variables.has_focus  # a click below its rows focuses the tree

    async def test_hidden_transcript_is_drawn_when_shown(self, calc_session):
        """Turns added while the Transcript tab is hidden are drawn when it shows."""
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            body = app.transcript.query_one("#transcript-body")
            assert "b calc.py:4" not in str(body.render())  # not drawn while hidden
            assert "b calc.py:4" in app.transcript.text
            app.query_one("#side").active = "tab-transcript"
            await settle(app, pilot)
            assert "b calc.py:4" in str(body.render()) and "command=\"c\"" in str(body.render())

    async def test_the_console_grows_without_laying_the_screen_out(self, make_repo, tmp_path):
        """A line written to the console redraws the console and its scroll bar, not the
        whole screen (Textual lays the screen out when a scrolling widget's content grows):
        ``n`` in a long loop (the variables and the stack keep their rows) lays nothing out
        once the console's scroll bar is there, and the console shows the answer at its
        end."""
        app = _long_loop_app(make_repo, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            log = app.pdb_console.log_widget
            while not log.show_vertical_scrollbar:  # its appearance lays the screen out
                await _run(app, pilot, "n")
            for _ in range(3):
                assert await _run(app, pilot, "n") == 0
                assert log.scroll_y == log.max_scroll_y > 0  # the newest line in view
                assert log.vertical_scrollbar.window_virtual_size == len(log.lines)
            assert "calc.py(4)average()" in screen_text(app)  # the answer, drawn

    async def test_the_console_draws_only_its_new_rows(self, make_repo, tmp_path, monkeypatch):
        """A step's answer scrolls the full console up by the lines written (the echo and
        the answer): the rows that only moved keep their drawing, and only the rows showing
        the new lines are drawn again (Textual drew every row of the log: ~0.1 ms each).
        What the log shows is what a fresh drawing of every row gives."""
        app = _long_loop_app(make_repo, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            log = app.pdb_console.log_widget
            while log.max_scroll_y < log.size.height:  # full, and taller than it
                await _run(app, pilot, "n")
            drawn: list[int] = []
            render_line = log.render_line
            monkeypatch.setattr(log, "render_line",
                                lambda y: drawn.append(y) or render_line(y))
            full = Region(0, 0, *log.size)
            for _ in range(4):
                lines = len(log.lines)
                drawn.clear()
                await _run(app, pilot, "n")
                new = len(log.lines) - lines
                assert 0 < new < log.size.height and log.scroll_y == log.max_scroll_y
                assert sorted(drawn) == list(range(log.size.height - new, log.size.height))
                shown = [strip.text for strip in log.render_lines(full)]
                log._styles_cache.clear()  # every row drawn afresh
                assert shown == [strip.text for strip in log.render_lines(full)]
                assert shown[-1].strip() == log.lines[-1].text.strip()
            log.scroll_to(y=log.scroll_y - 3, animate=False, immediate=True)  # back 3 lines
            await pilot.pause()
            shown = [strip.text for strip in log.render_lines(full)]
            log._styles_cache.clear()
            assert shown == [strip.text for strip in log.render_lines(full)]
            assert shown[-1].strip() == log.lines[-4].text.strip()

    async def test_the_console_scroll_bar_is_drawn_when_its_cells_change(
            self, calc_session, monkeypatch):
        """At the end of a long console a step moves the scroll bar's thumb by less than
        an eighth of a cell: the bar's rows are not drawn again (Textual drew them at each
        step); they are what a fresh drawing gives, and a scroll that moves the thumb, or
        the mouse over the bar (another colour), draws it again."""
        from textual.widget import Widget

        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            log = app.pdb_console.log_widget
            for number in range(400):
                app.pdb_console.write(f"line {number}")
            await settle(app, pilot)
            bar = log.vertical_scrollbar
            crop = Region(0, 0, *bar.size)
            drawn: list[object] = []
            textual_lines = Widget.render_lines
            monkeypatch.setattr(Widget, "render_lines", lambda widget, region: (
                drawn.append(widget) if widget is bar else None) or textual_lines(widget,
                                                                                region))

            def fresh() -> list[str]:
                bar._drawn = None
                bar._styles_cache.clear()
                bar.refresh()
                return [list(strip) for strip in bar.render_lines(crop)]

            for command in ("n", "u", "d"):
                drawn.clear()
                await _run(app, pilot, command)
                assert log.scroll_y == log.max_scroll_y
                assert bar not in drawn  # the thumb stays in its cells
            shown = [list(strip) for strip in bar.render_lines(crop)]  # cells and styles
            assert shown == fresh()
            drawn.clear()
            log.scroll_home(animate=False, immediate=True)
            await pilot.pause()
            assert bar in drawn and [list(strip) for strip in bar.render_lines(crop)] != shown
            drawn.clear()
            await pilot.hover(bar)
            await pilot.pause()
            assert bar.mouse_over and bar in drawn

    async def test_a_quick_step_is_drawn_once_with_its_answer(self, calc_session, monkeypatch):
        """From the key to the step's end no frame is drawn (the echoed command, the busy
        label, the cleared input wait, up to ``screen_hold.GRACE``: set long here, so a slow
        machine does not change what is seen); then one frame shows the answer too."""
        monkeypatch.setattr(screen_hold, "GRACE", 60.0)
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            frames: list[int] = []  # the step number the status bar had at each frame
            display = app._display

            def spy(screen, update):
                frames.append(app.status.status.step)
                return display(screen, update)

            monkeypatch.setattr(app, "_display", spy)
            step = app.status.status.step
            assert app.episode_screen.act(pdb_call("n"))
            await settle(app, pilot)
            assert frames and step not in frames  # nothing drawn before the answer
            assert app.status.status.step == step + 1
            assert "total = 4" in screen_text(app)  # the answer's frame has the panes

    async def test_the_answer_is_drawn_in_one_frame(self, calc_session, monkeypatch):
        """The frame that first shows a quick step's end (the status bar's step count) also
        draws the source view's marker and the Debug tab: the screen is released once the
        widgets have handled the step's changes, not a frame (40-60 ms) before some."""
        monkeypatch.setattr(screen_hold, "GRACE", 60.0)
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            frames: list[tuple[int, set[int]]] = []  # (step shown, rows drawn) per frame
            display = app._display

            def spy(screen, update):
                if update is not None and not app._batch_count:
                    frames.append((app.status.status.step, {y for y, _, _ in update.spans}))
                return display(screen, update)

            monkeypatch.setattr(app, "_display", spy)
            source, stack = app.source_view.region, app.query_one("#stack").region
            for _ in range(4):
                step = app.status.status.step
                assert app.episode_screen.act(pdb_call("n"))
                await settle(app, pilot)
                rows = next(rows for shown, rows in frames if shown == step + 1)
                assert rows & set(range(source.y, source.bottom)), "source drawn later"
                assert rows & set(range(stack.y, stack.bottom)), "stack drawn later"

    async def test_no_collection_between_a_quick_step_and_its_frame(self, calc_session,
                                                                   monkeypatch):
        """The garbage collector's passes wait, from a quick step's start to the frame that
        shows its answer (about one young-generation pass an ``n``, which ran wherever the
        allocations reached the threshold: often in the key's way to the screen); it runs
        again after that frame."""
        monkeypatch.setattr(screen_hold, "GRACE", 60.0)
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            seen: list[str] = []  # "gcN" at each collection (any thread), "frame" at frames
            display = app._display

            def spy(screen, update):
                seen.append("frame")
                return display(screen, update)

            def collected(phase, info):
                if phase == "start":
                    seen.append(f"gc{info['generation']}")

            monkeypatch.setattr(app, "_display", spy)
            gc.callbacks.append(collected)
            try:
                for number in range(8):
                    seen.clear()
                    assert app.episode_screen.act(pdb_call("n"))
                    await settle(app, pilot)
                    assert "frame" in seen, (number, seen)
                    before = seen[:seen.index("frame")]
                    assert not any(s.startswith("gc") for s in before), (number, seen)
                    assert gc.isenabled(), number
            finally:
                gc.callbacks.remove(collected)

    async def test_a_step_draws_only_the_rows_that_changed(self, calc_session, monkeypatch):
        """A step's start and end (the busy label set and cleared) repaint no whole screen:
        each frame from the key to the settled answer draws the changed regions only (a
        repaint of the screen drew every widget again: half of a stop's frame)."""
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            compositor = app.screen._compositor
            kinds: list[str] = []
            full, partial = compositor.render_full_update, compositor.render_partial_update
            monkeypatch.setattr(compositor, "render_full_update",
                                lambda *a, **k: kinds.append("full") or full(*a, **k))
            monkeypatch.setattr(compositor, "render_partial_update",
                                lambda *a, **k: kinds.append("partial") or partial(*a, **k))
            for command in ("n", "n"):
                assert app.episode_screen.act(pdb_call(command))
                await settle(app, pilot)
            assert "partial" in kinds and "full" not in kinds
            assert "total = 4" in screen_text(app)

    async def test_a_quick_step_starts_neither_label_nor_spinner(self, calc_session,
                                                                monkeypatch):
        """A step that ends within ``screen_hold.GRACE`` never shows its busy label or
        starts the spinner: both were started and stopped unseen (two timers), and the
        answer's frame drew the spinner's cells for nothing. Its frame still shows the new
        step count; the busy state itself (keys typed meanwhile wait) is there from the
        key on."""
        monkeypatch.setattr(screen_hold, "GRACE", 60.0)
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            labels: list[str | None] = []
            set_busy = app.status.set_busy
            monkeypatch.setattr(app.status, "set_busy",
                                lambda label, limit=None: labels.append(label)
                                or set_busy(label, limit))
            spinner = app.query_one(StatusSpinner)
            spun: list[bool] = []
            monkeypatch.setattr(spinner, "watch_spinning",
                                lambda spinning: spun.append(spinning))
            for _ in range(2):
                step = app.status.status.step
                assert app.episode_screen.act(pdb_call("n"))
                assert app.episode_screen.busy == "pdb"  # keys typed now wait for the step
                await settle(app, pilot)
                assert app.status.status.step == step + 1
                assert f"step {step + 1}" in screen_text(app)
            assert not any(labels) and not spun  # never shown, never spun
            assert "pdb… " not in screen_text(app)

    async def test_a_persons_step_sends_no_step_started(self, calc_session):
        """The session's thread posts no StepStarted for a person's step (the busy label
        already names its tool): each message posted mid-step woke the app's thread,
        which then held the GIL while the step went on to pdb. A step whose label names
        something else (an approved proposal: ``approved step``) still gets it."""
        from dgym_tui.tui.messages import StepStarted

        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            screen = app.episode_screen
            posted: list[object] = []
            post = screen._bridge.post
            screen._bridge.post = lambda message: posted.append(message) or post(message)
            assert screen.act(pdb_call("n"))
            await settle(app, pilot)
            assert posted and not any(isinstance(m, StepStarted) for m in posted)
            assert "total = 4" in screen_text(app)
            screen.busy = "approved step"
            assert not screen._step_shown(pdb_call("n"))
            screen.busy = ""
            assert not screen._step_shown(pdb_call("n"))

    async def test_the_step_is_handed_over_before_its_echo(self, calc_session, monkeypatch):
        """A key's step is taken by the session's thread before the key's handler returns
        (``STEP_HEAD_START``, set long here so that a slow machine does not change what is
        seen), so the command reaches pdb first. The echo is not written meanwhile: it
        waits for the answer (the screen is held until then anyway), and the two are
        written together, the console's size followed once (~0.25 ms of Textual's scroll
        updates each time), the echo first."""
        from tui_helpers import console_text

        from dgym_tui.tui.live import screen as live_screen

        monkeypatch.setattr(live_screen, "STEP_HEAD_START", 30.0)
        monkeypatch.setattr(screen_hold, "GRACE", 60.0)
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            log, screen = app.pdb_console.log_widget, app.episode_screen
            sizes: list[object] = []
            follow = log._scroll_update
            monkeypatch.setattr(log, "_scroll_update", lambda size: sizes.append(size)
                                or follow(size))
            lines = len(log.lines)
            assert screen.act(pdb_call("n"))
            assert any(call.taken.is_set() for call in screen._followups)  # the head start
            assert len(log.lines) == lines  # the echo waits for the answer
            await settle(app, pilot)
            text = console_text(app)
            assert text.rindex('› pdb(command="n")') < text.rindex("calc.py(3)average()")
            assert len(log.lines) >= lines + 3 and len(sizes) == 1

    async def test_console_and_variables_compute_their_style_once_a_frame(self, calc_session,
                                                                        monkeypatch):
        """The console's and the variables' lines are drawn with their style computed once
        per ``render_lines`` (Textual's RichLog and Tree ask for it at each line: a walk
        of the widget's ancestors, half of the console's drawing); the lines are the same
        as Textual draws them."""
        from textual.dom import DOMNode
        from textual.geometry import Region
        from textual.widgets import RichLog, Tree

        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            calls: list[object] = []
            textual_style = DOMNode.rich_style
            monkeypatch.setattr(DOMNode, "rich_style", property(
                lambda node: calls.append(node) or textual_style.fget(node)))
            for widget, base in ((app.pdb_console.log_widget, RichLog),
                                 (app.query_one("#variables"), Tree)):
                crop = Region(0, 0, *widget.size)
                widget.refresh()
                calls.clear()
                ours = widget.render_lines(crop)
                assert len(ours) == widget.size.height > 1 and calls.count(widget) == 1
                widget.refresh()
                calls.clear()
                theirs = base.render_lines(widget, crop)  # Textual's own, line by line
                assert calls.count(widget) >= widget.size.height
                assert [list(strip) for strip in ours] == [list(strip) for strip in theirs]

    async def test_a_relabelled_variable_keeps_the_trees_styles(self, make_repo, tmp_path,
                                                                monkeypatch):
        """A step that relabels variables in place draws their rows with the component
        styles the tree had (Textual dropped them at each refresh: four walks of the
        ancestors' styles a frame); the rows are the ones a drawing from scratch gives,
        also after a change of styles (the tree focused: its cursor row's style)."""
        from textual.widget import Widget

        app = _long_loop_app(make_repo, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            variables = app.query_one("#variables")
            computed: list[tuple[str, ...]] = []  # the component styles computed
            textual_style = Widget.get_component_rich_style
            monkeypatch.setattr(Widget, "get_component_rich_style", lambda widget, *names,
                                **kwargs: (widget is variables
                                           and names not in widget._rich_style_cache
                                           and computed.append(names))
                                or textual_style(widget, *names, **kwargs))
            crop = Region(0, 0, *variables.size)

            def fresh() -> list[list[object]]:
                variables._rich_style_cache.clear()
                variables._clear_line_cache()  # the tree's drawn lines
                variables.refresh()
                return [list(strip) for strip in variables.render_lines(crop)]

            for focus in (False, True):
                if focus:
                    variables.focus()
                    await settle(app, pilot)
                fresh()  # the styles computed, as the last frame had them
                for _ in range(2):  # on line 3 after line 4: total changed
                    computed.clear()
                    await _run(app, pilot, "n")  # its frame drew the relabelled rows
                    if variables.changed:
                        break
                assert variables.changed == {"total"} and computed == []
                drawn = [list(strip) for strip in variables.render_lines(crop)]
                assert drawn == fresh() and computed  # (the drawing from scratch computes)

    async def test_a_relabelled_variable_is_drawn_without_a_callback(self, make_repo,
                                                                      tmp_path, monkeypatch):
        """A step that relabels variables refreshes their rows at once, not through the
        tree's ``call_later`` (Textual's ``TreeNode.set_label``: a message and a turn of
        the event loop per changed variable); the node ends as Textual's ``set_label``
        leaves it (label, update count) and the pane shows the new value."""
        app = _long_loop_app(make_repo, tmp_path)
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            variables = app.query_one("#variables")
            later: list[object] = []
            call_later = variables.call_later
            monkeypatch.setattr(variables, "call_later", lambda *args, **kwargs: (
                getattr(args[0], "__name__", "") == "_refresh_node" and later.append(args[0]))
                or call_later(*args, **kwargs))  # (Pilot's own waits call it too)
            for _ in range(2):  # on line 3 after line 4: total changed
                later.clear()
                await _run(app, pilot, "n")
                if variables.changed:
                    break
            assert variables.changed == {"total"} and later == []
            node = next(n for n in variables.root.children if str(n.label).startswith("total"))
            assert f"total = {variables.shown['total']}" in screen_text(app)
            # Textual's own set_label leaves the node as the pane's relabel does
            updates = node._updates
            node.set_label(Text("total = 1"))
            theirs = (node._updates - updates, node.label)
            variables._relabel(node, Text("total = 1"))
            assert (node._updates - updates - 1, node.label) == theirs == (1, Text("total = 1"))
            assert later == [variables._refresh_node]  # Textual's, once

    async def test_a_source_key_runs_its_binding_where_it_is_focused(self, calc_session,
                                                                     monkeypatch):
        """``n`` in the focused source view runs its step without going up through the
        containers and the screen to the app (a queue and a turn of the event loop each);
        a key with no binding still goes up to the app."""
        from textual.app import App
        from textual.widget import Widget

        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            app.source_view.focus()
            await settle(app, pilot)
            went_up: list[str] = []  # the nodes above the source view that got the key
            widget_key, app_key = Widget._on_key, App._on_key

            async def widget_spy(widget, event):
                if widget is not app.source_view:
                    went_up.append(type(widget).__name__)
                await widget_key(widget, event)

            async def app_spy(this, event):
                went_up.append("App")
                await app_key(this, event)

            monkeypatch.setattr(Widget, "_on_key", widget_spy)
            monkeypatch.setattr(App, "_on_key", app_spy)
            step = app.status.status.step
            await pilot.press("n")
            await settle(app, pilot)
            assert app.status.status.step == step + 1 and went_up == []
            await pilot.press("y")  # no binding here
            await settle(app, pilot)
            assert went_up and went_up[-1] == "App"

    async def test_a_steps_messages_stay_on_the_screen(self, calc_session, monkeypatch):
        """The messages of an ``n`` the screen handles (the source view's command, the
        answer's ``TurnRecorded``, the call's ``CallDone``) are not dispatched again on
        the app's queue (Textual bubbles a message to the app unless it is stopped: a
        queue and a turn of its event loop each, with nothing to do there); the key
        itself still reaches the app first."""
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            on_app: list[str] = []
            dispatch = DgymApp._dispatch_message

            async def spy(this, message):
                on_app.append(type(message).__name__)
                return await dispatch(this, message)

            monkeypatch.setattr(DgymApp, "_dispatch_message", spy)
            step = app.status.status.step
            await pilot.press("n")
            await settle(app, pilot)
            assert app.status.status.step == step + 1 and "Key" in on_app
            assert not {"PdbCommand", "TurnRecorded", "CallDone"} & set(on_app), on_app

    async def test_a_step_looks_up_no_pane(self, calc_session, monkeypatch):
        """An ``n`` and its answer reach the panes they change (the status line, the
        console and its input, the Debug tab's panes, the source view, the transcript)
        without a ``query_one`` each: each query was a walk of the DOM at every step. The
        panes still show the step."""
        from textual.dom import DOMNode

        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            queried: list[object] = []
            query_one = DOMNode.query_one
            monkeypatch.setattr(DOMNode, "query_one", lambda node, *args, **kwargs:
                                queried.append(args[0]) or query_one(node, *args, **kwargs))
            step = app.status.status.step
            await pilot.press("n")
            await settle(app, pilot)
            assert app.status.status.step == step + 1 and queried == []
            assert f"step {step + 1}" in screen_text(app)

    async def test_the_console_keeps_its_completions_for_the_same_names(self, calc_session):
        """A stop with the same variables' names as the last (most steps) keeps the
        console's suggester; other names make a new one that completes them."""
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            line = app.pdb_console.input
            line.complete_names(["total", "xs"])
            kept = line.suggester
            line.complete_names(["total", "xs"])
            assert line.suggester is kept
            line.complete_names(["count"])
            assert line.suggester is not kept
            assert await line.suggester.get_suggestion("p cou") == "p count"

    async def test_a_slow_step_shows_its_busy_label_after_the_grace(self, calc_session,
                                                                   monkeypatch):
        """A step still running after ``screen_hold.GRACE`` is drawn busy: the echoed
        command and the label and spinner, while it runs."""
        monkeypatch.setattr(screen_hold, "GRACE", 0.05)
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await stop_at(app, pilot, "calc.py:4")
            assert app.episode_screen.act(pdb_call("p __import__('time').sleep(3) or 7"))
            for _ in range(400):
                await pilot.pause(0.01)
                shown = screen_text(app)
                if "pdb… " in shown or not app.busy:
                    break
            assert app.busy and "pdb… " in shown and 'sleep(3)' in shown
            await settle(app, pilot)
            assert "pdb… " not in screen_text(app)

    async def test_busy_changes_no_size(self, calc_session):
        """The busy label and spinner come and go without any widget changing size; the
        idle spinner draws no frames."""
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            line, spinner = app.query_one(StatusLine), app.query_one(StatusSpinner)
            regions = (line.region, spinner.region)
            assert spinner.auto_refresh is None and "tests" in str(line.render())
            app.status.set_busy("eval")
            await pilot.pause()
            assert (line.region, spinner.region) == regions
            assert str(line.render()).endswith(" eval… ") and spinner.auto_refresh
            app.status.set_busy(None)
            await pilot.pause()
            assert (line.region, spinner.region) == regions
            assert "eval" not in str(line.render()) and spinner.auto_refresh is None

    async def test_start_up_objects_leave_the_full_collections(self, calc_session):
        """Once the episode started, the objects made so far (modules, widgets) are out of
        the collector's full passes (each re-scanned all of them: ~80 ms, a stop in ~15
        paid it); they go back when the app closes."""
        app = DgymApp(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert gc.get_freeze_count() > 10_000
            await pilot.press("q")
        assert gc.get_freeze_count() == 0

    async def test_collector_paused_from_load_to_the_first_frame(self, calc_session):
        """The collector is off while the first screen is mounted and on again once it
        was drawn (and after an app that never drew a frame); a collector the program
        had disabled stays disabled."""
        frames = []

        class Watched(DgymApp):
            CSS_PATH = Path(app_module.__file__).with_name(DgymApp.CSS_PATH)

            def on_mount(self) -> None:
                frames.append(("mount", gc.isenabled()))

            def _display(self, screen, update) -> None:
                super()._display(screen, update)
                frames.append(("frame", gc.isenabled()))

        assert gc.isenabled()
        app = Watched(session=calc_session())
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            assert gc.isenabled()
        assert ("mount", False) in frames and frames[-1] == ("frame", True)
        gc.disable()
        try:
            app = DgymApp(session=calc_session())
            async with app.run_test(size=SIZE) as pilot:
                await settle(app, pilot)
                assert not gc.isenabled()
        finally:
            gc.enable()


_FPS = """
import dgym_tui.tui
import textual.constants, textual.screen
print(textual.constants.MAX_FPS, round(1 / textual.screen.UPDATE_PERIOD))
"""


def _frame_rate(**env) -> list[int]:
    """Textual's frame rate and screen update rate in a fresh interpreter that imports the
    app's package before Textual, with ``env`` added to (or, for None, taken out of) the
    environment."""
    environ = {k: v for k, v in os.environ.items() if k not in env}
    environ.update({k: v for k, v in env.items() if v is not None})
    out = subprocess.run([sys.executable, "-c", _FPS], capture_output=True, text=True,
                         env=environ, timeout=60, check=True)
    return [int(x) for x in out.stdout.split()]


def test_screen_updates_at_the_app_frame_rate_unless_the_user_set_one():
    """A stop's panes wait for the screen's next update tick (1 / TEXTUAL_FPS s): the app
    raises Textual's default of 60 to 120; a TEXTUAL_FPS the user set is kept."""
    from dgym_tui.tui import FRAMES_PER_SECOND

    assert FRAMES_PER_SECOND == 120
    assert _frame_rate(TEXTUAL_FPS=None) == [120, 120]
    assert _frame_rate(TEXTUAL_FPS="30") == [30, 30]


WIDE = {"wide.py": "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s\n",
        "test_wide.py": "from wide import total\n\n\ndef test_total():\n"
                        "    assert total(list(range(1000, 1040))) == 0\n"}


async def test_a_value_wider_than_the_variables_pane_is_cut(make_repo, open_repo):
    """A frame whose value is wider than the variables pane: its line is cut at the pane's
    edge, with no horizontal scroll bar. With one, the pane's height and its scroll bars
    took Textual a layout more per stop to settle, drawn after the stop's frame (the
    pane's text moved by two columns and back): 4 layouts from the key, now 3 (the echo,
    the answer, the tree's rebuild at another height)."""
    from tui_helpers import ENTRYPOINT

    app = DgymApp(session=open_repo(make_repo(WIDE), entrypoint=ENTRYPOINT))
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "wide.py:4")
        variables = app.query_one("#variables")
        for command in ("u", "d", "u", "d"):
            assert await _run(app, pilot, command) <= 3
            assert not variables.show_horizontal_scrollbar
        assert set(variables.shown) == {"xs", "s", "x"}
        assert variables.virtual_size.width > variables.size.width  # the line is wider
        assert variables.size.height == 3  # a row each, none for a scroll bar
        rows = [variables.render_line(y).text for y in range(3)]
        xs = next(row for row in rows if "xs = [1000, 1001" in row)
        assert len(xs) == variables.size.width  # cut at the pane's edge
