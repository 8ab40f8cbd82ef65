from decimal import Decimal

import pytest

from invoice import Invoice, Line, money


def test_money_parses_and_rounds():
    assert money("2.005") == Decimal("2.01")
    assert money(3) == Decimal("3.00")


def test_standard_rate_line():
    assert Line("desk", "150.00").tax == Decimal("30.00")


def test_reduced_rate_rounds_half_up():
    assert Line("book", "0.35", tax_class="reduced").tax == Decimal("0.04")
    assert Line("map", "8.45", tax_class="reduced").tax == Decimal("0.85")


def test_invoice_totals():
    invoice = Invoice("2024-017")
    invoice.add("pen", "1.15", quantity=1, tax_class="reduced")
    invoice.add("paper", "4.00", quantity=3)
    invoice.add("stamp", "0.90", tax_class="zero")
    assert invoice.net_total == Decimal("14.05")
    assert invoice.tax_total == Decimal("2.52")
    assert invoice.summary() == "Invoice 2024-017: net 14.05 + VAT 2.52 = 16.57"


def test_unknown_tax_class():
    with pytest.raises(ValueError):
        Line("x", "1.00", tax_class="luxury")
