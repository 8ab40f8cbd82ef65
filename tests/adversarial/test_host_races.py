"""Host steps racing the agent's background processes.

A program the agent starts (from pdb ``!``, a test, the eval) may keep running
while the host lists, reads and diffs the working copy. Each test here puts the
sandbox's move at the worst moment deterministically: a wrapper around one host
call runs the agent's command in the episode's own terminal right after that call,
as a background process could. Found by random-timing probes (a daemon swapping
files, links, FIFOs and folders while the host ran tools, patches, forks and
submits).
"""

from __future__ import annotations

import pytest

from dgym_tui.core.env import RepoEnv

FAST_PYTEST = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider"


def _repo(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "test_x.py").write_text("from pkg.mod import X\n\n\ndef test_x():\n"
                                        "    assert X == 1\n")
    return tmp_path


@pytest.mark.parametrize("overlay", [False, True], ids=["copy", "overlay"])
@pytest.mark.parametrize("kind", ["local", "bwrap"])
def test_a_new_file_removed_between_the_listing_and_the_diff_is_left_out_of_the_patch(
        kind, overlay, tmp_path, request):
    """The agent makes a file, and removes it right after the host listed the changes.

    Before the fix ``env.patch()`` raised ``ValueError: a file patch needs at least one
    side`` (the path was new, and missing when read); the random probe met it in half of
    its patches while a daemon renamed files back and forth.
    """
    if kind == "bwrap":
        request.getfixturevalue("bwrap_ready")
    env = RepoEnv(_repo(tmp_path), entrypoint=f"{FAST_PYTEST} test_x.py", terminal=kind,
                  terminal_options={"overlay": overlay}, eval_timeout=60)
    with env:
        env.reset()
        made = env.terminal.run("echo 'Y = 2' > pkg/new.py && echo 'X = 1  # same' > pkg/mod.py",
                                timeout=30)
        assert made.exit_code == 0, made.output
        workspace = env.workspace
        listed = workspace.changed_files

        def listed_then_removed():
            names = listed()
            gone = env.terminal.run("rm pkg/new.py", timeout=30)  # the agent's daemon, now
            assert gone.exit_code == 0, gone.output
            return names

        workspace.changed_files = listed_then_removed
        patch = env.patch()
        assert "pkg/new.py" not in patch
        assert "+X = 1  # same" in patch  # the rest of the patch is still there
        del workspace.changed_files
        assert env.patch() == patch
