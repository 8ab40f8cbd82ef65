"""The working copy's size is capped (issue 24, class 6).

Code run through pdb writes past ``max_workspace_bytes`` (into a visible file,
then into a cache folder no tool shows): the step's observation ends saying
so, and evals refuse to run until the files are gone.
"""

from __future__ import annotations

from dgym_tui.core.env import RepoEnv

FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"


def _pdb(env, command):
    return env.step({"name": "pdb", "arguments": {"command": command}})


def test_a_step_growing_the_working_copy_past_its_limit_says_so(tmp_path, sandbox):
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    kind, image = sandbox
    with RepoEnv(tmp_path, entrypoint=f"{FAST_PYTEST} test_ok.py", terminal=kind, image=image,
                 max_workspace_bytes=1 << 20) as env:
        assert env.reset().resolved
        for path in ("big.bin", "__pycache__/big.bin"):
            result = _pdb(env, f"!import os; os.makedirs('__pycache__', exist_ok=True); "
                               f"open({path!r}, 'wb').write(os.urandom(2 << 20))")
            assert result.error and "over its limit of 1.0 MiB" in result.observation, \
                result.observation
            result = env.step({"name": "eval", "arguments": {}})
            assert not result.resolved and "over its limit" in result.eval.problem
            result = _pdb(env, f"!import os; os.remove({path!r})")
            assert not result.error, result.observation
            result = env.step({"name": "eval", "arguments": {}})
            assert result.resolved, result.observation


def test_folders_nested_too_deep_to_measure_are_named_and_evals_resume_once_deleted(tmp_path):
    """A chain of 300 folders cannot be measured (256 descriptors at most): the observation
    names the chain's top folder in a short line and says what to do (before: its whole
    512-character path, twice, and "until it is smaller")."""
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    with RepoEnv(tmp_path, entrypoint=f"{FAST_PYTEST} test_ok.py", terminal="local") as env:
        assert env.reset().resolved
        result = _pdb(env, "!import os; _ = [(os.mkdir('d'), os.chdir('d')) for _ in range(300)]; "
                           "os.chdir(os.environ.get('PWD', '/'))")
        assert result.error
        assert result.observation.endswith(
            "[the working copy cannot be measured: folders nested deeper than 256 levels "
            "below 'd'; evals do not run until they are deleted]"), result.observation
        result = env.step({"name": "eval", "arguments": {}})
        assert not result.resolved and "below 'd'" in result.eval.problem
        assert result.observation.count("cannot be measured") == 2, result.observation
        result = _pdb(env, "!import shutil; shutil.rmtree('d')")
        assert not result.error, result.observation
        assert env.step({"name": "eval", "arguments": {}}).resolved
