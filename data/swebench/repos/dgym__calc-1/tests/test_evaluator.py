import pytest

from calc import CalcError, evaluate


def test_addition():
    assert evaluate("1 + 2 + 3") == 6


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14


def test_parentheses_and_unary_minus():
    assert evaluate("-(2 + 3) * 2") == -10


def test_malformed_expression():
    with pytest.raises(CalcError):
        evaluate("2 + ")
