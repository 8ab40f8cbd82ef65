"""A shopping cart that keeps line items and applies coupons.

Prices are integer cents so that sums stay exact.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Product:
    sku: str
    name: str
    price_cents: int


class Cart:
    """Line items of one customer: a list of ``[product, quantity]`` pairs."""

    def __init__(self, owner: str, lines=[]):
        self.owner = owner
        self.lines = lines

    def add(self, product: Product, quantity: int = 1) -> None:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        for line in self.lines:
            if line[0].sku == product.sku:
                line[1] += quantity
                return
        self.lines.append([product, quantity])

    def remove(self, sku: str, quantity: int | None = None) -> None:
        for index, line in enumerate(self.lines):
            if line[0].sku != sku:
                continue
            if quantity is None or quantity >= line[1]:
                del self.lines[index]
            else:
                line[1] -= quantity
            return
        raise KeyError(sku)

    def count(self) -> int:
        return sum(quantity for _, quantity in self.lines)

    def subtotal(self) -> int:
        return sum(product.price_cents * quantity for product, quantity in self.lines)

    def total(self, coupon: "Coupon | None" = None) -> int:
        subtotal = self.subtotal()
        if coupon is None:
            return subtotal
        return coupon.apply(subtotal)


@dataclass(frozen=True)
class Coupon:
    code: str
    percent_off: int = 0
    minimum_cents: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.percent_off <= 100:
            raise ValueError("percent_off must be between 0 and 100")

    def apply(self, amount_cents: int) -> int:
        if amount_cents < self.minimum_cents:
            return amount_cents
        return amount_cents - amount_cents * self.percent_off // 100
