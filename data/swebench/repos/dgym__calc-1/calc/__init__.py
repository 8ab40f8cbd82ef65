"""calc: evaluate arithmetic expressions given as text."""

from calc.evaluator import CalcError, evaluate

__all__ = ["CalcError", "evaluate"]
