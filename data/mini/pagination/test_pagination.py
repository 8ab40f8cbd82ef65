import pytest

from paging import Paginator


def test_exact_pages():
    paginator = Paginator(list(range(20)), per_page=10)
    assert paginator.total_pages == 2
    assert paginator.page(2).items == list(range(10, 20))


def test_empty_has_one_page():
    page = Paginator([], per_page=5).page(1)
    assert page.items == [] and page.label() == "no results"


def test_last_partial_page():
    paginator = Paginator(list("abcdefg"), per_page=3)
    assert paginator.total_pages == 3
    last = paginator.page(3)
    assert last.items == ["g"]
    assert not last.has_next


def test_every_item_is_on_some_page():
    items = list(range(23))
    paginator = Paginator(items, per_page=5)
    seen = [item for page in paginator.pages() for item in page.items]
    assert seen == items
    assert paginator.page(paginator.page_of(22)).items[-1] == 22


def test_out_of_range():
    with pytest.raises(IndexError):
        Paginator(list(range(5)), per_page=5).page(2)
