from addict import Dict


def test_item_access():
    d = Dict()
    d['a'] = 1
    assert d.a == 1


def test_missing_creates_nested():
    d = Dict()
    d['x']['y'] = 2
    assert d.to_dict() == {'x': {'y': 2}}
