"""Application settings: built-in defaults, overridden per deployment.

``load`` returns a fresh settings dict for one deployment; the defaults
themselves never change.
"""

from __future__ import annotations

import json

DEFAULTS = {
    "debug": False,
    "database": {"host": "localhost", "port": 5432, "options": {"timeout": 30}},
    "cache": {"enabled": True, "ttl": 300},
    "features": [],
}


def deep_merge(base: dict, override: dict) -> dict:
    """Merge ``override`` into ``base`` (in place) and return ``base``.

    Nested dicts are merged key by key; any other value replaces the old one.
    """
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            deep_merge(base[key], value)
        else:
            base[key] = value
    return base


def load(overrides: dict | None = None) -> dict:
    """Return the defaults with ``overrides`` applied."""
    settings = dict(DEFAULTS)
    return deep_merge(settings, overrides or {})


def load_json(text: str) -> dict:
    """Like :func:`load`, reading the overrides from a JSON object."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("settings must be a JSON object")
    return load(data)


def get(settings: dict, dotted: str, default=None):
    """Read ``"database.options.timeout"`` style keys."""
    node = settings
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node
