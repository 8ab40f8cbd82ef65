from addict import Dict


def test_setattr_keeps_the_key():
    d = Dict()
    d.Name = 'x'
    assert d == {'Name': 'x'}


def test_setattr_then_getattr():
    d = Dict()
    d.CamelCase = 3
    assert d.CamelCase == 3
