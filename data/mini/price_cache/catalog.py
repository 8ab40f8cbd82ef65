"""Product catalogue with regional prices.

Looking up a price is expensive in production (a database call), so results
are memoised by :func:`cached`.
"""

from __future__ import annotations

import functools

BASE_PRICES = {"kettle": 2500, "toaster": 3200, "blender": 5400}   # cents, EU
REGION_FACTORS = {"eu": 1.00, "uk": 0.90, "us": 1.10, "ch": 1.35}
lookups = 0   # how many times the slow path ran


def cached(function):
    """Memoise ``function(sku, *args)`` results."""
    memo = {}

    @functools.wraps(function)
    def wrapper(sku, *args):
        if sku not in memo:
            memo[sku] = function(sku, *args)
        return memo[sku]

    wrapper.clear = memo.clear
    return wrapper


@cached
def price(sku: str, region: str = "eu") -> int:
    """Price of ``sku`` in ``region`` in cents, rounded to whole cents."""
    global lookups
    lookups += 1
    if sku not in BASE_PRICES:
        raise KeyError(f"unknown product {sku!r}")
    if region not in REGION_FACTORS:
        raise KeyError(f"unknown region {region!r}")
    return round(BASE_PRICES[sku] * REGION_FACTORS[region])


def basket_total(skus: list[str], region: str = "eu") -> int:
    return sum(price(sku, region) for sku in skus)


def price_table(region: str) -> dict[str, int]:
    return {sku: price(sku, region) for sku in sorted(BASE_PRICES)}
