import pytest

import catalog


@pytest.fixture(autouse=True)
def fresh_cache():
    catalog.price.clear()
    catalog.lookups = 0


def test_eu_price():
    assert catalog.price("kettle") == 2500


def test_repeated_lookup_is_cached():
    catalog.price("toaster", "uk")
    catalog.price("toaster", "uk")
    assert catalog.lookups == 1


def test_regions_have_their_own_prices():
    assert catalog.price("blender", "eu") == 5400
    assert catalog.price("blender", "us") == 5940
    assert catalog.price("blender", "ch") == 7290


def test_basket_in_two_regions():
    assert catalog.basket_total(["kettle", "toaster"], "uk") == 5130
    assert catalog.basket_total(["kettle", "toaster"], "eu") == 5700


def test_unknown_product():
    with pytest.raises(KeyError):
        catalog.price("fridge")
