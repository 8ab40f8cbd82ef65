"""dgym-tui: a Python that imported pytest ahead of time and waits to become one run of it.

This file is never imported by dgym: the host copies it into the terminal's
read-only plugin folder and starts it, inside the episode's sandbox, in place
of the entrypoint's last command::

    PYTHON dgym_preload.py CHANNEL ROOT -- -m pytest ARGS          (an eval)
    PYTHON dgym_preload.py CHANNEL ROOT -- -m pdb -m pytest ARGS   (a pdb start)
    PYTHON dgym_preload.py CHANNEL ROOT -- -m pdb ARGS             (pdb of a script)

with the same shell lines before it, environment, working folder, sandbox,
limits and user as the cold command. It imports pytest, its default plugins,
the ``pytest11`` entry points (through pytest's assertion-rewriting hook, as
pytest would) and pdb when asked, never a module of the working copy, then
waits on its control socket: the descriptor CHANNEL (a number), a socket only the
host holds the other end of, or a connection it makes first thing to the Unix
socket at the path CHANNEL (``docker exec`` passes no descriptor), on which the
host accepts one connection. Bytes it writes there: ``R`` ready,
``U`` unfit (a module came from the working copy, or the arguments are not one
of the two forms: the host runs the command cold), then after the host's
``G``: ``P`` (it becomes the run) or ``C`` (a file it imported, or the
configuration file's addopts, changed since, or the current folder holds a
module named like one it imported, which ``python -m`` would import instead:
the host runs the command cold).
To become the run it clears ``__main__``, sets ``sys.argv``, ``sys.orig_argv``
and ``sys.path[0]`` as ``python -m`` does, closes the socket and hands the module to
:func:`runpy._run_module_as_main`, the function the interpreter's own ``-m``
calls. Each spare serves one run only.

The garbage collector is paused during the imports (its passes there find next to
nothing) and enabled again as the interpreter started it; the imports' garbage is
collected once (throwaway classes, pytest's throwaway configuration: a cold run's
passes free it during its imports) and what is left is frozen (:func:`gc.freeze`),
so the run's collections skip it: pytest collects five times at its end
(``unraisableexception``'s cleanup) and the interpreter once more at exit, and
those full passes no longer walk every object of pytest and its plugins (about 40%
of a short run's CPU after the hand-over here). What the run can tell: those objects
are not in :func:`gc.get_objects`, :func:`gc.get_freeze_count` is not 0, one of
them that the run drops inside a reference cycle is never freed (a finalizer of it
does not run), and a preloaded module that turned the collector off when imported
would find it on.

Runs in any Python 3.8+ with pytest; standard library only besides pytest.
"""
import gc
import os
import sys

#: options that change which configuration file pytest reads or what it says
_CONFIG_OPTIONS = ("-c", "--config-file", "--inifile", "--rootdir", "-o", "--override-ini")


def _ini_addopts(args):
    """The ``addopts`` words of the configuration file pytest would read for ``args``
    (a list, maybe empty), or None when that cannot be told for sure."""
    import shlex

    for word in args:
        if word.startswith(_CONFIG_OPTIONS):
            return None
    try:
        from pathlib import Path

        from _pytest.config.findpaths import determine_setup

        found = determine_setup(inifile=None, args=[a for a in args if not a.startswith("-")],
                                rootdir_cmd_arg=None, invocation_dir=Path.cwd())
        value = found[2].get("addopts", "")
        return list(value) if isinstance(value, list) else shlex.split(value)
    except Exception:  # noqa: BLE001  another pytest, an unreadable file: do not guess
        return None


def _blocked(words):
    """Plugin names a ``-p no:NAME`` blocks in ``words``; "*" when ``--assert`` is set."""
    names = set()
    for i, word in enumerate(words):
        if word.startswith("--assert"):
            names.add("*")
        value = None
        if word == "-p" and i + 1 < len(words):
            value = words[i + 1]
        elif word.startswith("-p") and len(word) > 2:
            value = word[2:]
        if value and value.startswith("no:"):
            names.add(value[3:])
    return names


def _plugin_words(args):
    """Every word that decides which entry-point plugins pytest loads and how: its
    command line, PYTEST_ADDOPTS and the configuration file's addopts; None when unknown."""
    import shlex

    ini = _ini_addopts(args)
    if ini is None:
        return None
    try:
        env = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:
        return None
    return [*ini, *env, *args]


def _preload(module, args):
    """Import pdb for a pdb start, and with ``args`` (pytest's arguments; None for pdb of
    a script or another module, which gets pdb alone) what pytest imports before it
    reads a test: its default plugins, as its
    own ``get_config(ARGS)`` does (a ``-p no:NAME`` of the command line honoured), pdb,
    and the ``pytest11`` entry points.

    pytest imports the entry points' modules through its assertion-rewriting import
    hook, after marking every top-level module of their distributions for
    rewriting; they are imported here the same way (through that throwaway
    config, the default ``python_files``) and the hook is removed again, so the
    run's own hook finds them rewritten and marks the same names. Not done when
    autoloading is off, when ``--assert`` is given, when the configuration file
    cannot be told; plugins a ``-p no:NAME`` blocks (command line, PYTEST_ADDOPTS,
    the configuration file's addopts) are left out.

    Returns:
        The words :func:`_plugin_words` found (None when no entry point was preloaded).
    """
    if module == "pdb":
        import pdb  # noqa: F401
    if args is None:  # pdb of a script or of another module
        return None
    from _pytest import config

    throwaway = config.get_config(list(args))
    words = _plugin_words(args)
    if words is None or os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"):
        return None
    blocked = _blocked(words)
    if "*" in blocked:
        return None
    try:
        from importlib import metadata

        import _pytest.assertion

        throwaway.inicfg = {}
        hook = _pytest.assertion.install_importhook(throwaway)
    except Exception:  # noqa: BLE001  another pytest: its plugins load in the run
        return None
    try:
        throwaway._mark_plugins_for_rewrite(hook, False)
        for dist in metadata.distributions():
            for ep in dist.entry_points:
                if ep.group != "pytest11" or ep.name in blocked:
                    continue
                if ep.value.split(":")[0].strip() in blocked:
                    continue
                try:
                    ep.load()
                except Exception:  # noqa: BLE001  pytest meets the same error in the run
                    pass
    except Exception:  # noqa: BLE001
        pass
    finally:
        while hook in sys.meta_path:
            sys.meta_path.remove(hook)
    return words


def _files():
    """``{path: (mtime_ns, size, inode)}`` of every imported module's file and of each
    folder on sys.path (a ``.pth`` or a package added there changes the folder)."""
    seen = {}
    paths = [getattr(m, "__file__", None) for m in list(sys.modules.values())]
    paths += [p for p in sys.path if p]
    for path in paths:
        if not isinstance(path, str) or path in seen:
            continue
        try:
            st = os.stat(path)
        except OSError:
            seen[path] = None
            continue
        seen[path] = (st.st_mtime_ns, st.st_size, st.st_ino)
    return seen


def _inside(path, root):
    path = os.path.realpath(path)
    return path == root or path.startswith(root + os.sep)


def _fit(script, root):
    """True when no imported module lives in the working copy ``root``."""
    root = os.path.realpath(root)
    for name, mod in list(sys.modules.items()):
        path = getattr(mod, "__file__", None)
        if name == "__main__" or not isinstance(path, str):
            continue
        if _inside(path, root):
            return False
    return not _inside(script, root)


def _shadowed():
    """True when the current folder (``sys.path[0]`` of ``python -m``) holds a module or
    package named like one imported here: the run would import that one instead."""
    from importlib import machinery

    names = {name.partition(".")[0] for name in list(sys.modules)}
    suffixes = machinery.all_suffixes()
    try:
        entries = os.listdir(".")
    except OSError:
        return True
    for entry in entries:
        for suffix in suffixes:
            if entry.endswith(suffix) and entry[:-len(suffix)] in names:
                return True
        if entry in names and any(os.path.isfile(os.path.join(entry, "__init__" + suffix))
                                  for suffix in suffixes):
            return True
    return False


def _control(channel):
    """The control socket's descriptor: ``channel`` itself when it is a number, else a
    new connection to the Unix socket at the path ``channel`` (the process ends when
    it cannot connect). The module the connection needs is not left imported."""
    if channel.isdigit():
        return int(channel)
    had = "_socket" in sys.modules
    import _socket

    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(channel)
    except OSError:
        os._exit(0)
    fd = sock.detach()
    if not had:
        del sys.modules["_socket"]
    return fd


def _send(fd, byte):
    try:
        os.write(fd, byte)
    except OSError:
        os._exit(0)


def main():
    script = os.path.abspath(sys.argv[0])
    fd = _control(sys.argv[1])
    root = sys.argv[2]
    argv = sys.argv[4:] if sys.argv[3:4] == ["--"] else []
    module = pytest_args = None
    if argv[:2] == ["-m", "pytest"]:
        module, pytest_args = "pytest", argv[2:]
    elif argv[:4] == ["-m", "pdb", "-m", "pytest"]:
        module, pytest_args = "pdb", argv[4:]
    elif argv[:2] == ["-m", "pdb"] and len(argv) > 2:
        module = "pdb"  # a script or another module under pdb: pdb alone is preloaded
    if module is None:
        _send(fd, b"U")
        os._exit(0)
    rest = argv[2:]  # sys.argv after "-m MODULE" (pdb's own "-m pytest ..." included)
    collecting = gc.isenabled()
    gc.disable()  # the imports make no garbage worth the collector's passes
    try:
        words = _preload(module, pytest_args)
    finally:
        if collecting:
            gc.enable()
    if not _fit(script, root):
        _send(fd, b"U")
        os._exit(0)
    before = _files()
    gc.collect()  # the imports' garbage, freed as a cold run's passes free it
    gc.freeze()  # the run's collections skip what was imported here
    _send(fd, b"R")
    try:
        go = os.read(fd, 1)
    except OSError:
        go = b""
    if go != b"G":
        os._exit(0)
    stale = (b"F" if _files() != before else b"S" if _shadowed() else
             b"W" if words is not None and _plugin_words(pytest_args) != words else b"")
    if stale:
        _send(fd, stale)
        os._exit(0)
    _send(fd, b"P")
    os.close(fd)
    _become(module, rest, [sys.orig_argv[0] if hasattr(sys, "orig_argv") else sys.executable,
                           *argv])


def _become(module, rest, orig_argv):
    """Turn this process into ``python -m MODULE REST`` (never returns normally).

    Every name it uses is local: ``__main__``'s namespace (this function's globals)
    is emptied on the way."""
    import os
    import runpy
    import sys

    run = runpy._run_module_as_main
    main = sys.modules["__main__"]
    namespace = main.__dict__
    builtins = namespace["__builtins__"]
    namespace.clear()
    namespace.update({"__name__": "__main__", "__doc__": None, "__package__": None,
                      "__loader__": None, "__spec__": None, "__annotations__": {},
                      "__builtins__": builtins})
    sys.argv[:] = ["-m", *rest]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = orig_argv
    sys.path[0] = os.getcwd()
    run(module, True)


if __name__ == "__main__":
    main()
