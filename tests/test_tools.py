"""The built-in tools listdir, view, rewrite, grep, eval, submit, through RepoEnv.step.

Each test runs against both terminals (``terminal_kind`` / the module-scoped
``shared_env``); the docker variants need the daemon and the sandbox image.
"""

from __future__ import annotations

import os

import pytest

from dgym_tui import RepoEnv, ToolCall
from dgym_tui.core.tools.grep import MAX_HITS
from dgym_tui.core.tools.view import MAX_VIEW_LINES

TOOLS = ["listdir", "view", "eval", "rewrite", "grep", "submit"]

CODE = """\
def add(a, b):
    return a - b


def mul(a, b):
    result = 0
    for _ in range(b):
        result += a
    return result
"""

TESTS = """\
from code import add, mul


def test_add():
    assert add(1, 2) == 3


def test_mul():
    assert mul(3, 4) == 12
"""

FILES = {
    "code.py": CODE,
    "test_code.py": TESTS,
    "pkg/__init__.py": "",
    "pkg/deep/mod.py": "VALUE = 'needle'\n",
    "big.py": "".join(f"x{i} = {i}  # needle\n" for i in range(1, 501)),
    "secret.py": "ANSWER = 'needle'\n",
    ".debugignore": "secret.py\n",
    ".debugreadonly": "test_code.py\n",
}


def _repo(root, files=FILES):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "blob.bin").write_bytes(b"\x00\x01binary\x02")
    os.symlink("/etc/passwd", root / "passwd")
    return root


@pytest.fixture(scope="module", params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def shared_env(request, tmp_path_factory, sandbox_image):
    """One env per terminal kind for the tools that only read (entrypoint: `true`)."""
    kwargs = {}
    if request.param == "docker":
        request.getfixturevalue("docker_ready")
        kwargs["image"] = sandbox_image
    repo = _repo(tmp_path_factory.mktemp("shared") / "repo")
    env = RepoEnv(repo, entrypoint="true", terminal=request.param, tools=TOOLS, **kwargs)
    env.reset()
    yield env
    env.close()


@pytest.fixture
def quick_env(tmp_path, make_env):
    """A fresh env on the test's terminal kind whose entrypoint is `true`."""
    env = make_env(_repo(tmp_path / "repo"), entrypoint="true", tools=TOOLS)
    env.reset()
    return env


@pytest.fixture
def env(tmp_path, make_env, fast_pytest):
    """A fresh env on the test's terminal kind with a real pytest entrypoint."""
    env = make_env(_repo(tmp_path / "repo"), entrypoint=f"{fast_pytest} test_code.py",
                   tools=TOOLS)
    env.reset()
    return env


def step(env, name, **arguments):
    return env.step(ToolCall(name=name, arguments=arguments))


# ------------------------------------------------------------------ listdir
def test_listdir_depth_one(shared_env):
    r = step(shared_env, "listdir")
    assert not r.error
    assert r.observation == "./\n  big.py\n  blob.bin\n  code.py\n  pkg/\n  test_code.py"


def test_listdir_deeper(shared_env):
    r = step(shared_env, "listdir", path="pkg", depth=3)
    assert r.observation == "pkg/\n  __init__.py\n  deep/\n    mod.py"


def test_listdir_refusals(shared_env):
    r = step(shared_env, "listdir", path="code.py")
    assert r.error and "is a file" in r.observation
    r = step(shared_env, "listdir", path="..")
    assert r.error and "outside" in r.observation
    r = step(shared_env, "listdir", depth=0)
    assert r.error and "depth" in r.observation


# --------------------------------------------------------------------- view
def test_view_numbers_lines(shared_env):
    r = step(shared_env, "view", path="code.py", start=1, end=2)
    assert r.observation == ("code.py, lines 1-2 of 9:\n"
                             "1     def add(a, b):\n"
                             "2         return a - b")


def test_view_marks_breakpoints_and_frame(shared_env):
    shared_env.breakpoints.add("code.py", 2)
    shared_env.breakpoints.add("code.py", 8, "result > 3")
    shared_env.frame = ("code.py", 8)
    try:
        r = step(shared_env, "view", path="code.py", start=1, end=9)
    finally:
        shared_env.breakpoints.clear()
        shared_env.frame = None
    lines = r.observation.splitlines()
    assert "B breakpoint" in lines[0]
    assert lines[2] == "2 B       return a - b"
    assert lines[8] == "8 C->         result += a"
    assert lines[3] == "3"
    assert r.breakpoints == [("code.py", 2), ("code.py", 8)]
    assert r.conditions == {"code.py:8": "result > 3"}


def test_view_window_of_long_file(shared_env):
    r = step(shared_env, "view", path="big.py")
    body = r.observation.splitlines()
    assert body[0] == f"big.py, lines 1-{MAX_VIEW_LINES} of 500:"
    assert body[MAX_VIEW_LINES].endswith(f"x{MAX_VIEW_LINES} = {MAX_VIEW_LINES}  # needle")
    assert "has 500 lines" in body[-1]
    r = step(shared_env, "view", path="big.py", start=450)
    assert r.observation.splitlines()[0] == "big.py, lines 450-500 of 500:"
    r = step(shared_env, "view", path="big.py", start=1, end=500)
    assert "only 200 lines are shown at once" in r.observation


@pytest.mark.parametrize("arguments,message", [
    ({"path": "code.py", "start": 5, "end": 2}, "start (5) is greater than end (2)"),
    ({"path": "code.py", "start": 50}, "past the end of code.py, which has 9 lines"),
    ({"path": "blob.bin"}, "binary file"),
    ({"path": "secret.py"}, "does not exist or is hidden"),
    ({"path": ".debugignore"}, "does not exist or is hidden"),
    ({"path": "missing.py"}, "does not exist"),
    ({"path": "passwd"}, "leads outside the repository"),
    ({"path": "/etc/passwd"}, "is absolute"),
    ({"path": "pkg/../../etc/passwd"}, "leads outside"),
    ({"path": "pkg"}, "is a folder"),
])
def test_view_refusals(shared_env, arguments, message):
    r = shared_env.step(ToolCall("view", arguments))
    assert r.error
    assert message in r.observation
    assert "root:" not in r.observation


# --------------------------------------------------------------------- grep
def test_grep_hits_and_hidden_files(shared_env):
    r = step(shared_env, "grep", pattern="needle", path="pkg")
    assert r.observation == "1 matches for 'needle' in pkg:\npkg/deep/mod.py:1: VALUE = 'needle'"
    r = step(shared_env, "grep", pattern=r"def \w+\(a, b\)")
    assert "code.py:1: def add(a, b):" in r.observation
    assert "code.py:5: def mul(a, b):" in r.observation
    r = step(shared_env, "grep", pattern="ANSWER")
    assert r.observation == "No match for 'ANSWER' in the repository."


def test_grep_is_bounded(shared_env):
    r = step(shared_env, "grep", pattern="needle")
    lines = r.observation.splitlines()
    assert lines[0] == "501 matches for 'needle' in the repository:"
    assert len(lines) == MAX_HITS + 2
    assert lines[-1].startswith(f"... {501 - MAX_HITS} more matches not shown")


def test_grep_refusals(shared_env):
    r = step(shared_env, "grep", pattern="(unclosed")
    assert r.error and "invalid regular expression" in r.observation
    r = step(shared_env, "grep", pattern="x", path="../")
    assert r.error and "outside" in r.observation


# ------------------------------------------------------------------ rewrite
def test_rewrite_replace_insert_delete(quick_env):
    env = quick_env
    r = step(env, "rewrite", path="code.py", start=2, new_code="    return a + b")
    assert not r.error
    assert r.observation.startswith("Replaced line 2 of code.py with 1 line:\n--- a/code.py")
    assert "-    return a - b\n+    return a + b" in r.observation
    r = step(env, "rewrite", path="code.py", start=1, end=0, new_code="import math\n")
    assert r.observation.startswith("Inserted 1 line before line 1 of code.py")
    r = step(env, "rewrite", path="code.py", start=1, end=1, new_code="")
    assert r.observation.startswith("Deleted line 1 of code.py")
    text = (env.workspace.root / "code.py").read_text()
    assert text == CODE.replace("a - b", "a + b")
    assert r.changed_files == ["code.py"]
    assert (env.workspace.source / "code.py").read_text() == CODE


def test_rewrite_whole_file_and_new_file(quick_env):
    env = quick_env
    r = step(env, "rewrite", path="pkg/deep/mod.py", new_code="VALUE = 2\n")
    assert "-VALUE = 'needle'\n+VALUE = 2" in r.observation
    r = step(env, "rewrite", path="pkg/new_mod.py", new_code="NEW = 1")
    assert r.observation.startswith("Created pkg/new_mod.py (1 line):")
    assert (env.workspace.root / "pkg" / "new_mod.py").read_text() == "NEW = 1\n"
    assert r.changed_files == ["pkg/deep/mod.py", "pkg/new_mod.py"]
    r = step(env, "rewrite", path="pkg/other.py", start=1, new_code="x")
    assert r.error and "omit start and end" in r.observation


@pytest.mark.parametrize("arguments,message", [
    ({"path": "test_code.py", "start": 1, "new_code": "x"}, "read-only"),
    ({"path": "secret.py", "new_code": "x"}, "hidden by .debugignore"),
    ({"path": "code.py", "start": 5, "end": 2, "new_code": "x"}, "start (5) is greater than"),
    ({"path": "code.py", "start": 9, "end": 12, "new_code": "x"}, "outside code.py"),
    ({"path": "code.py", "end": 2, "new_code": "x"}, "give `start` together with `end`"),
    ({"path": "blob.bin", "new_code": "x"}, "binary"),
    ({"path": "passwd", "new_code": "x"}, "leads outside"),
    ({"path": "../evil.py", "new_code": "x"}, "leads outside"),
    ({"path": "code.py", "start": 1}, "'new_code' is a required property"),
])
def test_rewrite_refusals(shared_env, arguments, message):
    r = shared_env.step(ToolCall("rewrite", arguments))
    assert r.error
    assert message in r.observation
    assert r.changed_files == []
    assert shared_env.generation == 0


# ------------------------------------------------------------ eval / submit
def test_eval_fix_and_submit(env, terminal_kind):
    assert (env.last.score, env.last.max_score, env.last.resolved) == (1, 2, False)
    r = step(env, "eval")
    assert "1 failed, 1 passed" in r.observation
    assert r.observation.endswith("Score: 1/2 (1 passed, 1 failed).")
    assert r.eval.exit_code == 1
    step(env, "rewrite", path="code.py", start=2, new_code="    return a + b")
    r = step(env, "eval")
    assert (r.score, r.max_score, r.resolved, r.done) == (2, 2, True, False)
    assert r.observation.endswith("All tests pass.")
    r = step(env, "submit")
    assert (r.resolved, r.done) == (True, True)
    assert r.observation.startswith("Submitted.")
    assert "Changed files: code.py" in r.observation
    assert env.patch().startswith("diff --git a/code.py b/code.py")


def test_submit_names_at_most_fifty_changed_files(tmp_path, make_env):
    """An agent that made thousands of files gets a short observation (before, every name)."""
    env = make_env(_repo(tmp_path / "repo"), entrypoint="true", tools=TOOLS)
    env.reset()
    env.terminal.run("python3 -c \"[open(f'new_{i:04}.py', 'w').close() for i in range(1200)]\"")
    r = step(env, "submit")
    assert r.observation.endswith("Changed files: " + ", ".join(
        f"new_{i:04}.py" for i in range(50)) + " and 1,150 more")
    assert env.patch().count("diff --git") == 1200


def test_eval_output_is_bounded(tmp_path, make_env, terminal_kind):
    repo = _repo(tmp_path / "repo")
    env = make_env(repo, entrypoint="python -c \"print('x' * 10_000_000)\"", tools=TOOLS,
                   max_output=4096)
    r = env.reset()
    assert "[output truncated" in r.observation
    assert len(r.observation) < 6000
    assert (r.score, r.max_score) == (1, 1)  # no pytest summary: exit code 0 counts as a pass
    r = step(env, "eval")
    assert "[output truncated" in r.eval_output and len(r.eval_output) < 5000


def test_eval_timeout(tmp_path, make_env, terminal_kind):
    env = make_env(_repo(tmp_path / "repo"), entrypoint="sleep 30", tools=TOOLS,
                   eval_timeout=1)
    r = env.reset()
    assert r.eval.timed_out and not r.resolved
    assert "stopped after 1 s" in r.observation
    assert r.elapsed < 15


def test_test_code_changing_files_bumps_generation(tmp_path, make_env, fast_pytest,
                                                     terminal_kind):
    """A change made by the tests themselves (not by rewrite) moves breakpoints too."""
    repo = _repo(tmp_path / "repo", {
        **FILES,
        "test_code.py": TESTS + (
            "\n\ndef test_writes():\n"
            "    with open('code.py') as fh:\n        text = fh.read()\n"
            "    with open('code.py', 'w') as fh:\n        fh.write('# header\\n' + text)\n"),
    })
    env = make_env(repo, entrypoint=f"{fast_pytest} test_code.py", tools=TOOLS)
    env.reset()  # the initial eval already added one header line
    assert env.generation == 0
    env.breakpoints.add("code.py", 3)  # "    return a - b"
    r = step(env, "eval")
    assert env.generation == 1
    assert r.breakpoints == [("code.py", 4)]
    assert (env.workspace.root / "code.py").read_text().splitlines()[3] == "    return a - b"
