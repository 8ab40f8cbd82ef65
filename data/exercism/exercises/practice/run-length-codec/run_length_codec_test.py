import pytest

from run_length_codec import decode, encode


def test_empty_string_encodes_to_empty():
    assert encode("") == ""


def test_single_characters_have_no_count():
    assert encode("abc") == "abc"


def test_runs_get_a_count():
    assert encode("aaab") == "a3b"


def test_counts_can_have_several_digits():
    assert encode("x" + "y" * 11 + "z") == "xy11z"


def test_spaces_and_punctuation_are_characters():
    assert encode("  !!") == " 2!2"


def test_digits_cannot_be_encoded():
    with pytest.raises(ValueError):
        encode("a1")


def test_decode_expands_runs():
    assert decode("a3b") == "aaab"


def test_decode_multi_digit_count():
    assert decode("q12") == "q" * 12


def test_decode_rejects_leading_digit():
    with pytest.raises(ValueError):
        decode("3a")


@pytest.mark.parametrize("text", ["", "a", "hello  world", "zzzzzzzzzzzzzzzzzzzzzzzzz!"])
def test_round_trip(text):
    assert decode(encode(text)) == text
