"""What of the host a bwrap sandbox shows (read-only): an allow-list, never ``/``.

Shown, read-only:

- the system folders :data:`SYSTEM` (``/usr``, ``/bin``, ``/sbin``, ``/lib*``;
  links such as Debian's ``/bin -> usr/bin`` are recreated as links);
- the ``/etc`` entries in :data:`ETC` that Python, the C library and common
  command-line tools read (dynamic linker cache, name-service switch, time
  zone, Debian alternatives, CA certificates, MIME types, protocol and service
  names, OS release, Debian's Python configuration); ``/etc/passwd``,
  ``/etc/group`` and ``/etc/hosts`` are written by the terminal (the sandbox's
  user, root and nobody; localhost only), so the host's user list does not
  show; ``/etc/resolv.conf`` only with the network on;
- the Python the tests use (:func:`python_folders`): this process's
  interpreter prefixes and site-packages, the activated virtualenv
  (``VIRTUAL_ENV``) and the interpreter it was made from, each ``PATH``
  folder, the prefix of every ``python*`` found on ``PATH``, and the whole
  pyenv root when its ``shims`` folder is on ``PATH`` (a shim runs pyenv).

Never shown: ``/`` itself, the original repository (only a virtualenv inside
it), ``$HOME`` and any top-level folder of it that is not a Python prefix,
``/var``, ``/root``, ``/run``, ``/home``, ``/etc`` as a whole, ``/tmp`` (a
private tmpfs), ``/proc`` of the host (a new one), ``/sys``. Folders that
Python's ``.pth`` files name outside these (editable installs of other
projects) are not shown either.
"""

from __future__ import annotations

import glob
import os
import site
import sys
import time
from collections.abc import Iterable, Mapping

#: System folders shown read-only (recreated as links where the host has links).
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

#: /etc entries shown read-only when the host has them (files, folders or links).
ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "host.conf", "gai.conf",
       "localtime", "timezone", "alternatives", "ssl/certs", "ca-certificates",
       "ca-certificates.conf", "mime.types", "protocols", "services", "os-release",
       "debian_version", "inputrc", "locale.alias", "python3", "python3.*")

#: Folders never shown as a whole (a Python prefix deeper inside may be).
NEVER = frozenset({"/", "/var", "/root", "/run", "/home", "/etc", "/tmp", "/proc", "/sys",
                   "/dev", "/boot", "/mnt", "/media", "/srv", "/opt"})


#: Seconds a folder must have stayed unchanged before the names found in it are kept for the
#: next terminal (a file system with coarse timestamps could otherwise hide a change made
#: in the same tick as the listing).
SETTLED = 2.0

#: ``{(folder, pattern): ((st_dev, st_ino, st_mtime_ns, st_ctime_ns), matches)}``: what
#: :func:`_glob_in` found, kept per process (a terminal starts per reset and per fork).
_listed: dict[tuple[str, str], tuple[tuple[int, int, int, int], list[str]]] = {}


def _glob_in(folder: str, pattern: str) -> list[str]:
    """``glob.glob(folder/pattern)``, with ``pattern`` a plain name pattern (no ``/``).

    The answer depends only on the folder's names, and creating, removing or renaming
    an entry changes the folder's modification time: it is kept per process while the
    folder (reached through the same path, links followed as glob follows them) has
    the same device, inode, modification and change times, and is kept only once the
    folder has been unchanged :data:`SETTLED` seconds. Listing ``/usr/bin`` at every
    terminal start took ~3 of the ~4 ms :func:`python_folders` costs here.

    Returns:
        The matching paths (``folder/name``), as :func:`glob.glob` returns them.
    """
    try:
        st = os.stat(folder)
    except (OSError, ValueError):
        return glob.glob(os.path.join(folder, pattern))
    key, stamp = (folder, pattern), (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
    kept = _listed.get(key)
    if kept is not None and kept[0] == stamp:
        return list(kept[1])
    found = glob.glob(os.path.join(folder, pattern))
    if time.time() - st.st_mtime_ns / 1e9 >= SETTLED:
        _listed[key] = (stamp, list(found))
    else:
        _listed.pop(key, None)
    return found


def etc_entries() -> list[str]:
    """The host paths of :data:`ETC` that exist here (``/etc/...``), sorted."""
    found: set[str] = set()
    for pattern in ETC:
        found.update(p for p in glob.glob(os.path.join("/etc", pattern)) if os.path.lexists(p))
    return sorted(found)


def within(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or lies inside it (both normalised absolute paths)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _is_prefix(folder: str) -> bool:
    """True when ``folder`` is a Python installation, a virtualenv or a pyenv root."""
    return (os.path.isfile(os.path.join(folder, "pyvenv.cfg"))
            or bool(_glob_in(os.path.join(folder, "lib"), "python3*"))
            or os.path.isfile(os.path.join(folder, "conda-meta", "history"))
            or _is_pyenv_root(folder))


def _is_pyenv_root(folder: str) -> bool:
    """True for a pyenv installation (its shims run ``libexec/pyenv`` to pick a version)."""
    return (os.path.isfile(os.path.join(folder, "libexec", "pyenv"))
            and os.path.isdir(os.path.join(folder, "versions")))


def _prefix_of(executable: str) -> str:
    """The prefix of an interpreter: ``P`` for ``P/bin/python3``, else its folder."""
    folder = os.path.dirname(executable)
    return os.path.dirname(folder) if os.path.basename(folder) == "bin" else folder


def _venv_base(venv: str) -> str | None:
    """The prefix of the interpreter a virtualenv was made from (``home`` in pyvenv.cfg)."""
    try:
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    return _prefix_of(os.path.join(value.strip(), "python"))
    except OSError:
        return None
    return None


def python_folders(environ: Mapping[str, str], home: str, excluded: Iterable[str] = ()) -> list[str]:
    """Host folders the sandbox shows read-only so that the tests find their Python and tools.

    Args:
        environ: the host's environment (``PATH``, ``VIRTUAL_ENV``).
        home: the host user's home folder (real path); neither it nor a
            top-level folder of it is shown unless that folder is a Python prefix.
        excluded: real paths never shown nor shown inside (the original
            repository, the working copy); a Python prefix inside one of
            them is still shown (a virtualenv kept in the repository).

    Returns:
        Real paths of existing folders, outermost only (none inside another),
        none inside :data:`SYSTEM`, sorted.
    """
    prefixes: set[str] = set()
    others: set[str] = set()
    for path in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        prefixes.add(path)
    others.update(site.getsitepackages() if hasattr(site, "getsitepackages") else [])
    if site.ENABLE_USER_SITE:
        others.add(site.getusersitepackages())
    venv = environ.get("VIRTUAL_ENV", "")
    if os.path.isabs(venv):
        prefixes.add(venv)
        base = _venv_base(venv)
        if base:
            prefixes.add(base)
    for entry in environ.get("PATH", "").split(os.pathsep):
        if not os.path.isabs(entry) or not os.path.isdir(entry):
            continue  # relative entries name folders of the working copy, not of the host
        others.add(entry)
        parent = os.path.dirname(entry)
        if os.path.basename(entry) == "shims" and _is_pyenv_root(parent):
            prefixes.add(parent)  # pyenv's shims need the whole pyenv root
        if os.path.basename(entry) == "bin" and os.path.isfile(os.path.join(parent, "pyvenv.cfg")):
            prefixes.add(parent)  # a virtualenv's bin on PATH: the virtualenv is in use
        for exe in _glob_in(entry, "python*"):
            real = os.path.realpath(exe)
            if os.path.isfile(real):
                prefixes.add(_prefix_of(real))
                venv_root = _prefix_of(exe)
                if os.path.isfile(os.path.join(venv_root, "pyvenv.cfg")):
                    prefixes.add(venv_root)
    home = os.path.realpath(home) if home else ""
    excluded = [os.path.realpath(p) for p in excluded if p]
    kept: set[str] = set()
    for path in {os.path.realpath(p) for p in prefixes | others if p}:
        if not os.path.isdir(path) or any(within(path, s) for s in SYSTEM):
            continue
        prefix = _is_prefix(path)
        if path in NEVER or (home and home != "/" and (
                path == home or (os.path.dirname(path) == home and not prefix))):
            continue
        if any(within(e, path) or (within(path, e) and not prefix) for e in excluded):
            continue
        kept.add(path)
    return sorted(p for p in kept if not any(o != p and within(p, o) for o in kept))


def passwd_text(uid: int, gid: int, name: str, home: str) -> tuple[str, str]:
    """``(/etc/passwd, /etc/group)`` of the sandbox: root, its own user, nobody."""
    users = ["root:x:0:0:root:/root:/usr/sbin/nologin", f"{name}:x:{uid}:{gid}:{name}:{home}:/bin/sh"]
    groups = ["root:x:0:", f"{name}:x:{gid}:"]
    if uid != 65534:
        users.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    if gid != 65534:
        groups.append("nogroup:x:65534:")
    if uid == 0:
        users = users[1:]
    if gid == 0:
        groups = groups[1:]
    return "\n".join(users) + "\n", "\n".join(groups) + "\n"


#: /etc/hosts of a sandbox without network.
HOSTS = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
