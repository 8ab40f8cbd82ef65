"""Issue 24, class 7, through the real app (Pilot): what the sandbox prints, writes and names
reaches the terminal as text. Escape sequences (OSC 52 clipboard, OSC 2 title, CSI, C1)
never get into the frames the app writes, and names and values full of Rich markup
(``[bold red]x``, ``[link=...]``) are shown as they are written, not read as markup."""

from __future__ import annotations

import json
import re

from tui_helpers import SIZE, screen_text, settle, stop_at

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.types import ToolCall
from dgym_tui.episode.session import Session
from dgym_tui.episode.trajectory import read_trajectory
from dgym_tui.tui.actions import pdb_call
from dgym_tui.tui.app import DgymApp
from dgym_tui.tui.replay_model import ReplayModel
from dgym_tui.tui.widgets.file_tree import FileTree

NOISE = ("\x1b]52;c;aGFja2Vk\x07\x1b]2;pwned\x1b\\\x1b[6n\x1b[2J"
         "\u009b31m\u009d0;c1title\u009c\x07\x7f")
NOISY = f"""\
import sys

NOISE = {NOISE!r}


class Loud:
    def __repr__(self):
        return "[bold red]boom[/] [link=https://example.com]click[/link]" + NOISE


def shout():
    loud = Loud()
    sys.stdout.write("before" + NOISE + "after\\n")
    return 1
"""
TESTS = "from noisy import shout\n\n\ndef test_shout():\n    assert shout() == 2\n"
ENTRYPOINT = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider -s test_noisy.py"
#: What the program wanted the terminal to do; the app's own frames never hold these.
FORBIDDEN = re.compile(r"\x1b\]|\x07|[\x80-\x9f]|\x1b\[6n|\x1b\[2J|\x1b\\")


def frame_bytes(app) -> str:
    """Everything the app would write to the terminal to draw its screen now (a full frame,
    as Textual's driver writes it)."""
    return app.screen._compositor.render_update(full=True).render_segments(app.console)


def assert_frame_clean(app) -> None:
    frame = frame_bytes(app)
    found = FORBIDDEN.search(frame)
    assert found is None, f"{found.group()!r} in the frame: {frame[max(found.start() - 60, 0):found.end() + 60]!r}"


def tree_labels(tree: FileTree) -> list[str]:
    labels, todo = [], list(tree.root.children)
    while todo:
        node = todo.pop(0)
        labels.append(node.label.plain)
        todo.extend(node.children)
    return labels


async def test_noise_and_markup_reach_the_screen_as_text(make_repo, tmp_path):
    repo = make_repo({"noisy.py": NOISY, "test_noisy.py": TESTS,
                      "notes.txt": f"one{NOISE}\ntwo\n",
                      "[bold red]x/[link=mailto:me@example.com]y.py": "Y = 1\n",
                      f"e{NOISE}.py": "E = 1\n"})
    env = RepoEnv(repo, entrypoint=ENTRYPOINT)
    session = Session(env, None, mode="human", trajectory_path=tmp_path / "t.jsonl")
    app = DgymApp(session=session)
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        tree = app.query_one(FileTree)
        labels = tree_labels(tree)
        assert "[bold red]x/" in labels  # the folder's name as written, not red "x/"
        assert "[link=mailto:me@example.com]y.py" in labels
        assert any(label.startswith("e") and label.endswith(".py") and "\x1b" not in label
                   for label in labels)
        assert "[bold red]x/" in screen_text(app)
        console = " ".join(strip.text for strip in app.pdb_console.log_widget.lines)
        assert "beforeafter" in console  # the program's output, without its sequences
        assert_frame_clean(app)

        await stop_at(app, pilot, "noisy.py:14")  # in shout(): `loud` is a Loud
        variables = app.query_one("#variables")
        shown = [node.label.plain for node in variables.root.children]
        assert any(label.startswith("loud = [bold red]boom[/] [link=https://example.com]click")
                   for label in shown), shown
        assert_frame_clean(app)
        # a condition that is malformed markup ("[/x]" closes nothing): shown as typed
        app.episode_screen.act(pdb_call('b noisy.py:13, "[/x]" != "[bold red]c"'))
        await settle(app, pilot)
        table = app.query_one("BreakpointsPane")
        cells = [str(cell) for number in range(table.row_count) for cell in table.get_row_at(number)]
        assert '"[/x]" != "[bold red]c"' in cells, cells
        assert_frame_clean(app)

        tree.post_message(FileTree.FileChosen("notes.txt"))  # a file holding the raw noise
        await settle(app, pilot)
        view = app.source_view
        assert view.path == "notes.txt" and view.lines == ["one", "two"]
        assert_frame_clean(app)
        tree.post_message(FileTree.FileChosen("[bold red]x/[link=mailto:me@example.com]y.py"))
        await settle(app, pilot)
        assert view.border_title == r"\[bold red]x/\[link=mailto:me@example.com]y.py"  # escaped
        assert "[bold red]x/[link=mailto:me@example.com]y.py" in screen_text(app)

        app.query_one("#side").active = "tab-transcript"  # the steps' observations
        await pilot.pause()
        assert "beforeafter" in app.transcript.text
        assert_frame_clean(app)

        app.notify(f"[bold]not markup[/] {NOISE}", title=f"t{NOISE}")  # a toast as text
        await pilot.pause()
        toast = list(app._notifications)[-1]
        assert (toast.message, toast.title, toast.markup) == ("[bold]not markup[/] ", "t", False)
        assert_frame_clean(app)
        await pilot.press("q")
        await pilot.pause()


async def test_a_forged_trajectory_replays_as_text(make_repo, open_repo, tmp_path):
    """A trajectory file written with raw controls (an old or forged one) in an observation,
    the reasoning and a note: the replay's console, transcript and frames hold none."""
    repo = make_repo({"noisy.py": NOISY, "test_noisy.py": TESTS})
    recorded = tmp_path / "recorded.jsonl"
    session = open_repo(repo, trajectory=recorded, entrypoint=ENTRYPOINT)
    session.start()
    session.act(ToolCall("view", {"path": "noisy.py"}))
    session.finish("quit")
    session.env.close()
    lines = recorded.read_text().splitlines()
    step = json.loads(lines[1])
    step.update(observation=f"forged{NOISE}observation", reasoning=f"think{NOISE}ing",
                note=f"no{NOISE}te")
    step["result"]["observation"] = step["observation"]
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join([lines[0], json.dumps(step), *lines[2:]]) + "\n")
    app = DgymApp(replay=ReplayModel(read_trajectory(forged)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        await pilot.press("l")  # to the forged step
        await settle(app, pilot)
        console = " ".join(strip.text for strip in app.pdb_console.log_widget.lines)
        assert "forgedobservation" in console
        assert_frame_clean(app)
        app.query_one("#side").active = "tab-transcript"
        await pilot.pause()
        assert "thinking" in app.transcript.text and "forgedobservation" in app.transcript.text
        assert_frame_clean(app)


async def test_runs_table_shows_names_as_text(tmp_path):
    """A run's task named with markup and controls (a folder benchmark's task folder):
    the runs table shows the name as written, without the controls."""
    from run_folders import write_episode
    from textual.widgets import DataTable

    from dgym_tui.tui.screens.runs import RunsApp

    run = tmp_path / "run"
    write_episode(run, f"[bold red]t{NOISE}", episode="ep")
    app = RunsApp([run])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.screen.query_one(DataTable)
        cells = [str(cell) for cell in table.get_row(f"{run}/ep")]
        assert "[bold red]t" in cells, cells
        assert_frame_clean(app)


async def test_an_agents_proposal_is_shown_as_text(calc_session, llm_server):
    """A model's reasoning and arguments holding controls (a reply steered by what it read)
    reach the approve panel and the frame as text."""
    from tui_helpers import stub_agent

    llm_server.script([{"content": f"Stop [bold]here[/]{NOISE}.",
                        "tool_calls": [{"name": "pdb", "id": "call_1",
                                        "arguments": {"command": f"p 1{NOISE}\u009b"}}]}])
    app = DgymApp(session=calc_session(stub_agent(llm_server), mode="approve"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot)
        panel = app.query_one("#approve-reasoning")
        assert str(panel.render()) == "Stop [bold]here[/]."
        assert "\u009b" not in str(app.query_one("#approve-action").render())
        assert_frame_clean(app)
        await pilot.press("q")
        await pilot.pause()
