import pytest

from settings import get, load, load_json


def test_defaults():
    settings = load()
    assert get(settings, "database.port") == 5432
    assert get(settings, "cache.ttl") == 300


def test_override_nested_value_keeps_siblings():
    settings = load({"database": {"host": "db.internal"}})
    assert get(settings, "database.host") == "db.internal"
    assert get(settings, "database.port") == 5432


def test_deployments_do_not_leak_into_each_other():
    staging = load_json('{"database": {"options": {"timeout": 5}}, "debug": true}')
    production = load()
    assert get(staging, "database.options.timeout") == 5
    assert get(production, "database.options.timeout") == 30
    assert production["debug"] is False


def test_missing_key_default():
    assert get(load(), "cache.size", 64) == 64


def test_json_must_be_object():
    with pytest.raises(ValueError):
        load_json("[1, 2]")
