"""Who the sandboxed commands run as: never uid 0 of the host's user namespace.

When dgym runs as root, the sandbox's commands run as an unprivileged uid /
gid of their own (:func:`sandbox_ids`): one drawn at random per terminal from
:data:`UID_RANGE` (no user of the machine has it, so no file of the host
belongs to it, and the process cap, counted per uid, is the episode's own), or
the fixed ``DGYM_SANDBOX_UID`` / ``DGYM_SANDBOX_GID``. The working copy and the
scratch folder are handed to it (:func:`chown_tree`) before the first command.
When dgym runs as a user, the commands keep that user's uid (bubblewrap cannot
map another one without privileges), inside a sandbox that shows them nothing
else of the host.
"""

from __future__ import annotations

import errno
import os
import secrets
import subprocess

from dgym_tui.core.types import SANDBOX_UID_RANGE

#: uids (and gids, the same number) a root-started sandbox draws its own from.
UID_RANGE = SANDBOX_UID_RANGE


def sandbox_ids() -> tuple[int, int] | None:
    """The (uid, gid) a sandbox's commands run as when dgym runs as root; None when not root.

    A fresh random pair from :data:`UID_RANGE` at each call, unless
    ``DGYM_SANDBOX_UID`` is set (then ``DGYM_SANDBOX_GID``, default the same number).

    Raises:
        ValueError: ``DGYM_SANDBOX_UID`` / ``DGYM_SANDBOX_GID`` is not a number
            above 0 (the sandbox never runs as root).
    """
    if os.geteuid() != 0:
        return None
    fixed = os.environ.get("DGYM_SANDBOX_UID", "")
    if not fixed:
        uid = UID_RANGE.start + secrets.randbelow(len(UID_RANGE))
        return uid, uid
    ids = []
    for name in ("DGYM_SANDBOX_UID", "DGYM_SANDBOX_GID"):
        raw = os.environ.get(name, "") or fixed
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"{name} must be a number above 0, got {raw!r}") from None
        if value <= 0:
            raise ValueError(f"{name} must be a number above 0, got {raw!r}")
        ids.append(value)
    return ids[0], ids[1]


def drop_argv(ids: tuple[int, int] | None) -> list[str]:
    """``setpriv`` arguments that run the next program as ``ids`` (empty if None).

    The program gets no supplementary group, no capability (none inheritable,
    an empty bounding set) and ``no_new_privs`` (setuid binaries do not raise it).
    """
    if ids is None:
        return []
    uid, gid = ids
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--inh-caps=-all",
            "--bounding-set=-all", "--no-new-privs", "--"]


def chown_tree(root: str, uid: int, gid: int) -> None:
    """chown ``root`` and everything below it to ``uid:gid``, never following a link.

    ``chown -R -P -h`` (coreutils: descriptor-based, links themselves are changed, not
    their targets, any depth; ``os.fwalk`` recursed once per level and raised
    ``RecursionError`` on a fork of a working copy holding a chain of 1,200 folders).

    Args:
        root: a folder (host path) the caller trusts (made by the host), that no
            sandboxed process is changing yet.

    Raises:
        OSError: ``root`` or something below it could not be changed (chown's first
            line of error).
    """
    done = subprocess.run(["chown", "-R", "-P", "-h", f"{uid}:{gid}", "--", root],
                          capture_output=True, text=True, errors="replace", check=False)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or [f"exit code {done.returncode}"]
        raise OSError(errno.EPERM, f"chown of {root!r} failed: {lines[0][:300]}")

