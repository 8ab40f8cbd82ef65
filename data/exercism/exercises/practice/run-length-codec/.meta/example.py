import itertools
import re


def encode(text):
    if any(ch.isdecimal() for ch in text):
        raise ValueError("digits cannot be run-length encoded")
    parts = []
    for ch, group in itertools.groupby(text):
        count = len(list(group))
        parts.append(ch if count == 1 else f"{ch}{count}")
    return "".join(parts)


def decode(code):
    if code[:1].isdecimal():
        raise ValueError("a code cannot start with a count")
    return "".join(ch * int(count or 1) for ch, count in re.findall(r"(\D)(\d*)", code))
