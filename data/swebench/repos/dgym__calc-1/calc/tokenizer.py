"""Split an expression into number and operator tokens."""

import re

_TOKEN = re.compile(r"\s*(?:(\d+\.\d*|\.\d+|\d+)|(.))")


def tokenize(text):
    """Return the tokens of ``text``: numbers as int/float, operators as 1-char strings."""
    tokens = []
    for number, symbol in _TOKEN.findall(text.strip()):
        if number:
            tokens.append(float(number) if "." in number else int(number))
        elif symbol in "+-*/()":
            tokens.append(symbol)
        else:
            raise ValueError(f"unexpected character {symbol!r}")
    return tokens
