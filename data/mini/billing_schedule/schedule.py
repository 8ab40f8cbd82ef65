"""Billing dates for subscriptions that renew every N months.

A subscription that starts on the 31st renews on the last day of shorter
months, and goes back to the 31st when the month allows it.
"""

from __future__ import annotations

import calendar
from datetime import date


def add_months(start: date, months: int) -> date:
    """Return ``start`` moved by ``months`` calendar months (may be negative).

    The day is clamped to the last day of the target month.
    """
    total = start.month + months
    year = start.year + total // 12
    month = total % 12 or 12
    last_day = calendar.monthrange(year, month)[1]
    return date(year, month, min(start.day, last_day))


def billing_dates(start: date, every_months: int, count: int) -> list[date]:
    """Return the first ``count`` billing dates, ``start`` included.

    Every date is computed from ``start`` (not from the previous date) so a
    clamped February does not drag later dates to the 28th.
    """
    if every_months <= 0:
        raise ValueError("every_months must be positive")
    return [add_months(start, every_months * index) for index in range(count)]


def next_billing_date(start: date, every_months: int, today: date) -> date:
    """Return the first billing date on or after ``today``."""
    index = 0
    while True:
        candidate = add_months(start, every_months * index)
        if candidate >= today:
            return candidate
        index += 1


def days_until_next_bill(start: date, every_months: int, today: date) -> int:
    return (next_billing_date(start, every_months, today) - today).days
