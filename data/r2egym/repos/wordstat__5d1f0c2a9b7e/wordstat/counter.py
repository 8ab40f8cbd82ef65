"""Counting words in text."""

from collections import Counter

PUNCTUATION = ".,;:!?\"'()"


def words(text):
    """Return the words of ``text``, lowercased, without surrounding punctuation."""
    found = []
    for token in text.split(" "):
        word = token.strip(PUNCTUATION).lower()
        if word:
            found.append(word)
    return found


def count_words(text):
    """Return how many words ``text`` holds."""
    return len(words(text))


def word_frequencies(text):
    """Return ``{word: count}`` for ``text``."""
    return dict(Counter(words(text)))
