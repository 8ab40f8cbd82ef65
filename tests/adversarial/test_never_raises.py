"""Reset and step never raise on anything the sandbox writes (issue 24, class 8).

The tests of the repository replace the eval's report file (in the scratch
folder the sandbox may write) with something hostile: a line of 200,000 ``[``
(``json.loads`` raises ``RecursionError``), a file past the size cap whose
genuine-looking records sit at its end, a FIFO, a link to a host file, a
folder. The eval then fails with a one-line reason; ``reset`` and ``step``
return. Invalid UTF-8 between genuine records is skipped.
"""

from __future__ import annotations

import pytest

from dgym_tui.core.env import RepoEnv

FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"

GENUINE = ('{"event": "start"}\n{"event": "status", "category": "passed"}\n'
           '{"event": "end", "exitstatus": 0}\n')

#: name -> (Python statements planting at `path`, words of the expected problem or None)
PLANTS = {
    "deeply-nested-line": (f'open(path, "w").write({GENUINE!r}[:19] + "\\n" + "[" * 200000 + "\\n")',
                           "nested too deeply"),
    "larger-than-the-cap": (f'open(path, "w").write("x" * (5 << 20) + "\\n" + {GENUINE!r})',
                            "larger than"),
    "fifo": ("os.mkfifo(path)", "FIFO"),
    "link-to-a-host-file": ('os.symlink("/etc/passwd", path)', "link"),
    "folder": (f'os.mkdir(path); open(path + "/x", "w").write({GENUINE!r})', "folder"),
    "invalid-utf-8": (f'open(path, "wb").write(b"\\xff\\xfe\\xc3(\\n" + {GENUINE!r}.encode())', None),
}

TEST_TEMPLATE = '''\
import os


def _report_path():
    # the plugin took the variable out of os.environ; the process's start environment keeps it
    for item in open("/proc/self/environ", "rb").read().split(b"\\0"):
        if item.startswith(b"DGYM_PYTEST_REPORT="):
            return item.split(b"=", 1)[1].decode()


def test_plant():
    path = _report_path()
    assert path
    os.unlink(path)
    {plant}
'''


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_a_hostile_report_is_a_failed_eval_not_an_exception(plant, sandbox, tmp_path):
    code, words = PLANTS[plant]
    (tmp_path / "test_plant.py").write_text(TEST_TEMPLATE.format(plant=code))
    kind, image = sandbox
    with RepoEnv(tmp_path, entrypoint=f"{FAST_PYTEST} test_plant.py", terminal=kind,
                 image=image, eval_timeout=60) as env:
        first = env.reset()  # the initial eval meets the plant: must not raise
        for result in (first, env.step({"name": "eval", "arguments": {}})):
            summary = result.eval
            if words is None:
                assert result.resolved and not summary.problem, result.observation
                continue
            assert not result.resolved, result.observation
            assert words in summary.problem and "\n" not in summary.problem, summary.problem
            assert summary.problem in result.observation


def test_the_report_plugin_leaves_no_unclosed_file_warning(bwrap_ready, tmp_path):
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    with RepoEnv(tmp_path, entrypoint="PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -X dev -m pytest "
                 "-q -p no:cacheprovider test_ok.py", terminal="bwrap") as env:
        first = env.reset()
        assert first.resolved, first.observation
        assert "ResourceWarning" not in first.observation
        assert "unclosed file" not in first.observation
