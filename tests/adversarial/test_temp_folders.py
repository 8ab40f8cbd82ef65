"""Nothing outlives an episode: a whole episode, started as root and as a user, leaves
nothing in the host's temporary folder (``$TMPDIR``), also when a sandbox's commands
leave folders they made unreadable in their scratch folder (the sandbox's /tmp).

Before, every episode started as a user left its overlay probe behind (overlayfs's
``work/work`` is mode 000, which ``shutil.rmtree(ignore_errors=True)`` skipped).
"""

from __future__ import annotations

import os

LITTER = "mkdir -p $TMPDIR/d/e && touch $TMPDIR/d/e/f && chmod 000 $TMPDIR/d/e $TMPDIR/d; echo done"


def _leaves_nothing(prober, command: str) -> None:
    tmp = prober.host_folder()
    probe = prober.run([command], host_env={"TMPDIR": str(tmp)})
    assert "done" in probe[0].output, probe[0].output
    assert os.listdir(tmp) == []


def test_a_sandboxed_episode_leaves_nothing_in_the_temporary_folder(prober):
    _leaves_nothing(prober, LITTER)


def test_a_local_episode_leaves_nothing_in_the_temporary_folder(local_prober):
    """(The local terminal's commands are trusted and share the host's ``$TMPDIR``.)"""
    _leaves_nothing(local_prober, "echo done")


#: A chain of 1,200 folders (``shutil.rmtree`` recurses once per level, past Python's
#: recursion limit of 1,000) in the working copy and in the scratch folder.
DEEP = ("python3 -c \"import os\nfor top in ('.', os.environ['TMPDIR']):\n"
        "    os.chdir(top)\n    for _ in range(1200): os.mkdir('d'); os.chdir('d')\n"
        "    open('f.py', 'w').write('x = 1')\"; echo done")


def test_folders_nested_deeper_than_python_recurses_are_deleted(prober):
    """Before, ``close()`` (and a fork's, and submit's grading copy's cleanup) raised
    ``RecursionError`` from ``shutil.rmtree`` and left the working copy behind."""
    _leaves_nothing(prober, DEEP)


#: In the terminal's scratch folder (bound writable at its host path on bwrap, at /run/dgym
#: in a container): a folder made unreadable with a file inside, and a chain of 1,200 folders.
SCRATCH = ("python3 -c \"import os\n"
           "for line in open('/proc/self/mountinfo'):\n"
           "    point = line.split()[4]\n"
           "    if 'dgym-scratch-' not in point and point != '/run/dgym': continue\n"
           "    os.chdir(point)\n"
           "    os.makedirs('locked/inner'); open('locked/inner/f', 'w').write('x')\n"
           "    os.chmod('locked/inner', 0); os.chmod('locked', 0)\n"
           "    for _ in range(1200): os.mkdir('d'); os.chdir('d')\n"
           "    print('littered')\"; echo done")


def test_what_the_sandbox_leaves_in_its_scratch_folder_is_deleted(prober):
    """Before, the terminal's ``close()`` deleted its scratch folder with
    ``shutil.rmtree(ignore_errors=True)``: the chain made it raise ``RecursionError`` (the
    scratch folder stayed, and close stopped before the rest of its work), and as a user the
    unreadable folder stayed."""
    tmp = prober.host_folder()
    probe = prober.run([SCRATCH], host_env={"TMPDIR": str(tmp)})
    assert "littered" in probe[0].output, probe[0].output
    assert os.listdir(tmp) == []
