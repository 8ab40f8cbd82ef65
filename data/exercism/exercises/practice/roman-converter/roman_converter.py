def to_roman(number):
    pass


def from_roman(numeral):
    pass
