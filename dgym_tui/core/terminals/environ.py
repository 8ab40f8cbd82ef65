"""The environment a sandboxed command starts with: an allow-list, never the host's whole environment.

The host's environment holds secrets (``OPENAI_API_KEY``, cloud tokens, SSH
agent sockets) that the tests would print and the trajectory would keep. A
sandboxed command gets only:

- ``PATH`` (the host's, so the same tools and the activated virtualenv come
  first; entries the sandbox does not show simply find nothing);
- ``VIRTUAL_ENV`` (the activated virtualenv; its folders are shown read-only);
- ``LANG``, ``LANGUAGE`` and every ``LC_*`` (the user's locale);
- ``TZ``, ``TERM``, ``COLUMNS``, ``LINES``, ``PAGER``;
- the Python variables that only change how Python runs, never where from:
  ``PYTHONUNBUFFERED``, ``PYTHONDONTWRITEBYTECODE``, ``PYTHONIOENCODING``,
  ``PYTHONUTF8``, ``PYTHONHASHSEED``, ``PYTHONWARNINGS``, ``PYTHONFAULTHANDLER``,
  ``PYTHONDEVMODE``, ``PYTHONBREAKPOINT``, ``PYTEST_ADDOPTS``,
  ``PYTEST_DISABLE_PLUGIN_AUTOLOAD`` (not ``PYTHONPATH``, ``PYTHONHOME``,
  ``PYTHONSTARTUP``, ``PYTHONUSERBASE``: they point at host folders);
- ``HOME`` set to a folder inside the sandbox (:data:`SANDBOX_HOME`), ``USER``
  / ``LOGNAME`` set to the sandbox's own user name, ``TMPDIR`` to ``/tmp``;
- what the task itself asks for (the ``env`` a command is run with), and the
  episode's tag (``DGYM_EPISODE``).

The ``local`` terminal uses the same allow-list (:func:`local_environ`) with
the host's own ``HOME``, ``USER``, ``LOGNAME`` and ``TMPDIR``, since its
commands run on the host's files. So a variable such as ``CI`` (pytest prints
whole assertion explanations in its short summary when it is set) changes a
run on no terminal, and a trajectory recorded on ``local`` replays the same in
a sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping

#: Host variables a sandboxed command keeps (exact names).
KEPT = frozenset({
    "PATH", "VIRTUAL_ENV", "LANG", "LANGUAGE", "TZ", "TERM", "COLUMNS", "LINES", "PAGER",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8",
    "PYTHONHASHSEED", "PYTHONWARNINGS", "PYTHONFAULTHANDLER", "PYTHONDEVMODE",
    "PYTHONBREAKPOINT", "PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
})
#: Host variables kept by prefix.
KEPT_PREFIXES = ("LC_",)

#: HOME inside the sandbox (on its private /tmp: empty at every start).
SANDBOX_HOME = "/tmp"
#: The user name commands see (USER, LOGNAME, and the sandbox's /etc/passwd).
SANDBOX_USER_NAME = "sandbox"


def sandbox_environ(host: Mapping[str, str], defaults: Mapping[str, str],
                    task: Mapping[str, str] | None) -> dict[str, str]:
    """The environment of one sandboxed command.

    Args:
        host: the host's environment (``os.environ``); only :data:`KEPT` names
            and :data:`KEPT_PREFIXES` pass.
        defaults: the terminal's own settings (``TERM=dumb``, ...), applied over ``host``.
        task: the command's own variables (the task's); applied last, unfiltered.

    Returns:
        A new dict.
    """
    env = {k: v for k, v in host.items() if k in KEPT or k.startswith(KEPT_PREFIXES)}
    env.update(defaults)
    env.update({"HOME": SANDBOX_HOME, "USER": SANDBOX_USER_NAME, "LOGNAME": SANDBOX_USER_NAME,
                "TMPDIR": "/tmp"})
    env.update(task or {})
    return env


#: Host variables the ``local`` terminal keeps besides :data:`KEPT`: where the host user's files are.
LOCAL_KEPT = ("HOME", "USER", "LOGNAME", "TMPDIR")


def local_environ(host: Mapping[str, str], defaults: Mapping[str, str],
                  task: Mapping[str, str] | None) -> dict[str, str]:
    """The environment of one command on the ``local`` terminal.

    Args:
        host: the host's environment (``os.environ``); :data:`KEPT`,
            :data:`KEPT_PREFIXES` and :data:`LOCAL_KEPT` names pass.
        defaults: the terminal's own settings, applied over ``host``.
        task: the command's own variables, applied last, unfiltered.

    Returns:
        A new dict.
    """
    env = {k: v for k, v in host.items() if k in KEPT or k in LOCAL_KEPT or k.startswith(KEPT_PREFIXES)}
    env.update(defaults)
    env.update(task or {})
    return env
