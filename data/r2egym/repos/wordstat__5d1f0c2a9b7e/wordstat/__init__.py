"""wordstat: small word statistics for plain text."""

from wordstat.counter import count_words, word_frequencies, words

__all__ = ["count_words", "word_frequencies", "words"]
