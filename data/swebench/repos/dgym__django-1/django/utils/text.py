"""Text helpers."""


def capfirst(value):
    """Capitalize the first character of ``value``."""
    return value and str(value)[0].upper() + str(value)[1:]


def get_text_list(items, last_word="or"):
    """Join ``items`` for a sentence: ['a', 'b', 'c'] -> 'a, b or c'."""
    if not items:
        return ""
    if len(items) == 1:
        return str(items[0])
    head = ", ".join(str(i) for i in items[:-2])
    return "%s %s %s" % (head, last_word, items[-1])
