"""Invoices with per-line VAT.

Money is kept as ``Decimal`` with two places. Tax is computed per line and
rounded half up to the cent (the tax office's rule), then summed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
TAX_RATES = {"standard": 0.20, "reduced": 0.10, "zero": 0.0}


def money(value: str | int | Decimal) -> Decimal:
    """Parse a money amount and round it half up to the cent."""
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)


@dataclass
class Line:
    description: str
    unit_price: Decimal
    quantity: int = 1
    tax_class: str = "standard"

    def __post_init__(self) -> None:
        self.unit_price = money(self.unit_price)
        if self.tax_class not in TAX_RATES:
            raise ValueError(f"unknown tax class {self.tax_class!r}")

    @property
    def net(self) -> Decimal:
        return self.unit_price * self.quantity

    @property
    def tax(self) -> Decimal:
        rate = TAX_RATES[self.tax_class]
        return Decimal(str(round(float(self.net) * rate, 2))).quantize(CENT)


@dataclass
class Invoice:
    number: str
    lines: list[Line] = field(default_factory=list)

    def add(self, description: str, unit_price, quantity: int = 1,
            tax_class: str = "standard") -> Line:
        line = Line(description, unit_price, quantity, tax_class)
        self.lines.append(line)
        return line

    @property
    def net_total(self) -> Decimal:
        return sum((line.net for line in self.lines), Decimal("0.00"))

    @property
    def tax_total(self) -> Decimal:
        return sum((line.tax for line in self.lines), Decimal("0.00"))

    @property
    def gross_total(self) -> Decimal:
        return self.net_total + self.tax_total

    def summary(self) -> str:
        return (f"Invoice {self.number}: net {self.net_total} "
                f"+ VAT {self.tax_total} = {self.gross_total}")
