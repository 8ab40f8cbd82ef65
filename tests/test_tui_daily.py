"""Daily-use rough edges of the app, through Pilot: ctrl+c in the code editor keeps the
edit, an eval that timed out is named as such (not "0 tests"), and the default task text
("the tests fail") is corrected on screen when every test passes at the start."""

from __future__ import annotations

import os
import shutil

import pytest
from tui_helpers import FIX, SIZE, console_text, settle

from dgym_tui.tui.app import DgymApp


async def test_ctrl_c_in_the_editor_keeps_the_edit(calc_session):
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.source_view.go_to(5)
        app.source_view.focus()
        await pilot.press("E")
        await settle(app, pilot)
        area = app.screen.query_one("#code-edit")
        area.focus()
        area.move_cursor((0, len(area.document.lines[0])))
        await pilot.press("space", "#", "x")
        await pilot.press("ctrl+c")
        await settle(app, pilot)
        assert app.is_running and type(app.screen).__name__ == "CodeEditScreen"
        assert area.document.lines[0].endswith(" #x")
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "LiveScreen"
    app.close_session()


async def test_an_eval_that_timed_out_says_so(calc_session):
    session = calc_session(entrypoint="python -c 'import time; time.sleep(30)'",
                           eval_timeout=2)
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        text = console_text(app)
        assert "the entrypoint timed out after 2 s" in text
        assert "0 tests" not in text
    app.close_session()


async def test_every_test_passing_at_the_start_is_said(calc_repo, calc_session):
    source = calc_repo / "calc.py"
    source.write_text(source.read_text().replace("    return total / len(xs[1:])", FIX))
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "every test passes now (2/2)" in console_text(app)
    app.close_session()


async def test_an_edited_proposal_gets_its_header_line(calc_session, llm_server):
    import json

    from tui_helpers import stub_agent

    llm_server.script([{"content": "a breakpoint", "usage": {"prompt_tokens": 10,
                                                             "completion_tokens": 2},
                        "tool_calls": [{"name": "pdb", "arguments": {"command": "b calc.py:5"}}]}])
    session = calc_session(stub_agent(llm_server), "approve")
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("TextArea").text = json.dumps(
            {"name": "pdb", "arguments": {"command": "b calc.py:3"}})
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert session.turns[-1].decision == "edited"
        assert '› pdb(command="b calc.py:3") (edited)' in console_text(app)
        await pilot.press("t")
        await pilot.pause()
    app.close_session()


async def test_a_folder_with_test_py_gets_it_as_entrypoint(tmp_path):
    """``dgym-tui .`` on the common ``test.py`` layout: pytest is given test.py by name
    (it collects only test_*.py by itself), and the console's first eval names it."""
    from tui_helpers import CALC, TESTS

    from dgym_tui.benchmarks.local import detect_entrypoint, folder_task
    from dgym_tui.launch.open import open_session

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text(CALC)
    (repo / "test.py").write_text(TESTS)
    task = folder_task(repo)
    assert task.entrypoint == "python -m pytest -q test.py"
    (repo / "tests").mkdir()
    assert detect_entrypoint(repo) == "python -m pytest -q"  # pytest finds tests/ itself
    (repo / "tests").rmdir()
    session = open_session(task, trajectory=tmp_path / "t.jsonl", overrides={"terminal": "local"})
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        assert "Initial eval of `python -m pytest -q test.py`" in console_text(app)
        assert "tests 0/2" in app.status.text
        assert "0 tests" not in console_text(app)
    app.close_session()


async def test_the_folder_of_saved_sessions_opens_the_run_browser(calc_repo, tmp_path,
                                                                 monkeypatch):
    """``dgym-tui ~/.local/share/dgym-tui/runs``: the folder holds the app's saved sessions;
    it opens the run browser on them (one row per trajectory, enter replays it) instead of
    copying the folder as a repository to debug."""
    from test_tui_app import _record_episode

    import dgym_tui.tui.screens.runs as runs_screen
    from dgym_tui.cli.tui import main
    from dgym_tui.runs.reviews import append_review
    from dgym_tui.tui.screens.review import _patch_of

    runs = tmp_path / "runs"
    runs.mkdir()
    await _record_episode(calc_repo, runs / "calc-1.jsonl")
    await _record_episode(calc_repo, runs / "calc-2.jsonl")
    (runs / "notes.jsonl").write_text('{"not": "a trajectory"}\n')
    append_review(runs, "calc-1.jsonl", "accept", reviewer="ann")
    seen = []
    monkeypatch.setattr(runs_screen, "browse_runs", lambda paths, theme, *rest: seen.append(paths) or 0)
    assert main([str(runs)]) == 0
    assert seen == [[runs]]
    app = runs_screen.RunsApp([runs])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        rows = app.screen.shown
        assert [(r.episode, r.task, r.state, r.resolved, r.steps, r.verdict) for r in rows] == [
            ("calc-1.jsonl", "calc", "done", True, 4, "accept"),
            ("calc-2.jsonl", "calc", "done", True, 4, "")]
        assert "-" + "    return total / len(xs[1:])" in _patch_of(rows[1])
        await pilot.press("down", "enter")
        await pilot.pause()
    row = app.return_value
    assert row.trajectory == runs / "calc-2.jsonl"
    viewer = runs_screen.browsed_replay(row)
    async with viewer.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert "replay step 0/4" in viewer.status.text


def test_llm_config_flag_names_the_llm_yaml(calc_repo, tmp_path, llm_server, monkeypatch):
    """``dgym-tui PATH --agent debug_agent --llm stub --llm-config FILE`` reads FILE (not the
    default llm.yaml, which does not exist here)."""
    from scripted import stub_agent_files

    from dgym_tui.cli.tui import build_parser, policy_from_args

    monkeypatch.delenv("DGYM_LLM_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nowhere"))
    _agent, llm_yaml = stub_agent_files(tmp_path, llm_server)
    args = build_parser().parse_args([str(calc_repo), "--agent", "debug_agent", "--llm", "stub",
                                      "--llm-config", str(llm_yaml)])
    policy = policy_from_args(args)
    assert policy.llm.config.api_base == llm_server.url


async def test_the_keys_dialog_scrolls_to_its_end_and_lists_the_readme_keys(calc_session):
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        screen = app.screen
        assert type(screen).__name__ == "HelpScreen"
        keys = " ".join(key for _, section in screen.sections for key, _text in section)
        for key in ("G", ";", ",", ".", "v (variables)", "z", "[ / ]", ":41"):
            assert key in keys, key
        titles = [title for title, _ in screen.sections]
        assert "Debug tab (side column)" in titles
        scroll = screen.query_one("VerticalScroll")
        assert scroll.region.bottom <= 36 and scroll.region.y >= 0  # all of it on screen
        scroll.scroll_end(animate=False)
        await pilot.pause()
        assert scroll.scroll_y == scroll.max_scroll_y
        assert scroll.region.bottom <= 36
        await pilot.press("escape")
        await pilot.pause()
    app.close_session()


async def test_b_and_e_on_a_binary_file_say_why_nothing_happens(calc_repo, calc_session):
    (calc_repo / "data.bin").write_bytes(b"\x00\xff\x00binary")
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.episode_screen.open_file("data.bin", 1)
        await settle(app, pilot)
        app.source_view.focus()
        await pilot.press("b")
        await pilot.press("E")
        await settle(app, pilot)
        messages = [n.message for n in app._notifications]
        assert any(m.startswith("no breakpoint:") and "binary" in m for m in messages), messages
        assert any(m.startswith("nothing to edit:") and "binary" in m for m in messages), messages
        assert not session.turns  # nothing ran
    app.close_session()


async def test_notifications_leave_the_console_input_visible(calc_session):
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await settle(app, pilot)
        for number in range(3):
            app.notify(f"a long notification number {number} " * 3, timeout=30)
        await pilot.pause(0.3)
        toasts = list(app.screen.query("Toast"))
        assert toasts
        box = app.pdb_console.input.region
        assert not any(toast.region.overlaps(box) for toast in toasts)
    app.close_session()


async def test_an_expanded_variable_stays_expanded_when_a_new_local_appears(calc_session):
    from tui_helpers import stop_at

    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:2")  # locals: xs only
        variables = app.query_one("#variables")

        def node(name):
            return next(n for n in variables.root.children
                        if n.data is not None and n.data.name == name)

        assert node("xs").children  # a list: expandable
        node("xs").expand()
        await pilot.pause()
        app.source_view.focus()
        await pilot.press("n")  # total = 0: a new local, the tree is rebuilt
        await settle(app, pilot)
        assert "total" in variables.shown
        assert node("xs").is_expanded
    app.close_session()


async def test_w_is_recorded_in_the_trajectory(calc_repo, calc_session, tmp_path):
    from dgym_tui.core.types import ToolCall
    from dgym_tui.episode.trajectory import read_trajectory

    out = tmp_path / "applied.jsonl"
    session = calc_session(out=out)
    app = DgymApp(session=session, ask_apply=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
        await settle(app, pilot)
        app.source_view.focus()
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert FIX in (calc_repo / "calc.py").read_text()
        await pilot.press("q")
        await pilot.pause()
    footer = read_trajectory(out).footer
    assert [(a["after_step"], a["files"]) for a in footer["applied_to_source"]] == [(1, ["calc.py"])]


async def test_w_after_the_end_is_recorded_and_replay_shows_it(calc_repo, calc_session,
                                                                tmp_path):
    """Issue 26, bug 14: the apply the app offers once the episode ended (after submit)
    came after the footer and was not recorded; it is an 'applied' line after the footer
    now, read back into applied_to_source, and the replay and the run browser's step list
    say so."""
    from textual.widgets import Static

    from dgym_tui.core.types import ToolCall
    from dgym_tui.episode.trajectory import read_trajectory
    from dgym_tui.tui.replay_model import ReplayModel
    from dgym_tui.tui.screens.episode import EpisodePane, EpisodeScreen

    out = tmp_path / "submitted.jsonl"
    session = calc_session(out=out)
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("submit", {}))
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ConfirmScreen"  # the end-of-episode offer
        await pilot.press("y")
        await settle(app, pilot)
        assert FIX in (calc_repo / "calc.py").read_text()
    app.close_session()
    traj = read_trajectory(out)
    assert traj.footer["reason"] == "submitted"
    assert [(a["after_step"], a["files"]) for a in traj.footer["applied_to_source"]] == [
        (2, ["calc.py"])]
    replay = DgymApp(replay=ReplayModel(traj))
    async with replay.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("dollar_sign")
        await pilot.pause()
        assert "applied (w)" in replay.status.text
        assert "applied to the original repository after step 2 (w): calc.py" in \
            console_text(replay)
        replay.push_screen(EpisodeScreen(out, "calc"))
        await pilot.pause()
        pane = replay.screen.query_one(EpisodePane)
        assert "applied to the original (w)" in str(pane.query_one(".pane-title", Static).render())
        pane.table.move_cursor(row=1)
        await pilot.pause()
        assert "after step 2 (w): calc.py" in str(pane.query_one(".pane-step Static").render())


async def test_p_then_z_shows_the_diff_on_the_whole_screen(calc_session):
    """A long diff line is read without the w dialog: p shows the Diff tab and focuses it,
    z zooms the side column to the whole screen (issue 26, bug 7)."""
    from dgym_tui.core.types import ToolCall

    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        long_line = "    return total / len(xs)  # " + "a long comment " * 8
        app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5,
                                     "new_code": long_line}))
        await settle(app, pilot)
        app.source_view.focus()
        await pilot.press("p")
        await pilot.pause()
        await pilot.press("z")
        await pilot.pause()
        side = app.query_one("#side")
        assert app.screen.maximized is side
        assert side.region.width >= 118
        await pilot.press("z")
        await pilot.pause()
        assert app.screen.maximized is None
        console = app.pdb_console
        console.log_widget.focus()  # the console's scroll-back: z zooms the console
        await pilot.pause()
        await pilot.press("z")
        await pilot.pause()
        assert app.screen.maximized is console and console.region.height >= 30
    app.close_session()


async def test_the_files_show_while_a_long_first_eval_runs(calc_session):
    """Issue 26, bug 11: while the first eval runs (up to the eval timeout) the file tree
    and the source view were empty; they show at once, the status bar counts the eval's
    seconds against its timeout, and the console's input line says what runs."""
    from dgym_tui.tui.widgets.file_tree import FileTree
    from dgym_tui.tui.widgets.status_bar import StatusLine

    session = calc_session(entrypoint="python -c 'import time; time.sleep(60)'",
                           eval_timeout=8)
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        tree = app.query_one(FileTree)
        busy = app.query_one(StatusLine)
        for _ in range(200):  # the copy is made in well under the eval's 8 s
            await pilot.pause(0.05)
            if app.source_view.path is not None and "/8 s" in busy.render().plain:
                break
        assert not app.started  # the eval still runs
        assert app.source_view.path == "calc.py" and app.source_view.lines[0] == "def average(xs):"
        assert tree._files == ["calc.py", "test_calc.py"]
        assert "first eval…" in busy.render().plain and "/8 s" in busy.render().plain
        app.episode_screen.open_file("test_calc.py", 1)  # a file picked in the tree opens while the eval runs
        for _ in range(100):
            await pilot.pause(0.05)
            if app.source_view.path == "test_calc.py":
                break
        assert app.source_view.path == "test_calc.py" and not app.started
        notice = app.pdb_console.input.placeholder
        assert notice.startswith("the first eval runs (stopped after 8 s): python -c")
        await settle(app, pilot)
        assert app.started and "the entrypoint timed out after 8 s" in console_text(app)
        assert app.pdb_console.input.placeholder.startswith("p x, n,")
    app.close_session()


async def test_pytest_separator_lines_fit_the_console(calc_session):
    """Issue 26, bug 14: the eval runs 80 columns wide (what the agent reads); at 80x24 the
    console is narrower and each '==== FAILURES ====' line wrapped onto two lines. They
    are fitted to the console's width, also after a resize."""
    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for size in ((80, 24), (70, 24)):
            await pilot.resize_terminal(*size)
            await settle(app, pilot)
            log = app.pdb_console.log_widget
            width = log.scrollable_content_region.width
            lines = [strip.text.rstrip() for strip in log.lines]
            rules = [n for n, line in enumerate(lines) if "FAILURES" in line]
            assert rules, lines
            for n in rules:
                assert lines[n].startswith("=") and lines[n].endswith("="), lines[n:n + 2]
                assert len(lines[n]) <= width and not lines[n + 1].startswith("=")
            assert any(line.startswith("___") and "test_single" in line for line in lines)
    app.close_session()


async def test_escape_then_a_key_typed_at_once_leaves_the_console(calc_session):
    """Issue 26: 'Escape sometimes does not leave the console'. Escape and a key typed
    quickly after it reach the app as one alt+KEY (in tmux within its escape-time, 500 ms):
    the key was typed into the console, which kept the focus. It is Escape, then the key:
    the source view gets the focus and the key (j moves its cursor)."""
    from textual import events

    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        view = app.source_view
        view.go_to(1)
        await pilot.press("i", "p", "space", "1")
        await pilot.pause()
        console_input = app.pdb_console.input
        assert app.focused is console_input and console_input.value == "p 1"
        app.post_message(events.Key("alt+j", "j"))  # what the terminal sent for Esc, j
        await pilot.pause()
        await pilot.pause()
        assert console_input.value == "p 1"
        assert app.focused is view and view.cursor_line == 2
        app.post_message(events.Key("alt+shift+g", "G"))  # a key while the source has it
        await pilot.pause()
        assert app.focused is view
    app.close_session()


async def test_after_take_over_the_next_i_opens_the_console(calc_session, llm_server):
    """Issue 26: after t the console had the focus, so the next i was typed into it."""
    from tui_helpers import stub_agent

    llm_server.script([{"content": "stop there", "tool_calls": [
        {"name": "pdb", "arguments": {"command": "b calc.py:5"}}]}])
    session = calc_session(stub_agent(llm_server), "approve")
    app = DgymApp(session=session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        await pilot.press("t", "i")
        await pilot.pause()
        assert session.mode == "human"
        assert app.focused is app.pdb_console.input and app.pdb_console.input.value == ""
    app.close_session()


async def test_a_command_after_a_rewrite_says_pdb_restarted_at_the_top(calc_session):
    """Issue 26: after a rewrite under a stopped pdb, `p total` answered NameError with no
    word why: pdb restarts on the changed code at the program's top. The console says so
    before the command's answer."""
    from tui_helpers import stop_at, type_console

    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await stop_at(app, pilot, "calc.py:5")
        await type_console(app, pilot, 'rewrite path=calc.py start=5 end=5 '
                                       '"new_code=    return total / len(xs)"')
        await type_console(app, pilot, "p total")
        text = console_text(app)
        note = text.index("pdb restarts on the changed code, at the top of the program: "
                          "`p total` runs there")
        assert "NameError" in text[note:]
        await type_console(app, pilot, "c")  # back at the breakpoint: no note
        await type_console(app, pilot, "p total")
        assert console_text(app).count("at the top of the program") == 1
    app.close_session()


async def test_replay_debug_tab_opens_and_says_why_it_is_empty(tmp_path, calc_repo):
    """Issue 26, bug 14: replay's Debug tab 'cannot be opened and nothing says why'. A click
    opens it; it says that variables and stack are not recorded (f forks to see them), and
    the keys dialog says so too."""
    from test_tui_app import _record_episode
    from textual.widgets import TabbedContent

    from dgym_tui.episode.trajectory import read_trajectory
    from dgym_tui.tui.replay_model import ReplayModel

    out = tmp_path / "rec.jsonl"
    await _record_episode(calc_repo, out)
    app = DgymApp(replay=ReplayModel(read_trajectory(out)))
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        await pilot.press("l", "l")
        await pilot.click("#side Tab#--content-tab-tab-debug")
        await pilot.pause()
        assert app.query_one("#side", TabbedContent).active == "tab-debug"
        assert "variables and stack are not recorded; f forks here" in \
            str(app.query_one("#debug-where").render())
        await pilot.press("question_mark")
        await pilot.pause()
        rows = {key: text for _, section in app.screen.sections for key, text in section}
        assert "variables and stack are not recorded" in rows["Debug tab (click it)"]


async def test_no_toast_over_the_apply_dialog_at_the_episode_end(calc_session):
    """Issue 26, bug 14: at the end of an episode (submit) the 'episode over' toast covered
    the apply dialog's title (at 80x24 the dialog fills the screen). The dialog's title
    says that the episode is over instead; without changes to apply, the toast stays."""
    from dgym_tui.core.types import ToolCall

    session = calc_session()
    app = DgymApp(session=session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("rewrite", {"path": "calc.py", "start": 5, "end": 5, "new_code": FIX}))
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("submit", {}))
        await settle(app, pilot)
        assert type(app.screen).__name__ == "ConfirmScreen"
        title = str(app.screen.query_one(".modal-title").render())
        assert title.startswith("The episode is over (submitted). Apply the patch")
        assert not [n for n in app._notifications if "episode over" in n.message]
        await pilot.press("n")
    app.close_session()
    session = calc_session()  # nothing changed: no dialog, the toast says it
    app = DgymApp(session=session)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        app.episode_screen.act(ToolCall("submit", {}))
        await settle(app, pilot)
        assert type(app.screen).__name__ == "LiveScreen"
        assert [n for n in app._notifications if "episode over (submitted)" in n.message]
    app.close_session()


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("bwrap") is None,
                    reason="chown to another user needs root; the overlay needs bubblewrap")
async def test_a_warning_of_the_environment_is_a_toast_and_kept_for_the_end(
        calc_repo, calc_session):
    """The reset (on the session's thread) logs that the working copy is a copy: a file
    of the repository belongs to another user. Before, the app showed nothing of it."""
    import logging

    os.chown(calc_repo / "calc.py", 1234, 1234)
    session = calc_session(terminal="bwrap", terminal_options={"overlay": True})
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(app, pilot)
        assert session.env.workspace.overlay is None
        for _ in range(2):  # the same warning again: one toast
            logging.getLogger("dgym_tui.core.env").warning(
                "the working copy of %s is a copy, not an overlay: [b]x[/b]\n\x1b[31mred",
                calc_repo)
        await pilot.pause(0.2)
        toasts = [n.message for n in app._notifications if "not an overlay" in n.message]
        assert len(toasts) == 2, toasts  # the reset's, then the test's, each once
        assert "'calc.py' belongs to 1234:1234" in toasts[0]
        assert toasts[1].endswith("[b]x[/b] red")  # plain text, one line, no control
        assert app.warnings.lines == toasts
    app.close_session()
    assert app.warnings not in logging.getLogger("dgym_tui").handlers  # gone with the app
