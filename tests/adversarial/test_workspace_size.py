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
