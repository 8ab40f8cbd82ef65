"""Preloaded starts (issue 28 part 1): a spare that imported pytest ahead of time gives
exactly what a cold start gives.

Every case runs the same episode twice on real terminals (local, bwrap, bwrap with an
overlay working copy, docker), once with
``preload=False`` (every eval and pdb start cold) and once with preloading on (the
reset's eval cold, every later one handed to a spare), and compares per-test
outcomes, counts, exit codes and output (durations blanked), plus a dump of what the
tests see of their interpreter (argv, sys.path, environment, flags, ``__main__``,
imported modules, open descriptors, signal handlers, limits, user, parent). Each
preloaded eval must say ``start == "preloaded"``: with preloading broken the cases
fail on that, with the spare differing from a cold run they fail on the comparison.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from dgym_tui.core.env import RepoEnv
from dgym_tui.core.terminals import preload

MINI = Path(__file__).resolve().parents[1] / "data" / "mini"
#: no third-party plugins (fast); the autoload case below keeps them
FAST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -rA -p no:cacheprovider"

DUMP_TEST = '''\
import gc, json, os, resource, signal, stat, sys, warnings


def _kind(fd):
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return "closed"
    for name in ("S_ISFIFO", "S_ISSOCK", "S_ISCHR", "S_ISREG", "S_ISDIR"):
        if getattr(stat, name)(mode):
            return name[4:]
    return "other"


def test_dump():
    import __main__
    limits = {name: resource.getrlimit(getattr(resource, name))
              for name in dir(resource) if name.startswith("RLIMIT_")}
    with open("/proc/%d/comm" % os.getppid()) as f:
        parent = f.read().strip()
    state = {
        "argv": sys.argv, "orig_argv": getattr(sys, "orig_argv", None), "path": sys.path,
        "cwd": os.getcwd(), "env": dict(os.environ), "flags": list(sys.flags),
        "main": sorted(vars(__main__)), "main_file": getattr(__main__, "__file__", None),
        "main_name": __main__.__name__,
        "modules": sorted(sys.modules), "meta_path": [type(f).__name__ for f in sys.meta_path],
        "ids": [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), sorted(os.getgroups())],
        "limits": limits, "parent": parent, "leader": [os.getsid(0) == os.getpid(),
                                                       os.getpgid(0) == os.getpid()],
        "fds": sorted((fd, _kind(int(fd))) for fd in os.listdir("/proc/self/fd")),
        "signals": [repr(signal.getsignal(s)) for s in (signal.SIGINT, signal.SIGTERM,
                                                         signal.SIGPIPE, signal.SIGHUP)],
        "isatty": [os.isatty(i) for i in range(3)], "bytecode": sys.dont_write_bytecode,
        "warnings": len(warnings.filters), "excepthook": repr(sys.excepthook),
        "recursion": sys.getrecursionlimit(), "switch": sys.getswitchinterval(),
        "hash_randomization": sys.flags.hash_randomization,
        "gc": [gc.isenabled(), gc.get_threshold(), gc.get_debug()],
    }
    with open("state.json", "w") as f:
        json.dump(state, f, sort_keys=True, default=str)
'''


def _roots(env: RepoEnv) -> list[str]:
    """The working copy's paths: the host's and the commands' (an overlay's merged view)."""
    return sorted({str(env.workspace.root), env.terminal.workdir}, key=len, reverse=True)


def _normal(output: str, roots: list[str]) -> str:
    """The output with durations, addresses and the working copy's paths blanked."""
    for root in roots:
        output = output.replace(root, "<ROOT>")
    output = re.sub(r"in \d+\.\d+s", "in <T>s", output)
    return re.sub(r"0x[0-9a-f]+", "0x<A>", output)


def _outcomes(output: str) -> dict[str, str]:
    return dict((m.group(2), m.group(1)) for m in re.finditer(
        r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)", output, re.MULTILINE))


def _record(env: RepoEnv, summary, output: str) -> dict:
    state = env.workspace.root / "state.json"
    dump = None
    if state.exists():
        dump = json.loads(_normal(state.read_text(), _roots(env)))
        state.unlink()
        # TEXTUAL_SNAPSHOT_TEMPDIR: a fresh temporary folder pytest-textual-snapshot makes at
        # every session start, when the tests' Python has it (an activated venv, as in CI)
        for volatile in ("DGYM_EPISODE", "PYTEST_CURRENT_TEST", "TEXTUAL_SNAPSHOT_TEMPDIR"):
            dump["env"].pop(volatile, None)
        # pipes and the pytest capture files are other objects but the same kinds
    data = summary.to_dict()
    return {"outcomes": _outcomes(output), "passed": data["passed"], "failed": data["failed"],
            "errors": data["errors"], "skipped": data["skipped"],
            "exit_code": data["exit_code"], "problem": data["problem"],
            "failures": [f["test_id"] for f in data["failures"]],
            "output": _normal(output, _roots(env)), "state": dump}


def _episode(repo: Path, kind: str, entrypoint: str, preload_on: bool, evals: int = 2,
             between=None) -> tuple[list[dict], list[str]]:
    """Records of the reset's eval and ``evals`` more (``between(env, i)`` before each)."""
    records, starts = [], []
    with _env(repo, kind, entrypoint=entrypoint, preload=preload_on,
              tools=["eval", "rewrite", "view"]) as env:
        first = env.reset()
        records.append(_record(env, env.last_eval, env.last_eval_output))
        starts.append(first.start)
        for i in range(evals):
            if between is not None:
                between(env, i)
            step = env.step({"name": "eval", "arguments": {}})
            records.append(_record(env, env.last_eval, env.last_eval_output))
            starts.append(step.start)
    return records, starts


def _compare(repo: Path, kind: str, entrypoint: str, evals: int = 2, between=None) -> list:
    cold, cold_starts = _episode(repo, kind, entrypoint, False, evals, between)
    warm, warm_starts = _episode(repo, kind, entrypoint, True, evals, between)
    assert cold_starts == ["cold"] * (evals + 1)
    assert warm_starts == ["cold"] + ["preloaded"] * evals
    for i, (a, b) in enumerate(zip(cold, warm, strict=True)):
        # the episodes' terminals have folders of their own (plugin, scratch): the
        # interpreter's state is compared inside the preloaded episode below
        a, b = dict(a, state=None), dict(b, state=None)
        assert a == b, f"eval {i}: cold and preloaded differ: {_diff(a, b)}"
    # the reset's cold eval against the preloaded ones of the same terminal
    if between is None:
        for later in warm[1:]:
            assert later == warm[0], _diff(warm[0], later)
    return warm


def _diff(a, b, where="") -> str:
    """Where two records differ (first few places), for the failure message."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [_diff(a.get(k), b.get(k), f"{where}.{k}") for k in sorted(set(a) | set(b))
               if a.get(k) != b.get(k)]
        return "; ".join(out[:6])
    if isinstance(a, list) and isinstance(b, list) and a != b:
        sa, sb = {json.dumps(x) for x in a}, {json.dumps(x) for x in b}
        return f"{where}: only cold {sorted(sa - sb)[:8]}, only preloaded {sorted(sb - sa)[:8]}"
    return f"{where}: {a!r} != {b!r}"


@pytest.fixture(params=["local", "bwrap", "bwrap-overlay",
                        pytest.param("docker", marks=pytest.mark.docker)])
def kind(request) -> str:
    """The terminal; ``bwrap-overlay``: bwrap with an overlay working copy (see :func:`_env`)."""
    if request.param == "docker":
        _IMAGE[:] = [request.getfixturevalue("docker_ready")]
    elif request.param != "local":
        request.getfixturevalue("bwrap_ready")
    return request.param


#: the sandbox image of the docker cases (set by the ``kind`` fixture)
_IMAGE: list[str] = []


def _env(repo: Path, kind: str, **kwargs) -> RepoEnv:
    if kind == "bwrap-overlay":
        kwargs["terminal_options"] = {"overlay": True}
        kind = "bwrap"
    if kind == "docker":
        kwargs["image"] = _IMAGE[0]
    return RepoEnv(repo, terminal=kind, **kwargs)


def _mini(tmp_path: Path, name: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(MINI / name, dest)
    return dest


@pytest.mark.parametrize("task", ["pagination", "config_merge", "event_hooks"])
def test_mini_tasks(tmp_path, kind, task):
    repo = _mini(tmp_path, task)
    records = _compare(repo, kind, f"{FAST} test_{task}.py")
    assert records[0]["failed"] >= 1  # the task's bug shows, the same in both


def test_with_third_party_plugins_autoloaded(tmp_path, kind):
    """The default entrypoint: pytest11 plugins preloaded through pytest's rewrite hook
    give the same output (no 'already imported' warning) and modules."""
    repo = _mini(tmp_path, "pagination")
    (repo / "test_dump.py").write_text(DUMP_TEST)
    records = _compare(repo, kind, "python -m pytest -q -rA test_pagination.py test_dump.py",
                       evals=1)
    assert "already imported" not in records[1]["output"]
    assert records[1]["state"]["modules"] == records[0]["state"]["modules"]


def test_interpreter_state_is_a_cold_runs(tmp_path, kind):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_dump.py").write_text(DUMP_TEST)
    records = _compare(repo, kind, f"{FAST} test_dump.py", evals=2)
    state = records[1]["state"]
    assert state["path"][0] == "<ROOT>"
    assert state["orig_argv"][1:3] == ["-m", "pytest"]
    assert all(kind_ != "SOCK" for _fd, kind_ in state["fds"])  # no control socket left


def test_the_imports_are_frozen_for_the_collector(tmp_path, kind):
    """The spare freezes what it imported (the run's full collections skip pytest's and
    its plugins' objects), after collecting the imports' garbage; the collector is on
    with the interpreter's settings (the state dump above compares them)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_gc.py").write_text(
        "import gc, json\n\ndef test_gc():\n"
        "    with open('gc.json', 'w') as f:\n"
        "        json.dump([gc.isenabled(), gc.get_freeze_count()], f)\n")
    seen = {}
    for preload_on in (False, True):
        with _env(repo, kind, entrypoint="python -m pytest -q -p no:cacheprovider test_gc.py",
                  preload=preload_on, tools=["eval"]) as env:
            env.reset()
            step = env.step({"name": "eval", "arguments": {}})
            assert env.last_eval.passed == 1, step.observation
            seen[step.start] = json.loads((env.workspace.root / "gc.json").read_text())
    assert seen["cold"] == [True, 0]
    enabled, frozen = seen["preloaded"]
    assert enabled and frozen > 10_000, seen  # here ~26,000 with pytest alone, ~55,000 with its plugins


def test_conftest_and_sys_path(tmp_path, kind):
    files = {
        "conftest.py": ("import sys, os\n"
                        "sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\n"
                        "import pytest\n\n"
                        "@pytest.fixture\ndef answer():\n    return 42\n"),
        "lib/helper.py": "def double(x):\n    return 2 * x\n",
        "pkg/__init__.py": "",
        "pkg/core.py": "LIMIT = 3\n",
        "tests/test_uses.py": ("import sys\nfrom helper import double\nfrom pkg.core import LIMIT\n\n"
                               "def test_fixture(answer):\n    assert answer == 42\n\n"
                               "def test_helper():\n    assert double(2) == 4\n\n"
                               "def test_limit():\n    assert LIMIT == 4\n\n"
                               "def test_path_changed_here():\n"
                               "    sys.path.append('/nowhere')\n    assert '/nowhere' in sys.path\n\n"
                               "def test_path_is_fresh():\n"
                               "    assert sys.path.count('/nowhere') <= 1\n"),
    }
    for rel, text in files.items():
        (tmp_path / "repo" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "repo" / rel).write_text(text)
    records = _compare(tmp_path / "repo", kind, f"{FAST} tests")
    assert records[1]["outcomes"]["tests/test_uses.py::test_limit"] == "FAILED"
    assert records[1]["passed"] == 4


def test_rewrites_between_evals(tmp_path, kind):
    """The code, conftest.py and pytest.ini rewritten between evals: each eval sees them."""
    repo = _mini(tmp_path, "pagination")

    def between(env: RepoEnv, i: int) -> None:
        root = env.workspace.root
        if i == 0:  # the fix
            text = (root / "paging.py").read_text()
            (root / "paging.py").write_text(text.replace("len(self.items) // self.per_page",
                                                         "-(-len(self.items) // self.per_page)"))
        elif i == 1:  # a conftest that skips everything, a pytest.ini with a marker
            (root / "conftest.py").write_text(
                "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
                "    for item in items[:1]:\n"
                "        item.add_marker(pytest.mark.skip(reason='from conftest'))\n")
            (root / "pytest.ini").write_text("[pytest]\naddopts = -rs\n")
        env._catch_up()

    records = _compare(repo, kind, f"{FAST} test_pagination.py", evals=3, between=between)
    assert records[0]["failed"] >= 1
    assert records[1]["failed"] == 0
    assert records[2]["skipped"] == 1


def test_heavy_modules_and_runs_cut_short(tmp_path, kind):
    files = {
        "test_heavy.py": ("import asyncio, decimal, email.mime.multipart, sqlite3, xml.dom.minidom\n\n"
                          "def test_heavy():\n"
                          "    assert asyncio.run(asyncio.sleep(0, 5)) == 5\n"
                          "    assert str(decimal.Decimal('1.10') + 1) == '2.10'\n"),
        "test_zexit.py": "import os\n\ndef test_exit():\n    os._exit(0)\n",
    }
    repo = tmp_path / "repo"
    repo.mkdir()
    for rel, text in files.items():
        (repo / rel).write_text(text)
    records = _compare(repo, kind, f"{FAST} test_heavy.py test_zexit.py")
    assert "ended before finishing" in records[1]["problem"]


def test_a_test_that_kills_its_parent(tmp_path, kind):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_kill.py").write_text(
        "import os, signal, time\n\ndef test_ok():\n    pass\n\n"
        "def test_kill_parent():\n    os.kill(os.getppid(), signal.SIGKILL)\n"
        "    time.sleep(1)  # bwrap: the sandbox ends with its first process; local: goes on\n")
    records = _compare(repo, kind, f"{FAST} test_kill.py")
    assert records[1]["outcomes"].get("test_kill.py::test_ok") in (None, "PASSED")


def test_not_served_commands_start_cold(tmp_path):
    """Commands a spare cannot stand for run cold, and say so."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    pass\n")
    for entrypoint in (f"{FAST} test_*.py", "python -c 'import pytest; pytest.main([])'"):
        with RepoEnv(repo, entrypoint=entrypoint, tools=["eval"]) as env:
            env.reset()
            step = env.step({"name": "eval", "arguments": {}})
            assert step.start == "cold"
            assert env.last_eval.passed == 1


def test_a_module_of_the_working_copy_is_never_preloaded(tmp_path, kind):
    """A repository holding a package named like one pytest imports (an editable pytest,
    a vendored pluggy): ``python -m`` puts the folder first on sys.path, so a cold run
    imports the repository's; the spare must not stand in for it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_pluggy(kind, repo / "pluggy")
    (repo / "pluggy" / "__init__.py").write_text(
        (repo / "pluggy" / "__init__.py").read_text() + "\nFROM_THE_REPOSITORY = True\n")
    (repo / "test_a.py").write_text("import pluggy\n\ndef test_a():\n"
                                    "    assert pluggy.FROM_THE_REPOSITORY\n")
    with _env(repo, kind, entrypoint=f"{FAST} test_a.py", tools=["eval"]) as env:
        env.reset()
        for _ in range(2):
            step = env.step({"name": "eval", "arguments": {}})
            assert step.start == "cold"
            assert env.last_eval.passed == 1


def _copy_pluggy(kind: str, dest: Path) -> None:
    """Copy the pluggy package of the Python the terminal runs (the image's on docker)."""
    where = "import os, pluggy; print(os.path.dirname(pluggy.__file__))"
    if kind != "docker":
        shutil.copytree(subprocess.check_output(["python", "-c", where], text=True).strip(),
                        dest)
        return
    from dgym_tui.core.terminals.docker import get_client

    archive = get_client().containers.run(  # (a container's log holds text: base64)
        _IMAGE[0], ["sh", "-c", f'cd "$(python -c "{where}")" && tar -c . | base64'],
        remove=True, network_mode="none")
    dest.mkdir()
    subprocess.run(["tar", "-x", "-C", str(dest)], input=base64.b64decode(archive), check=True)


def test_the_switch(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    pass\n")
    monkeypatch.setenv(preload.SWITCH, "0")
    with RepoEnv(repo, entrypoint=f"{FAST} test_a.py", tools=["eval"]) as env:
        env.reset()
        assert env.step({"name": "eval", "arguments": {}}).start == "cold"
    monkeypatch.delenv(preload.SWITCH)
    with RepoEnv(repo, entrypoint=f"{FAST} test_a.py", tools=["eval"]) as env:
        env.reset()
        assert env.step({"name": "eval", "arguments": {}}).start == "preloaded"


def test_pdb_starts(tmp_path, kind):
    """pdb started from a spare (the first start too): the same replies as a cold start,
    across restarts after rewrites and at the program's end."""
    repo = _mini(tmp_path, "pagination")
    (repo / "test_dump.py").write_text(DUMP_TEST)
    commands = ["b paging.py:41", "c", "p __name__", "!import sys; print(sys.argv[1:], sys.path[0])",
                "w"]

    def session(preload_on: bool) -> tuple[list[str], list[str]]:
        observations, starts = [], []
        with _env(repo, kind, entrypoint=f"{FAST} test_pagination.py test_dump.py",
                  preload=preload_on, tools=["pdb", "rewrite", "eval"]) as env:
            env.reset()
            roots = _roots(env)
            for round_ in range(3):
                for command in commands:
                    step = env.step({"name": "pdb", "arguments": {"command": command}})
                    observations.append(_normal(step.observation, roots))
                    if step.start:
                        starts.append(step.start)
                env.step({"name": "rewrite", "arguments": {
                    "path": "paging.py", "start": 1, "end": 1,
                    "new_code": (env.workspace.root / "paging.py").read_text().splitlines()[0]
                    + f"  # round {round_}"}})
        return observations, starts

    cold, cold_starts = session(False)
    warm, warm_starts = session(True)
    assert len(cold_starts) >= 3 and set(cold_starts) == {"cold"}
    # the first start too: reset starts the pdb tool's spare after its eval
    assert warm_starts == ["preloaded"] * len(cold_starts)
    assert warm == cold


def test_pdb_of_a_script(tmp_path, kind):
    """An entrypoint that is a script (``python -m pdb run.py``): the spare preloads pdb
    alone; the session answers as a cold one, ``sys.path[0]`` the script's folder."""
    repo = _mini(tmp_path, "pagination")
    (repo / "run.py").write_text("import test_pagination\n\nfor name in sorted(dir(test_pagination)):\n"
                                 "    if name.startswith('test_'):\n"
                                 "        try:\n            getattr(test_pagination, name)()\n"
                                 "        except Exception as exc:\n            print(name, exc)\n")
    commands = ["b paging.py:41", "c",
                "p __import__('sys').argv, __import__('sys').path[0], "
                "sorted(__import__('sys').modules)",
                "!import os; print(os.getppid() > 0, sorted(os.listdir('/proc/self/fd')))", "w"]

    def session(preload_on: bool) -> tuple[list[str], list[str]]:
        observations, starts = [], []
        with _env(repo, kind, entrypoint="python run.py", preload=preload_on,
                  tools=["pdb", "rewrite"]) as env:
            env.reset()
            roots = _roots(env)
            for round_ in range(2):
                for command in commands:
                    step = env.step({"name": "pdb", "arguments": {"command": command}})
                    observations.append(_normal(step.observation, roots))
                    if step.start:
                        starts.append(step.start)
                env.step({"name": "rewrite", "arguments": {
                    "path": "run.py", "start": 1, "end": 1,
                    "new_code": f"import test_pagination  # {round_}"}})
        return observations, starts

    cold, cold_starts = session(False)
    warm, warm_starts = session(True)
    assert len(cold_starts) >= 2 and set(cold_starts) == {"cold"}
    assert warm_starts == ["preloaded"] * len(cold_starts)
    assert warm == cold
    assert any("(['run.py'], '" in o for o in warm)


def _kill(terminal, process) -> None:
    """SIGKILL a spare's process group (bwrap's own process on bwrap; the exec's wrapper
    inside the container on docker) and wait until it ended."""
    import os
    import signal
    import time

    if hasattr(process, "pidfile"):  # a docker exec
        terminal.kill_pidfile(process.pidfile)
        deadline = time.monotonic() + 30
        while process.open():
            assert time.monotonic() < deadline
            time.sleep(0.05)
        return
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def test_a_dead_or_stale_spare_starts_cold(tmp_path, kind, caplog):
    """The spare killed before its run, or a folder of its sys.path changed after its
    imports (as a package installed meanwhile changes site-packages): the eval starts
    cold, with the right result, and the next one is preloaded again."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    assert 0\n")
    with _env(repo, kind, entrypoint=f"{FAST} test_a.py", tools=["eval"]) as env:
        env.reset()
        assert env.terminal.wait_spares(60)
        _kill(env.terminal, env.terminal._spares[False].process)
        step = env.step({"name": "eval", "arguments": {}})
        assert (step.start, env.last_eval.passed, env.last_eval.failed) == ("cold", 1, 1)
        assert env.step({"name": "eval", "arguments": {}}).start == "preloaded"

        assert env.terminal.wait_spares(60)
        (Path(env.terminal.plugin_dir) / "new_module.py").write_text("")  # on its sys.path
        caplog.set_level(logging.INFO, logger="dgym_tui.core.terminals.preload")
        step = env.step({"name": "eval", "arguments": {}})
        assert (step.start, env.last_eval.passed, env.last_eval.failed) == ("cold", 1, 1)
        assert "not used: stale: a file it imported or a folder on its sys.path changed" \
            in caplog.text
        assert env.step({"name": "eval", "arguments": {}}).start == "preloaded"


def _docker_spares(env: RepoEnv) -> list:
    """The processes (``psutil``, as this host sees them) of the docker terminal's spares:
    each exec's wrapper and what it started."""
    import psutil

    api = env.terminal._client.api
    found = []
    for spare in env.terminal._spares.values():
        leader = psutil.Process(api.exec_inspect(spare.process.exec_id)["Pid"])
        found += [leader, *leader.children(recursive=True)]
    return found


@pytest.mark.docker
def test_docker_spares_end_with_the_episode(tmp_path, docker_ready):
    """A docker episode's spares (the next eval's and the next pdb start's: processes
    in its container, each with a socket in the plugin folder) end with it: close()
    leaves no process of them, no container and no socket; a container killed under
    them takes them along, and the next step answers (it does not raise)."""
    import psutil

    from dgym_tui.core.terminals.docker import CONTROL_DIR, get_client

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    pass\n")
    for ending in ("close", "kill"):
        env = RepoEnv(repo, terminal="docker", image=docker_ready,
                      entrypoint=f"{FAST} test_a.py", tools=["eval", "pdb"])
        try:
            env.reset()
            env.step({"name": "pdb", "arguments": {"command": "l"}})
            assert env.terminal.wait_spares(60)
            assert sorted(env.terminal._spares) == [False, True]
            processes = _docker_spares(env)
            assert sum(p.cmdline()[1:2] == ["/run/dgym-plugin/dgym_preload.py"]
                       for p in processes) == 2  # the spares' Pythons
            container = env.terminal.container.id
            control = Path(env.terminal.plugin_dir) / CONTROL_DIR
            assert control.is_dir()
            if ending == "kill":
                env.terminal.container.kill()
                _gone, alive = psutil.wait_procs(processes, timeout=30)
                assert not alive
                step = env.step({"name": "eval", "arguments": {}})
                assert step.observation
        finally:
            env.close()
        _gone, alive = psutil.wait_procs(processes, timeout=30)
        assert not alive, ending
        with pytest.raises(Exception, match="No such container|404"):
            get_client().containers.get(container)
        assert not control.exists()


IMPOSTOR = r'''
import os, re, socket, time

held = {}
open("/tmp/impostor.ready", "w").close()
end = time.time() + 120
while time.time() < end:
    for pid in os.listdir("/proc"):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                line = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        for path in set(re.findall(r"/run/dgym-plugin/control/[0-9a-f]+\.sock", line)):
            if path in held:
                continue
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.connect(path)
            except OSError:
                continue
            held[path] = s
            with open("/tmp/impostor.log", "a") as log:
                log.write(path + "\n")
            try:  # the host may have hung up already
                s.sendall(b"RP")
            except OSError:
                pass
    time.sleep(0.02)
'''


@pytest.mark.docker
def test_docker_spare_socket_answered_by_another_process(tmp_path, docker_ready, caplog):
    """A daemon of the episode (left by a test) reads the spare's socket path from the
    process list and connects before the spare does, answering "ready, proceeding":
    the host sees that the connection is not from the spare's exec, and the run starts
    cold with the right outcome (not the spare's empty output taken for the run)."""
    from dgym_tui.core.terminals.docker import DockerTerminal

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    assert 0\n")
    (repo / "impostor.py").write_text(IMPOSTOR)
    # the spare's python starts after 3 s: the daemon, polling, connects first
    command = f"sleep 3\n{FAST} test_a.py"
    caplog.set_level(logging.INFO, logger="dgym_tui.core.terminals.preload")
    with DockerTerminal(image=docker_ready) as terminal:
        terminal.start(str(repo))
        terminal.run("python impostor.py >/tmp/impostor.out 2>&1 &", timeout=30)
        assert terminal.run("while [ ! -e /tmp/impostor.ready ]; do sleep 0.05; done",
                            timeout=60).exit_code == 0
        assert terminal.prewarm(command)
        result = terminal.run(command, timeout=120)
        seen = terminal.run("cat /tmp/impostor.log /tmp/impostor.out").output
        assert "/run/dgym-plugin/control/" in seen, (seen, caplog.text)
        assert "another process connected in its place" in caplog.text
        assert result.start == "cold"
        assert "1 failed, 1 passed" in result.output, result.output
        assert result.exit_code == 1


def test_other_commands_leave_the_spares_alone(tmp_path, kind):
    """A command that is not the spare's (the bash tool's shell, a ``run`` of something
    else) starts as it always did and leaves the spares waiting: the next eval and the
    next pdb start are still preloaded."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "test_a.py").write_text("def test_a():\n    pass\n")
    with _env(repo, kind, entrypoint=f"{FAST} test_a.py", tools=["eval", "pdb", "bash"]) as env:
        env.reset()
        step = env.step({"name": "bash", "arguments": {"command": "echo from-bash"}})
        assert "from-bash" in step.observation
        assert env.terminal.run("echo other").output.strip() == "other"
        assert env.step({"name": "eval", "arguments": {}}).start == "preloaded"
        assert env.last_eval.passed == 1
        step = env.step({"name": "pdb", "arguments": {"command": "l"}})
        assert step.start == "preloaded", step.observation
