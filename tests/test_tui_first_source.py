"""The first file in the app's first frame (issue 26, the first screen): read from the
original repository before the working copy exists (the file the app picks from the
working copy's files: the same rules), replaced by the working copy's view when the copy
is ready; never a file the working copy would hide.

The Pilot tests hold the reset (a gate before ``RepoEnv.reset``, the real one after it)
so that the view is read while no working copy exists."""

from __future__ import annotations

import contextlib
import os
import threading

import pytest
from tui_helpers import CALC, ENTRYPOINT, SIZE, TESTS, screen_text, settle

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.fs.safefs import SafeTree
from dgym_tui.episode import first_file
from dgym_tui.episode.first_file import MAX_BYTES, MAX_ENTRIES, read_first_file, visible_files
from dgym_tui.episode.session import Session
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.locate import first_source_file

RUN = "import calc\n\nprint(calc.average([2, 4]))\n"


def _first(root, ignore=(), pick=first_source_file):
    return read_first_file(str(root), list(ignore), pick)


def test_the_first_file_is_read_as_the_working_copy_reads_it(make_repo):
    repo = make_repo({"b.py": "print('é')\n\x1b[31m\n", "test_a.py": "x = 1\n",
                      "notes.txt": "n\n"})
    # the app's pick (a non-test .py first); the text as it is (the view strips controls)
    assert _first(repo) == ("b.py", "print('é')\n\x1b[31m\n")
    (repo / "a.py").write_bytes(b"x = '\xff'\n")
    assert _first(repo) == ("a.py", "x = '\ufffd'\n")
    assert _first(repo, pick=lambda files: None) is None
    assert _first(repo, pick=lambda files: "notes.txt") == ("notes.txt", "n\n")


def test_nothing_when_it_cannot_be_read_as_the_working_copy_reads_it(make_repo, tmp_path):
    repo = make_repo({"a.py": RUN, "big.py": "#" * (MAX_BYTES + 1), "nul.py": "x\0y"})
    assert _first(repo, pick=lambda files: "big.py") is None
    assert _first(repo, pick=lambda files: "nul.py") is None
    assert read_first_file(str(repo), None, first_source_file) is None  # rules unknown
    assert read_first_file(str(tmp_path / "missing"), [], first_source_file) is None
    os.symlink("elsewhere", repo / ".debugignore")  # rules the copy reads through a link
    assert _first(repo) is None
    os.remove(repo / ".debugignore")
    (repo / ".debugignore").write_text("#" * (MAX_BYTES + 1))
    assert _first(repo) is None
    os.remove(repo / ".debugignore")
    assert _first(repo) == ("a.py", RUN)
    for i in range(MAX_ENTRIES):
        (repo / f"f{i}.txt").write_text("")
    assert _first(repo) is None  # too many entries to walk before the first frame


@pytest.mark.parametrize("rules", ["", "secret\n", "*.py\n!/run.py\n", "*.py\n!run.py\n",
                                   "/run.py\n", "real/\n!real/run.py\n", "**/run.py\n",
                                   "*.txt\n"])
def test_the_files_listed_are_the_working_copys(make_repo, rules):
    """The same files as the working copy's own listing, for each set of rules."""
    from dgym_tui.core.fs.workspace import Workspace

    files = ("run.py", "secret/run.py", "real/run.py", "real/deep/run.py", "notes.txt",
             "__pycache__/run.cpython-311.pyc", "pkg/mod.pyc", ".git/config",
             ".pytest_cache/v", ".debugreadonly", "sub/.git")
    repo = make_repo({**dict.fromkeys(files, RUN), ".debugignore": rules})
    workspace = Workspace(repo)
    tree = SafeTree(repo)
    try:
        assert visible_files(tree, rules.splitlines()) == workspace.files()
        extra = ["notes.txt"]  # the episode's own patterns join the file's
        assert visible_files(tree, [*rules.splitlines(), *extra]) == [
            f for f in workspace.files() if f != "notes.txt"]
    finally:
        tree.close()
        workspace.cleanup()


def _gated_session(repo, tmp_path, entrypoint: str, name: str = "t") -> tuple[Session, threading.Event]:
    """A session whose reset waits for the returned event (then runs for real)."""
    env = RepoEnv(repo, entrypoint=entrypoint, task="Find the wrong division.")
    gate = threading.Event()
    reset = env.reset

    def gated_reset(**options):
        gate.wait(60)
        return reset(**options)

    env.reset = gated_reset
    return Session(env, trajectory_path=tmp_path / f"{name}.jsonl", task_name="calc"), gate


def _at_first_frame(app: DgymApp, recorded: list) -> list[list]:
    """A list that gets a copy of ``recorded`` when ``app`` hands its first frame to its
    driver (empty until then)."""
    copies: list[list] = []
    display = app._display

    def first(screen, update):
        display(screen, update)
        if update is not None and not copies:
            copies.append(list(recorded))

    app._display = first
    return copies


@contextlib.asynccontextmanager
async def _running(session: Session, gate: threading.Event):
    """``(app, pilot)`` of the app on ``session``, its reset held until ``gate`` is set;
    the gate is set on the way out (a failed test too: the reset returns before the app
    closes the session, and nothing it started is left behind)."""
    app = DgymApp(session=session)
    try:
        async with app.run_test(size=SIZE) as pilot:
            try:
                await pilot.pause()
                yield app, pilot
            finally:
                gate.set()
                await settle(app, pilot)
    finally:
        app.close_session()


async def _first_and_last(session: Session, gate: threading.Event) -> tuple:
    """((path, lines, title) shown before the reset, (path, screen text) once settled)."""
    from dgym_tui.tui.widgets.file_tree import FileTree

    async with _running(session, gate) as (app, pilot):
        view = app.source_view
        assert app.query_one(FileTree)._files == [] and not app.started  # no copy yet
        first = (view.path, list(view.lines), str(view.border_title or ""))
        gate.set()
        await settle(app, pilot)
        assert app.started
        return first, (view.path, screen_text(app))


async def test_the_first_frame_shows_the_first_file_then_the_working_copys_view(
        make_repo, tmp_path, monkeypatch):
    """Before the working copy exists the source view shows calc.py, read from the
    original; once the episode started the screen is the one the app showed without it."""
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS, "run_tests.py": RUN})
    for entrypoint in (ENTRYPOINT, "python run_tests.py"):
        monkeypatch.undo()
        first, last = await _first_and_last(*_gated_session(repo, tmp_path, entrypoint))
        assert first == ("calc.py", CALC.splitlines(), "calc.py")
        monkeypatch.setattr(first_file, "read_first_file", lambda *args: None)
        before, last_without = await _first_and_last(
            *_gated_session(repo, tmp_path, entrypoint, "u"))
        assert before == (None, [], "")  # as the app showed it until now
        assert last == last_without and last[0] == "calc.py"


async def test_a_hidden_file_is_not_shown_before_the_working_copy(make_repo, tmp_path):
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS, "run_tests.py": RUN,
                      ".debugignore": "calc.py\n"})
    first, last = await _first_and_last(*_gated_session(repo, tmp_path, "python run_tests.py"))
    assert first == ("run_tests.py", RUN.splitlines(), "run_tests.py")
    assert last[0] == "run_tests.py"  # the working copy's pick too


async def test_a_breakpoint_set_on_the_early_view_waits_and_runs_in_order(make_repo, tmp_path):
    """``b`` on the file shown before the copy: the command waits for the start and runs
    then, against the working copy's file of the same text."""
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS})
    session, gate = _gated_session(repo, tmp_path, ENTRYPOINT)
    async with _running(session, gate) as (app, pilot):
        assert app.source_view.path == "calc.py"
        app.source_view.focus()
        await pilot.press("down", "down", "b")
        gate.set()
        await settle(app, pilot)
        assert ("calc.py", 3) in [(p, int(n)) for p, n in session.last.breakpoints]


async def test_the_first_file_is_drawn_plain_then_in_its_colours(make_repo, tmp_path):
    """The first frame draws the first file without syntax colours (pygments loads after
    it); a later frame, before the episode started, draws the same text highlighted."""
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS})
    session, gate = _gated_session(repo, tmp_path, ENTRYPOINT)
    app = DgymApp(session=session)
    frames: list[tuple[str, int, bool]] = []  # (row 0's text, its code's colours, started)
    display = app._display

    def record(screen, update):
        display(screen, update)
        if update is not None:
            strip = app.source_view.render_line(0)
            text = strip.text
            code = [s for s in strip if s.text.strip() and s.text in CALC.splitlines()[0]]
            colours = {s.style.color for s in code if s.style is not None}
            frames.append((text, len(colours), app.started))

    app._display = record
    try:
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(200):
                if any(colours > 1 for _, colours, _ in frames):
                    break
                await pilot.pause(0.01)
            gate.set()
            await settle(app, pilot)
    finally:
        gate.set()
        app.close_session()
    assert "def average(xs):" in frames[0][0] and frames[0][1] == 1  # plain
    highlighted = [frame for frame in frames if frame[1] > 1]
    assert highlighted and not highlighted[0][2]  # coloured before the start
    assert all("def average(xs):" in text for text, _, _ in frames)  # never other text


@pytest.mark.parametrize("size", [SIZE, (80, 24)])
async def test_the_first_frame_is_styled_as_a_full_restyle_styles_it(make_repo, tmp_path, size):
    """The screen's first showing skips Textual's restyle of every widget (their mount
    styled them just before): each widget's styles are those a full restyle gives."""
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS})
    session, gate = _gated_session(repo, tmp_path, ENTRYPOINT)
    app = DgymApp(session=session)
    try:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            nodes = list(app.screen.walk_children(with_self=True))
            first = [(node, node.styles.get_rules(), node.display) for node in nodes]
            app.stylesheet.update_nodes(nodes, animate=False)
            assert [(node, node.styles.get_rules(), node.display) for node in nodes] == first
            gate.set()
            await settle(app, pilot)
    finally:
        gate.set()
        app.close_session()


async def test_the_stylesheet_is_parsed_once_in_the_themes_colours(make_repo, tmp_path,
                                                                   monkeypatch):
    """The app's theme, set when the app is built, reaches the first frame without a second
    parse of its CSS (Textual's theme change re-parsed app.tcss and App's CSS into a new
    stylesheet and emptied the parse cache, so that the first styling parsed them again):
    up to the first frame no CSS source is parsed twice with the same settings (Textual
    parses a widget's CSS again when a subclass registers it with another tie-breaker), in
    the theme's colours (a full re-parse in the theme, Textual's ``refresh_css``, gives
    every widget the same styles)."""
    import textual.css.stylesheet as stylesheet_module

    parsed: list[tuple] = []
    real_parse = stylesheet_module.parse

    def counted(scope, css, read_from, *args, **kwargs):
        parsed.append((read_from, scope, kwargs.get("tie_breaker")))
        return real_parse(scope, css, read_from, *args, **kwargs)

    monkeypatch.setattr(stylesheet_module, "parse", counted)
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS})
    session, gate = _gated_session(repo, tmp_path, ENTRYPOINT)
    app = DgymApp(session=session, theme_name="dgym-light")
    frames = _at_first_frame(app, parsed)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert frames and app.theme == "dgym-light"
            at_first_frame = frames[0]
            twice = sorted({source for source in at_first_frame
                            if at_first_frame.count(source) > 1})
            assert not twice, f"parsed more than once before the first frame: {twice}"
            nodes = list(app.screen.walk_children(with_self=True))
            styled = [(node, node.styles.get_rules()) for node in [app, *nodes]]
            app.refresh_css(animate=False)
            assert [(node, node.styles.get_rules()) for node in [app, *nodes]] == styled
            gate.set()
            await settle(app, pilot)
    finally:
        gate.set()
        app.close_session()


async def test_the_source_view_is_the_first_widget_focused(make_repo, tmp_path, monkeypatch):
    """The source view has the focus from the screen's compose (Textual focused the first
    focusable widget, the file tree, then the screen's mount moved the focus: two more
    restyles before the first frame), styled focused from its mount (no focus change
    before the first frame); later, a screen left with nothing focused gets Textual's
    default again (the first focusable widget)."""
    from textual.widget import Widget

    changes: list[tuple[str, bool]] = []
    watch = Widget.watch_has_focus

    def recorded(self, has_focus):
        changes.append((type(self).__name__, has_focus))
        watch(self, has_focus)

    monkeypatch.setattr(Widget, "watch_has_focus", recorded)
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS})
    session, gate = _gated_session(repo, tmp_path, ENTRYPOINT)
    app = DgymApp(session=session)
    at_first_frame = _at_first_frame(app, changes)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert at_first_frame == [[]]  # styled focused from its mount: no focus change
            assert app.focused is app.source_view and app.source_view.has_focus
            screen = app.episode_screen
            screen.set_focus(None)
            screen._update_auto_focus()  # as a screen resumed with nothing focused
            assert type(app.focused).__name__ == "FileTree"
            gate.set()
            await settle(app, pilot)
    finally:
        gate.set()
        app.close_session()


async def test_no_widget_is_restyled_for_a_class_it_could_be_built_with(make_repo, tmp_path,
                                                                       monkeypatch):
    """Up to the first frame Textual restyles only the active tab (Textual's tabs mark it
    at their mount): the stack pane and the command palette's key are built with their
    compact classes and the source view is styled focused from its mount (a class or a
    focus added later restyled the node: the stack pane's in its constructor, before its
    mount styled it again, the key's at its mount, the view's focus after it), and they
    look the same (the source view focused: its :focus border)."""
    import textual.css.stylesheet as stylesheet_module

    restyled: list[str] = []
    update_nodes = stylesheet_module.Stylesheet.update_nodes

    def recorded(self, nodes, animate=False):
        nodes = list(nodes)
        restyled.append(type(nodes[0]).__name__)
        return update_nodes(self, nodes, animate)

    monkeypatch.setattr(stylesheet_module.Stylesheet, "update_nodes", recorded)
    repo = make_repo({"calc.py": CALC, "test_calc.py": TESTS})
    session, gate = _gated_session(repo, tmp_path, ENTRYPOINT)
    app = DgymApp(session=session)
    at_first_frame = _at_first_frame(app, restyled)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            assert at_first_frame == [["ContentTab"]]
            stack = app.query_one("StackPane")
            assert stack.compact and stack.has_class("-textual-compact")
            palette = app.query_one("FooterKey")
            assert palette.compact and palette.has_class("-command-palette", "-compact")
            gate.set()
            await settle(app, pilot)
    finally:
        gate.set()
        app.close_session()
