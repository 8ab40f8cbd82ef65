"""Load the app's Textual themes from the ``themes/`` resource folder (TOML files).

TOML, read by the standard library's ``tomllib`` (~4 ms to import), not YAML: PyYAML's
import (~20 ms) was the largest single import before the app's first frame.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from textual.theme import Theme

#: Theme fields a theme file may set (everything else is refused).
_FIELDS = set(Theme.__dataclass_fields__)


class ThemeFileError(Exception):
    """A theme file is malformed; the message names the file and the problem."""


def load_theme(path: Path) -> Theme:
    """Read one theme TOML file.

    Args:
        path: a ``.toml`` file with at least ``name`` and ``primary``.

    Returns:
        The Textual :class:`~textual.theme.Theme`.

    Raises:
        ThemeFileError: unreadable or not TOML, missing ``name`` / ``primary``, or
            unknown keys.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ThemeFileError(f"{path}: cannot read theme: {exc}") from None
    if "name" not in data or "primary" not in data:
        raise ThemeFileError(f"{path}: a theme needs at least 'name' and 'primary'")
    unknown = set(data) - _FIELDS
    if unknown:
        raise ThemeFileError(f"{path}: unknown theme keys {sorted(unknown)}; "
                             f"allowed: {sorted(_FIELDS)}")
    return Theme(**data)


def load_themes(folder: Path | None = None) -> list[Theme]:
    """Load every ``*.toml`` theme in ``folder`` (default: the themes resource).

    Returns:
        Themes sorted by file name; an absent folder gives an empty list.

    Raises:
        ThemeFileError: a file is malformed.
    """
    if folder is None:
        from dgym_tui.support.resources import resource_dir
        try:
            folder = resource_dir("themes")
        except FileNotFoundError:
            return []
    if not folder.is_dir():
        return []
    return [load_theme(p) for p in sorted(folder.glob("*.toml"))]
