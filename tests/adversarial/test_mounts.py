"""Mount sources the sandbox cannot steer, and an allow-list file system."""

from __future__ import annotations

import os
import shutil
import tempfile

FILES = {"pkg/ro/test_x.py": "def test_x():\n    pass\n", ".debugreadonly": "pkg/ro/test_x.py\n",
         "app.py": "x = 1\n"}


def test_planted_link_in_place_of_a_read_only_entrys_parent_is_not_followed(prober):
    """The sandbox moves the read-only file's folder away and puts a link to a host folder in
    its place; the next sandbox must not bind the host file the link leads to."""
    host = tempfile.mkdtemp(prefix="dgym-adv-host-", dir="/var/tmp")
    os.chmod(host, 0o755)
    with open(os.path.join(host, "test_x.py"), "w") as f:
        f.write("HOST FILE b71e\n")
    os.chmod(os.path.join(host, "test_x.py"), 0o644)
    try:
        probe = prober.run(["mv pkg pkg.moved && mkdir pkg && ln -s " + host + " pkg/ro && echo planted",
                             "cat pkg/ro/test_x.py; cat pkg.moved/ro/test_x.py"], files=FILES)
    finally:
        shutil.rmtree(host, ignore_errors=True)
    if prober.overlay:  # a folder of the original cannot be moved (EXDEV), nor emptied of a mount
        assert "Device or resource busy" in probe[0].output, probe[0].output
    else:
        assert "planted" in probe[0].output, probe[0].output
    assert "HOST FILE" not in probe[1].output, probe[1].output
    assert "def test_x" in probe[1].output  # the real file is still there, moved


def test_only_the_allow_list_is_shown(bwrap_prober):
    """/ holds system folders, a few /etc entries, /proc, /dev, /tmp and the folders of the
    episode and of Python; no /var, /run, /home, /srv, /mnt, /opt, /boot; /etc has no shadow."""
    probe = bwrap_prober.run(["ls -A /", "ls -A /etc", "touch /usr/x /etc/x 2>&1; echo done"])
    top = set(probe[0].output.split())
    assert not top & {"var", "run", "home", "srv", "mnt", "opt", "boot", "media", "sys"}, top
    assert {"usr", "etc", "proc", "dev", "tmp"} <= top, top
    etc = set(probe[1].output.split())
    assert not etc & {"shadow", "gshadow", "sudoers", "ssh", "docker", "machine-id"}, etc
    assert "passwd" in etc and "ld.so.cache" in etc
    assert probe[2].output.count("Read-only file system") == 2, probe[2].output


def test_working_copy_and_scratch_belong_to_the_commands_user(prober):
    """The commands' uid owns the working copy (it can write it) and is not root."""
    probe = prober.run(["id -u; stat -c %u . ; echo x > new.txt && echo wrote"])
    uid, owner, wrote = probe[0].output.split()[:3]
    assert uid == owner and uid != "0" and wrote == "wrote", probe[0].output


RACER = r"""
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.symlink("/oldroot" + sys.argv[1], "lnk")
end = time.time() + 40
while time.time() < end and not os.path.exists("stop"):
    libc.renameat2(-100, b"pkg", -100, b"lnk", 2)   # RENAME_EXCHANGE: pkg is a folder or a link
"""


def test_raced_mount_point_never_writes_to_the_host(bwrap_prober):
    """A sandbox swaps the folder above a read-only file with a link to ``/oldroot/<host
    folder>`` (bwrap's view of the host) while other sandboxes start: bwrap must not create
    the mount point there (as root, or as the user who started dgym)."""
    host = bwrap_prober.host_folder()
    files = {**FILES, "racer.py": RACER}
    bwrap_prober.run(["true"] * 40, files=files, timeout=30,
                     background=f"python3 racer.py {host}")
    assert list(host.iterdir()) == []
