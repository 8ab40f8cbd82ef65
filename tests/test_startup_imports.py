"""``dgym-tui PATH`` paints its first screen before it needs the libraries of the first
step: jsonschema (argument checks, trajectory reading), RE2 (grep) and pathspec (the
working copy's ignore rules) are imported by the reset or the first step, not at start;
nor do the modules of what the first frame does not show: Textual's RichLog (rich.pretty: the console's log is mounted after the first frame)
and the edit dialogs' text area (bench/bench_tui.py measures the first paint; this keeps
what it gained); nor the Docker terminal,
PyYAML (the themes are TOML; a folder's dgym.yaml is read when there is one) or psutil (the
terminal's clean-up at its close); nor the dialogs (the first key that opens one imports
them), the replay screen, an agent's proposal's preview, a fork's or branch's running session
(tui.live.running), the patch parser (unidiff: a live episode needs it once a step
changed a file) or rich's emoji table (a label given as markup loads it); nor what only the
episode's thread uses: the pdb and shell sessions (pexpect), the overlay's mount calls
(ctypes), inotify, ``secrets``, the eval's pytest report and the working copy's own module
with its patches and hashing, nor the session's events, records (turns, proposals,
usage) and trajectory writer, nor the app's messages of them: the reset, on the session's
thread, makes the first of them (the environment is built before the first frame, its tools
and working copy are made by the reset; the first file is listed with the copy's rules,
dgym_tui.core.fs.rules).
The first frame shows the first source file, read from the original repository
(dgym_tui.episode.first_file), without its syntax colours: pygments (its Python lexer's
rules), rich.syntax's token colours and importlib.metadata (pygments.lexers imports it)
are imported right after the first frame, which the colours follow. The first frame already has the footer's keys (Textual's footer builds them only after the
first refresh; the app builds them before). The episode's reset starts before it, in its
worker, when the screen is mounted (the working copy, and so the source, is ready sooner):
here it is held until the first frame, so that the modules counted are the app's own, and
no process is started before it (ctypes' ``find_library`` ran ``ldconfig -p`` for the
namespace calls the working copy's module imports)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFERRED = ("jsonschema", "re2", "pathspec", "rich.pretty", "textual.widgets._rich_log",
            "textual.widgets._text_area", "dgym_tui.core.terminals.docker", "yaml", "psutil",
            "pygments", "rich.syntax", "importlib.metadata", "dgym_tui.tui.screens.modals",
            "dgym_tui.tui.replay.screen", "unidiff", "rich._emoji_codes",
            "dgym_tui.core.pdb.session", "dgym_tui.core.pdb.inspect", "pexpect",
            "dgym_tui.core.fs.overlay", "ctypes", "inotify_simple", "secrets",
            "dgym_tui.core.evaluation.pytest_plugin", "dgym_tui.core.fs.workspace",
            "dgym_tui.core.fs.gitpatch", "hashlib", "dgym_tui.episode.events",
            "dgym_tui.episode.records", "dgym_tui.episode.examples",
            "dgym_tui.episode.trajectory", "dgym_tui.tui.messages",
            "dgym_tui.tui.proposal_preview", "dgym_tui.tui.live.running")

def _run(script: str, *args: str) -> str:
    """Run ``script`` in a fresh interpreter importing this checkout; its output (it must
    succeed)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", script, *args], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip()


SCRIPT = """
import asyncio, json, sys, threading
spawned = []  # the processes started (the reset is held until the first frame)
sys.addaudithook(lambda event, args: spawned.append(str(args[1])[:200])
                 if event in ("subprocess.Popen", "os.posix_spawn", "os.fork") else None)
from dgym_tui.cli.tui import build_app, build_parser

async def main():
    app = build_app(build_parser().parse_args(
        [sys.argv[1], "--terminal", "local", "--trajectory", sys.argv[2]]))
    seen = {}
    display = app._display
    drawn, began = threading.Event(), []
    start = app.session.start

    def held_start():  # the reset's worker: held until the first frame
        began.append(True)
        drawn.wait(60)
        return start()

    app.session.start = held_start

    def first_frame(screen, update):  # the modules loaded when the first frame is drawn
        display(screen, update)
        if update is not None and not app._batch_count and not seen:
            seen["modules"] = sorted(sys.modules)
            seen["keys"] = [key.key for strip in screen.query("KeyStrip") if strip.region
                            for key in strip.keys]
            seen["shown"] = app.source_view.path
            seen["calls"] = not app.worker.idle  # the reset: queued or running
            seen["began"] = bool(began)
            seen["spawned"] = list(spawned)
            drawn.set()

    app._display = first_frame
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        while not app.worker.idle:  # the session's calls run on its own thread
            await asyncio.sleep(0.01)
        await pilot.pause()
        print(json.dumps({"modules": seen["modules"], "keys": seen["keys"],
                          "shown": seen["shown"],
                          "calls": seen["calls"], "began": seen["began"],
                          "spawned": seen["spawned"],
                          "started": app.started,
                          "later": "rich.pretty" in sys.modules}))
    app.close_session()

asyncio.run(main())
"""


def test_first_paint_leaves_step_libraries_unloaded(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\n\ndef test_add():\n"
                                       "    assert add(1, 2) == 3\n")
    seen = json.loads(_run(SCRIPT, str(repo), str(tmp_path / "t.jsonl")).splitlines()[-1])
    modules = set(seen["modules"])
    assert "dgym_tui.core.env" in modules and "textual.app" in modules  # the app was built
    loaded = [name for name in DEFERRED if name in modules]
    assert not loaded, f"imported before the first paint: {loaded}"
    assert seen["later"]  # the console's log was mounted after the first frame
    # the footer's keys (the focused source view's first) are drawn in the first frame
    assert seen["keys"][:3] == ["b", "n", "s"] and "q" in seen["keys"]
    assert seen["shown"] == "calc.py"  # the first source file, from the original
    # no process before the first frame (ctypes.util.find_library ran ldconfig)
    assert seen["spawned"] == []
    # the reset is queued on the session's thread when the first frame is drawn, begins
    # only after it (the app holds it: the first frame has the interpreter to itself),
    # then completes
    assert seen["calls"] and not seen["began"] and seen["started"]


RUN_FOLDER_CHECK = """
import sys
from dgym_tui.runs.index import is_run_folder
heavy = ("yaml", "dgym_tui.runs.runner", "dgym_tui.runs.config", "dgym_tui.policies")
print(is_run_folder(sys.argv[1]), *[name for name in heavy if name in sys.modules])
"""


def test_the_run_folder_check_of_every_start_imports_no_runner(tmp_path):
    # dgym-tui PATH first asks whether PATH is a run folder (the run browser's index):
    # the headless runner (its configuration imports PyYAML, its policies, executors)
    # was imported with it
    (tmp_path / "calc.py").write_text("x = 1\n")
    assert _run(RUN_FOLDER_CHECK, str(tmp_path)) == "False"


WARM_UP = """
import asyncio, json, sys
from dgym_tui.cli.tui import build_app, build_parser

async def main():
    app = build_app(build_parser().parse_args(
        [sys.argv[1], "--terminal", "local", "--trajectory", sys.argv[2],
         "--entrypoint", "python slow.py"]))
    async with app.run_test(size=(120, 36)) as pilot:
        before = None
        for _ in range(2000):  # the eval sleeps 4 s; the warm-up takes well under that
            await pilot.pause(0.01)
            if app.started or "pygments.lexers.python" in sys.modules:
                before = not app.started
                break
        await app.workers.wait_for_complete()
        print(json.dumps({"lexer_before_start": before}))
    app.close_session()

asyncio.run(main())
"""


def test_the_lexer_loads_while_the_episode_starts(tmp_path):
    # pygments and the Python lexer's rules load in a thread during the reset (its eval
    # runs in a subprocess), so the first file shown does not wait for them
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "slow.py").write_text("import time\ntime.sleep(4)\n")
    shown = _run(WARM_UP, str(repo), str(tmp_path / "t.jsonl"))
    assert json.loads(shown.splitlines()[-1]) == {"lexer_before_start": True}


def test_a_tool_that_is_not_built_in_is_found_among_the_plugins(tmp_path, monkeypatch):
    import importlib.metadata

    from dgym_tui.core import tools
    from dgym_tui.core.env import DEFAULT_TOOLS, RepoEnv

    (tmp_path / "echo_plugin.py").write_text(
        "from dgym_tui.core.tools.base import Tool, ToolOutput\n\n"
        "class Echo(Tool):\n"
        "    name = 'echo_plugin'\n"
        "    instructions = 'Echo a text.'\n"
        "    parameters = {'type': 'object', 'properties': {'text': {'type': 'string'}}}\n\n"
        "    def run(self, text='', **_):\n"
        "        return ToolOutput(text)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    point = importlib.metadata.EntryPoint("echo_plugin", "echo_plugin:Echo", "dgym_tui.tools")
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [point])
    monkeypatch.setattr(tools, "_PLUGINS_LOADED", False)
    monkeypatch.setattr(tools.base, "REGISTRY", dict(tools.base.REGISTRY))
    monkeypatch.setattr(tools, "REGISTRY", tools.base.REGISTRY)
    (tmp_path / "repo").mkdir()
    env = RepoEnv(tmp_path / "repo", tools=[*DEFAULT_TOOLS, "echo_plugin"], terminal="local")
    assert type(env.tools["echo_plugin"]).__name__ == "Echo"


STALE_LEXERS = """
import sys, types
import pygments.lexers
# what a thread gets while another thread's first import of pygments.lexers is finishing:
# the module before pygments puts its lazy-loading module in its place
first = types.ModuleType("pygments.lexers")
first.__dict__.update({k: v for k, v in vars(pygments.lexers).items() if k != "__class__"})
sys.modules["pygments.lexers"] = first
from dgym_tui.tui.widgets.source_view import lexer_for
print(type(lexer_for("notes.unknownext")).__name__, type(lexer_for("a.py")).__name__)
"""


def test_the_lexer_is_found_while_another_thread_imports_pygments():
    # warm_up imports pygments in a thread; the app's thread opening a file meanwhile got
    # "cannot import name 'TextLexer' from 'pygments.lexers'" (the first screen crashed)
    assert _run(STALE_LEXERS).split() == ["TextLexer", "PythonLexer"]
