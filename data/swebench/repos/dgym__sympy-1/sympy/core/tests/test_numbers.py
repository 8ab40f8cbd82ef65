from sympy.core.numbers import igcd, ilcm


def test_igcd():
    assert igcd(12, 18) == 6
    assert igcd(7, 0) == 7


def test_ilcm():
    assert ilcm(4, 6) == 12
