from datetime import date

import pytest

from schedule import add_months, billing_dates, days_until_next_bill, next_billing_date


def test_clamps_to_end_of_february():
    assert add_months(date(2023, 1, 31), 1) == date(2023, 2, 28)
    assert add_months(date(2024, 1, 31), 1) == date(2024, 2, 29)


def test_monthly_dates_keep_the_day():
    dates = billing_dates(date(2024, 1, 31), 1, 4)
    assert dates == [date(2024, 1, 31), date(2024, 2, 29), date(2024, 3, 31), date(2024, 4, 30)]


def test_quarterly_dates_within_one_year():
    dates = billing_dates(date(2024, 3, 15), 3, 4)
    assert dates == [date(2024, 3, 15), date(2024, 6, 15), date(2024, 9, 15), date(2024, 12, 15)]


def test_going_back_one_month_from_january():
    assert add_months(date(2024, 1, 10), -1) == date(2023, 12, 10)


def test_days_until_next_bill_in_november():
    assert next_billing_date(date(2024, 10, 5), 1, date(2024, 11, 20)) == date(2024, 12, 5)
    assert days_until_next_bill(date(2024, 10, 5), 1, date(2024, 11, 20)) == 15


def test_rejects_zero_interval():
    with pytest.raises(ValueError):
        billing_dates(date(2024, 1, 1), 0, 3)
