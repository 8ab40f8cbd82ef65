"""Exercism-style benchmark: loader fields, staging without .meta, stub fails / example passes."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from solution_helpers import play_solution

from dgym_tui.benchmarks import get_benchmark
from dgym_tui.benchmarks.exercism import ExercismBenchmark, exercise_files
from dgym_tui.core.types import ToolCall

OUR_EXERCISES = ["ledger-account", "roman-converter", "run-length-codec"]
#: The tools these tests use (pdb is not needed here).
TOOLS = ("listdir", "view", "eval", "rewrite", "grep", "submit")


def test_default_benchmark_lists_our_exercises():
    bench = get_benchmark("exercism")
    assert bench.name == "exercism"
    assert bench.tasks() == OUR_EXERCISES


def test_loader_maps_fields():
    bench = get_benchmark("exercism")
    task = bench.load("run-length-codec")
    assert task.benchmark == "exercism"
    assert task.entrypoint == "python -m pytest -q run_length_codec_test.py"
    # instructions.md then instructions.append.md
    assert "weather station" in task.description
    assert task.description.index("weather station") < task.description.index("Notes for Python")
    assert "run_length_codec_test.py" in task.readonly
    assert ".meta/" in task.ignore
    # the staged copy has the stub, the tests and the docs, but no .meta at all
    files = sorted(p.relative_to(task.path).as_posix() for p in task.path.rglob("*") if p.is_file())
    assert files == [".docs/instructions.append.md", ".docs/instructions.md",
                     "run_length_codec.py", "run_length_codec_test.py"]
    assert task.meta["stub"] == "run_length_codec.py"
    assert task.meta["example"].endswith(".meta/example.py")
    # the original exercise is untouched
    assert (bench.source("run-length-codec") / ".meta" / "example.py").is_file()
    # meta (the answer's location) is not in what a trajectory header stores by default
    assert "meta" not in task.to_dict()


def test_unknown_exercise_names_close_match():
    with pytest.raises(KeyError, match="roman-converter"):
        get_benchmark("exercism").load("roman-convertor")


def _write_track(root, slug, with_config):
    ex = root / "exercises" / "practice" / slug
    (ex / ".docs").mkdir(parents=True)
    (ex / ".meta").mkdir()
    module = slug.replace("-", "_")
    (ex / ".docs" / "instructions.md").write_text("# Instructions\n\nDouble a number.\n")
    if with_config:
        (ex / ".meta" / "config.json").write_text(
            '{"files": {"solution": ["impl.py"], "test": ["check_test.py"]}}')
        module = "impl"
        (ex / "impl.py").write_text("def double(x):\n    pass\n")
        (ex / "check_test.py").write_text(
            "from impl import double\n\ndef test_double():\n    assert double(2) == 4\n")
    else:
        (ex / f"{module}.py").write_text("def double(x):\n    pass\n")
        (ex / f"{module}_test.py").write_text(
            f"from {module} import double\n\ndef test_double():\n    assert double(2) == 4\n")
    (ex / ".meta" / "example.py").write_text("def double(x):\n    return 2 * x\n")
    return ex


def test_track_root_or_practice_folder(tmp_path):
    _write_track(tmp_path, "double-it", with_config=False)
    _write_track(tmp_path, "with-config", with_config=True)
    for path in (tmp_path, tmp_path / "exercises" / "practice"):
        bench = ExercismBenchmark(path=path)
        assert bench.tasks() == ["double-it", "with-config"]
    assert exercise_files(bench.source("double-it")) == ("double_it.py", "double_it_test.py")
    task = bench.load("with-config")
    assert task.entrypoint == "python -m pytest -q check_test.py"
    assert task.readonly[0] == "check_test.py"
    assert ExercismBenchmark(path=tmp_path, exercises=["with-config"]).tasks() == ["with-config"]


def test_folder_without_exercises_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no Exercism exercises"):
        ExercismBenchmark(path=tmp_path)


def _solve(env, task):
    """Rewrite the stub with the example solution through env.step, then eval."""
    with open(task.meta["example"], encoding="utf-8") as handle:
        example = handle.read()
    r = env.step(ToolCall("rewrite", {"path": task.meta["stub"], "new_code": example}))
    assert not r.error, r.observation
    return env.step(ToolCall("eval", {}))


@pytest.mark.parametrize("slug", OUR_EXERCISES)
def test_stub_fails_and_example_passes_locally(slug, make_env, fast_pytest):
    task = get_benchmark("exercism").load(slug)
    # same tests, without the host's third-party pytest plugins (slow to load)
    kwargs = task.env_kwargs(tools=TOOLS, entrypoint=f"{fast_pytest} {task.meta['test']}")
    env = make_env(kwargs.pop("path"), **kwargs)
    first = env.reset()
    assert not first.resolved
    assert first.max_score > 0 and first.score == 0
    # the agent cannot see the reference solution, nor change the tests
    listing = env.step(ToolCall("listdir", {"path": ".", "depth": 3})).observation
    assert ".meta" not in listing and "example" not in listing
    blocked = env.step(ToolCall("rewrite", {"path": task.meta["test"], "new_code": "x = 1\n"}))
    assert blocked.error
    final = _solve(env, task)
    assert final.resolved, final.eval_output
    assert final.score == final.max_score == first.max_score


@pytest.mark.docker
def test_example_passes_in_docker(docker_ready):
    task = get_benchmark("exercism").load("roman-converter")
    env = task.make_env(terminal="docker", image=docker_ready, tools=TOOLS)
    try:
        first = env.reset()
        assert not first.resolved and first.max_score == 38
        # even code running inside the sandbox finds no reference solution
        probe = env.terminal.run("ls -a; ls .meta 2>&1 || true")
        assert ".meta" not in probe.output.split() and "example.py" not in probe.output
        final = _solve(env, task)
        assert final.resolved and final.score == 38, final.eval_output
    finally:
        env.close()


# ------------------------------------------------ the real track's layout (issue 9)

def _exercise(root, slug, files, config=None):
    """Write ``exercises/practice/<slug>`` of a track: ``{relative path: text}`` plus config.json."""
    ex = root / "exercises" / "practice" / slug
    for rel, text in files.items():
        (ex / rel).parent.mkdir(parents=True, exist_ok=True)
        (ex / rel).write_text(text)
    if config is not None:
        (ex / ".meta").mkdir(exist_ok=True)
        (ex / ".meta" / "config.json").write_text(json.dumps({"files": config}))
    return ex


@pytest.fixture
def track(tmp_path):
    """A small track in the real layout: docs in three parts, approaches and articles with
    complete solutions, a test helper, a refactoring exercise, a dashed slug."""
    return _real_layout_track(tmp_path)


def _real_layout_track(tmp_path):
    _exercise(tmp_path, "acronym", {
        "acronym.py": "def abbreviate(words):\n    pass\n",
        "acronym_test.py": "from acronym import abbreviate\n\n\ndef test_png():\n"
                           "    assert abbreviate('Portable Network Graphics') == 'PNG'\n",
        ".docs/introduction.md": "# Introduction\n\nTeams love TLAs.\n",
        ".docs/instructions.md": "# Instructions\n\nConvert a phrase to its acronym.\n",
        ".docs/instructions.append.md": "# Instructions append\n\nPython notes.\n",
        ".meta/example.py": "def abbreviate(words):\n    return ''.join(w[0].upper() for w in words.split())\n",
        ".approaches/regex-sub/snippet.txt": "SECRET_APPROACH = re.sub(...)\n",
        ".approaches/config.json": "{}\n",
        ".articles/performance/content.md": "SECRET_ARTICLE benchmarks\n",
    }, config={"solution": ["acronym.py"], "test": ["acronym_test.py"],
               "example": [".meta/example.py"]})
    _exercise(tmp_path, "paasio", {
        "paasio.py": "def total(xs):\n    pass\n",
        "paasio_test.py": "from paasio import total\nfrom test_utils import DATA\n\n\n"
                          "def test_total():\n    assert total(DATA) == 6\n",
        "test_utils.py": "DATA = [1, 2, 3]\n",
        ".docs/instructions.md": "# Instructions\n\nCount the bytes.\n",
        ".meta/example.py": "def total(xs):\n    return sum(xs)\n",
    }, config={"solution": ["paasio.py"], "test": ["paasio_test.py"], "editor": ["test_utils.py"],
               "example": [".meta/example.py"]})
    _exercise(tmp_path, "ledger", {
        "ledger.py": "def entry(x):\n    return str(x)\n",
        "ledger_test.py": "from ledger import entry\n\n\ndef test_entry():\n    assert entry(1) == '1'\n",
        ".docs/instructions.md": "# Instructions\n\nRefactor a ledger printer.\n",
        ".meta/example.py": "def entry(x):\n    return f'{x}'\n",
    }, config={"solution": ["ledger.py"], "test": ["ledger_test.py"]})
    _exercise(tmp_path, "affine-cipher", {
        "affine_cipher.py": "def encode(text):\n    pass\n",
        "affine_cipher_test.py": "from affine_cipher import encode\n\n\n"
                                 "def test_encode():\n    assert encode('a') == 'b'\n",
        ".docs/instructions.md": "# Instructions\n\nShift letters.\n",
        ".meta/example.py": "def encode(text):\n    return chr(ord(text) + 1)\n",
    })
    return tmp_path


def test_real_layout_stages_out_every_solution_folder(track):
    task = ExercismBenchmark(path=track).load("acronym")
    files = sorted(p.relative_to(task.path).as_posix() for p in task.path.rglob("*") if p.is_file())
    assert files == [".docs/instructions.append.md", ".docs/instructions.md",
                     ".docs/introduction.md", "acronym.py", "acronym_test.py"]
    assert {".meta/", ".approaches/", ".articles/"} <= set(task.ignore)
    # introduction, instructions, then the track's notes: as Exercism shows them
    text = task.description
    assert text.index("Teams love TLAs") < text.index("Convert a phrase") < text.index("Python notes")


def test_every_test_file_and_helper_is_read_only(track, make_env, fast_pytest):
    task = ExercismBenchmark(path=track).load("paasio")
    assert {"paasio_test.py", "test_utils.py"} <= set(task.readonly)
    kwargs = task.env_kwargs(tools=TOOLS, entrypoint=f"{fast_pytest} paasio_test.py")
    env = make_env(kwargs.pop("path"), **kwargs)
    env.reset()
    for name in ("paasio_test.py", "test_utils.py"):
        blocked = env.step(ToolCall("rewrite", {"path": name, "new_code": "DATA = []\n"}))
        assert blocked.error, blocked.observation


def test_refactoring_exercises_are_flagged_and_left_out_unless_asked(track, capsys):
    from dgym_tui.cli.main import main

    assert ExercismBenchmark(path=track).tasks() == ["acronym", "affine-cipher", "paasio"]
    assert "ledger" in ExercismBenchmark(path=track, include_refactoring=True).tasks()
    with pytest.raises(KeyError, match="refactoring exercise.*include_refactoring=true"):
        ExercismBenchmark(path=track).load("ledger")
    assert main(["list-tasks", "exercism", "-p", f"path={track}", "--json"]) == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert sorted(rows) == ["acronym", "affine-cipher", "ledger", "paasio"]
    assert rows["ledger"]["refactoring"] and rows["ledger"]["left_out"]
    assert not rows["acronym"]["refactoring"]
    assert rows["paasio"]["test_command"] == "python -m pytest -q paasio_test.py"
    assert main(["list-tasks", "exercism", "-p", f"path={track}", "--details"]) == 0
    assert "  refactoring: yes\n  left out of runs: yes" in capsys.readouterr().out


def test_underscored_slugs_and_the_aider_name(track):
    bench = get_benchmark("aider", path=str(track))
    assert bench.load("affine_cipher").name == "affine-cipher"
    assert ExercismBenchmark(path=track, exercises=["affine_cipher"]).tasks() == ["affine-cipher"]


@pytest.mark.parametrize("slug", ["acronym", "affine-cipher", "paasio"])
def test_solution_resolves_and_no_solution_file_is_visible(slug, track, make_env, fast_pytest):
    task = ExercismBenchmark(path=track).load(slug)
    kwargs = task.env_kwargs(tools=TOOLS, entrypoint=f"{fast_pytest} {task.meta['test']}")
    env = make_env(kwargs.pop("path"), **kwargs)
    first = env.reset()
    assert not first.resolved
    listing = env.step(ToolCall("listdir", {"path": ".", "depth": 4})).observation
    for hidden in (".meta", ".approaches", ".articles", "snippet.txt", "example"):
        assert hidden not in listing, hidden
    for word in ("SECRET_APPROACH", "SECRET_ARTICLE"):
        grep = env.step(ToolCall("grep", {"pattern": word}))
        assert grep.observation.startswith("No match"), grep.observation
    # nor for code the agent runs: the staged copy has no such folder at all
    assert not any((task.path / d).exists() for d in (".meta", ".approaches", ".articles"))
    result = play_solution(env, task)[-1]
    assert result.resolved, result.eval_output


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def sandbox_kind(request) -> str:
    request.getfixturevalue(f"{request.param}_ready")
    return request.param


@pytest.fixture
def host_track():
    """The track outside /tmp (which bwrap replaces by an empty tmpfs anyway): where the
    rest of the host shows read-only, as a cloned track would."""
    base = Path(tempfile.mkdtemp(prefix="dgym-track-", dir="/var/tmp"))
    yield _real_layout_track(base)
    shutil.rmtree(base, ignore_errors=True)


def test_pdb_cannot_read_the_tracks_solutions_in_a_sandbox(host_track, sandbox_kind, make_env,
                                                          fast_pytest):
    """pdb `!` runs Python in the sandbox: the original exercise's solution folders stay unread."""
    task = ExercismBenchmark(path=host_track).load("acronym")
    source = Path(task.meta["source"])
    kwargs = task.env_kwargs(tools=("pdb", "eval"), terminal=sandbox_kind,
                             entrypoint=f"{fast_pytest} acronym_test.py")
    env = make_env(kwargs.pop("path"), **kwargs)
    env.reset()
    for rel in (".meta/example.py", ".approaches/regex-sub/snippet.txt",
                ".articles/performance/content.md", ".meta/config.json"):
        probe = env.step(ToolCall("pdb", {"command": f"!print(open({str(source / rel)!r}).read())"}))
        assert "Error" in probe.observation and "SECRET" not in probe.observation, probe.observation
        assert "''.join" not in probe.observation and "solution" not in probe.observation


def test_pdb_cannot_write_the_test_files_in_a_sandbox(host_track, sandbox_kind, make_env,
                                                      fast_pytest):
    """Every test file and helper (paasio's test_utils.py too) is read-only to code pdb runs."""
    task = ExercismBenchmark(path=host_track).load("paasio")
    kwargs = task.env_kwargs(tools=("pdb", "eval"), terminal=sandbox_kind,
                             entrypoint=f"{fast_pytest} paasio_test.py")
    env = make_env(kwargs.pop("path"), **kwargs)
    env.reset()
    for name in ("paasio_test.py", "test_utils.py"):
        probe = env.step(ToolCall("pdb", {"command": f"!open({name!r}, 'w').write('DATA = []')"}))
        assert "Read-only file system" in probe.observation, probe.observation
    assert (Path(env.workspace.root) / "test_utils.py").read_text() == "DATA = [1, 2, 3]\n"
