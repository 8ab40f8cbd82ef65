"""A recursive-descent evaluator for + - * / with the usual precedence."""

from calc.tokenizer import tokenize


class CalcError(ValueError):
    """The expression is malformed."""


class _Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self):
        token = self.peek()
        if token is None:
            raise CalcError("unexpected end of expression")
        self.pos += 1
        return token

    def expression(self):
        left = self.term()
        if self.peek() in ("+", "-"):
            op = self.take()
            right = self.expression()
            return left + right if op == "+" else left - right
        return left

    def term(self):
        left = self.factor()
        if self.peek() in ("*", "/"):
            op = self.take()
            right = self.term()
            return left * right if op == "*" else left / right
        return left

    def factor(self):
        token = self.take()
        if token == "-":
            return -self.factor()
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise CalcError("missing closing parenthesis")
            return value
        if isinstance(token, (int, float)):
            return token
        raise CalcError(f"unexpected token {token!r}")


def evaluate(text):
    """Evaluate the arithmetic expression ``text`` and return its value.

    Raises CalcError when the expression is malformed.
    """
    try:
        tokens = tokenize(text)
    except ValueError as exc:
        raise CalcError(str(exc)) from None
    parser = _Parser(tokens)
    value = parser.expression()
    if parser.peek() is not None:
        raise CalcError(f"unexpected token {parser.peek()!r}")
    return value
