"""Split search results into pages (1-based page numbers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Sequence, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    number: int
    items: list[T]
    total_items: int
    total_pages: int

    @property
    def has_next(self) -> bool:
        return self.number < self.total_pages

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    def label(self) -> str:
        if not self.items:
            return "no results"
        return f"page {self.number} of {self.total_pages} ({len(self.items)} results)"


class Paginator(Generic[T]):
    def __init__(self, items: Sequence[T], per_page: int = 10):
        if per_page < 1:
            raise ValueError("per_page must be at least 1")
        self.items = items
        self.per_page = per_page

    @property
    def total_pages(self) -> int:
        return max(1, len(self.items) // self.per_page)

    def page(self, number: int) -> Page[T]:
        """Return page ``number`` (1-based).

        Raises:
            IndexError: the page does not exist.
        """
        if not 1 <= number <= self.total_pages:
            raise IndexError(f"page {number} out of range 1..{self.total_pages}")
        start = (number - 1) * self.per_page
        chunk = list(self.items[start:start + self.per_page])
        return Page(number, chunk, len(self.items), self.total_pages)

    def pages(self):
        for number in range(1, self.total_pages + 1):
            yield self.page(number)

    def page_of(self, index: int) -> int:
        """Page number on which item ``index`` (0-based) is shown."""
        return index // self.per_page + 1
