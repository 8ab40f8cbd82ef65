"""Where the project's resource folders (agents/, themes/, data/) are found."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent


def resource_dir(name: str) -> Path:
    """Return the folder ``name`` ("agents", "themes" or "data").

    A checkout (editable install) uses the folder at the repository's top; an
    installed wheel uses the copy packaged as ``dgym_tui/_<name>``.

    Raises:
        FileNotFoundError: neither location exists (a broken install).
    """
    for candidate in (_PACKAGE.parent / name, _PACKAGE / f"_{name}"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"resource folder {name!r} not found; reinstall dgym-tui")
