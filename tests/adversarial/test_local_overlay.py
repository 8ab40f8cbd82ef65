"""The local terminal's overlay working copy, started as root and as a user.

Not a sandbox (local runs trusted code with its user's rights): these check that the
commands run in the overlay's merged view, as that user, without capabilities, that the
rest of the machine stays as they see it without an overlay, and that the original
never changes.
"""

from __future__ import annotations

import os


def test_local_commands_run_in_the_overlay_as_their_user(local_prober):
    host = local_prober.host_folder()
    (host / "note.txt").write_text("HOST NOTE 5c1e\n")
    os.chmod(host / "note.txt", 0o644)
    probe = local_prober.run(
        [f"id -u; pwd; cat {host}/note.txt; echo 'x = 2' > app.py && cat app.py; "
         "cat {repo}/app.py; grep CapEff /proc/self/status; stat -c %u {repo}"],
        files={"app.py": "x = 1\n"})
    lines = probe.results[0].output.splitlines()
    uid = lines[-1]  # the prober's user owns the original
    assert probe.host_root.startswith("/proc/"), probe.host_root  # an overlay, not a copy
    assert lines[:5] == [uid, probe.workdir, "HOST NOTE 5c1e", "x = 2", "x = 1"], lines
    if uid != "0":  # a user namespace of the user's own: no capability kept
        assert lines[5].split() == ["CapEff:", "0000000000000000"], lines
