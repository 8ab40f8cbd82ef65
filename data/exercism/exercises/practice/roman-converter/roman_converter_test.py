import pytest

from roman_converter import from_roman, to_roman

KNOWN = [
    (1, "I"), (3, "III"), (4, "IV"), (9, "IX"), (14, "XIV"), (40, "XL"),
    (90, "XC"), (400, "CD"), (900, "CM"), (1994, "MCMXCIV"), (2024, "MMXXIV"),
    (3999, "MMMCMXCIX"),
]


@pytest.mark.parametrize("number,numeral", KNOWN)
def test_to_roman(number, numeral):
    assert to_roman(number) == numeral


@pytest.mark.parametrize("number,numeral", KNOWN)
def test_from_roman(number, numeral):
    assert from_roman(numeral) == number


@pytest.mark.parametrize("number", [0, -1, 4000, 2.5, "12"])
def test_to_roman_rejects_out_of_range(number):
    with pytest.raises(ValueError):
        to_roman(number)


@pytest.mark.parametrize("numeral", ["IIII", "VV", "IC", "xiv", "", "MMMM", "IXI", "ABC"])
def test_from_roman_rejects_non_standard(numeral):
    with pytest.raises(ValueError):
        from_roman(numeral)


def test_round_trip_everything():
    assert all(from_roman(to_roman(n)) == n for n in range(1, 4000))
