import pytest

from resolver import CycleError, MissingPackage, install_order, parse_requirements

REQUIREMENTS = """
# name: dependencies
app: web, db
web: http, json
db: json, pool
http: socket
json:
pool: socket
socket:
"""


def test_parse_requirements():
    graph = parse_requirements(REQUIREMENTS)
    assert graph["app"] == ["web", "db"]
    assert graph["json"] == []


def test_chain():
    graph = {"a": ["b"], "b": ["c"], "c": []}
    assert install_order(graph, ["a"]) == ["c", "b", "a"]


def test_shared_dependencies_install_once():
    order = install_order(parse_requirements(REQUIREMENTS), ["app"])
    assert sorted(order) == sorted(set(order))
    assert order.index("socket") < order.index("http") < order.index("web")
    assert order.index("json") < order.index("db") < order.index("app")
    assert order[-1] == "app"


def test_true_cycle_is_reported():
    graph = {"a": ["b"], "b": ["c"], "c": ["a"]}
    with pytest.raises(CycleError) as info:
        install_order(graph, ["a"])
    assert info.value.path == ["a", "b", "c", "a"]


def test_missing_package():
    with pytest.raises(MissingPackage):
        install_order({"a": ["ghost"]}, ["a"])
