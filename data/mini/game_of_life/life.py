"""Conway's Game of Life on a bounded grid (cells outside the grid are dead)."""

from __future__ import annotations


class Grid:
    def __init__(self, width: int, height: int):
        if width < 1 or height < 1:
            raise ValueError("grid must be at least 1x1")
        self.width = width
        self.height = height
        self.cells = [[False] * width] * height

    @classmethod
    def from_text(cls, text: str) -> "Grid":
        """Build from rows of ``#`` (alive) and ``.`` (dead)."""
        rows = [row.strip() for row in text.strip().splitlines()]
        grid = cls(len(rows[0]), len(rows))
        for y, row in enumerate(rows):
            if len(row) != grid.width:
                raise ValueError(f"row {y} has {len(row)} cells, expected {grid.width}")
            for x, char in enumerate(row):
                grid.set(x, y, char == "#")
        return grid

    def get(self, x: int, y: int) -> bool:
        if 0 <= x < self.width and 0 <= y < self.height:
            return self.cells[y][x]
        return False

    def set(self, x: int, y: int, alive: bool) -> None:
        self.cells[y][x] = alive

    def neighbours(self, x: int, y: int) -> int:
        return sum(self.get(x + dx, y + dy)
                   for dy in (-1, 0, 1) for dx in (-1, 0, 1) if dx or dy)

    def step(self) -> "Grid":
        """Return the next generation (this grid is unchanged)."""
        nxt = Grid(self.width, self.height)
        for y in range(self.height):
            for x in range(self.width):
                count = self.neighbours(x, y)
                alive = self.get(x, y)
                nxt.set(x, y, count == 3 or (alive and count == 2))
        return nxt

    def population(self) -> int:
        return sum(sum(row) for row in self.cells)

    def to_text(self) -> str:
        return "\n".join("".join("#" if c else "." for c in row) for row in self.cells)
