def encode(text):
    pass


def decode(code):
    pass
