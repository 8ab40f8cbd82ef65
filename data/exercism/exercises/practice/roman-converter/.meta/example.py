_VALUES = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
_TABLE = {}


def to_roman(number):
    if not isinstance(number, int) or isinstance(number, bool) or not 1 <= number <= 3999:
        raise ValueError("only whole numbers from 1 to 3999 have a Roman numeral")
    out = []
    for value, symbol in _VALUES:
        count, number = divmod(number, value)
        out.append(symbol * count)
    return "".join(out)


def from_roman(numeral):
    if not _TABLE:
        _TABLE.update((to_roman(n), n) for n in range(1, 4000))
    try:
        return _TABLE[numeral]
    except (KeyError, TypeError):
        raise ValueError(f"{numeral!r} is not a standard Roman numeral") from None
