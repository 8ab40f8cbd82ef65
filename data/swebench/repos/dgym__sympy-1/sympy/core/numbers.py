"""Integer helpers."""


def igcd(a, b):
    """Greatest common divisor of two integers, never negative."""
    while b:
        a, b = b, a % b
    return a


def ilcm(a, b):
    """Least common multiple of two integers, never negative."""
    if a == 0 or b == 0:
        return 0
    return abs(a * b) // igcd(a, b)
