from wordstat import count_words, word_frequencies


def test_single_line():
    assert count_words("The cat sat.") == 3


def test_frequencies():
    assert word_frequencies("a b a") == {"a": 2, "b": 1}
