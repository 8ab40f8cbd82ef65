import pytest

from textops.slug import slugify


def test_lowercases():
    assert slugify("Hello") == "hello"


@pytest.mark.parametrize("text, expected", [("  padded ", "padded"), ("Two Words", "two-words")])
def test_strips_and_joins(text, expected):
    assert slugify(text) == expected
