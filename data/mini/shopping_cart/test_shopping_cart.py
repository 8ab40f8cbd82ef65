import pytest

from cart import Cart, Coupon, Product

TEA = Product("T-1", "green tea", 450)
MUG = Product("M-2", "mug", 1200)


def test_add_merges_same_product():
    cart = Cart("ana")
    cart.add(TEA)
    cart.add(TEA, 2)
    assert cart.count() == 3
    assert cart.subtotal() == 1350


def test_carts_of_different_customers_are_independent():
    first = Cart("ben")
    first.add(MUG)
    second = Cart("cleo")
    assert second.count() == 0
    second.add(TEA)
    assert first.subtotal() == 1200
    assert second.subtotal() == 450


def test_remove_part_of_a_line():
    cart = Cart("dan", [[MUG, 3]])
    cart.remove("M-2", 1)
    assert cart.count() == 2


def test_coupon_needs_minimum():
    coupon = Coupon("TEN", percent_off=10, minimum_cents=1000)
    assert coupon.apply(999) == 999
    assert coupon.apply(2000) == 1800


def test_invalid_coupon_is_refused():
    with pytest.raises(ValueError):
        Coupon("BAD", percent_off=120)
