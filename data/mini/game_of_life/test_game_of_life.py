import pytest

from life import Grid

BLINKER = """
.....
..#..
..#..
..#..
.....
"""


def test_empty_grid():
    grid = Grid(3, 2)
    assert grid.population() == 0
    assert grid.to_text() == "...\n..."


def test_single_cell_round_trip():
    grid = Grid(3, 3)
    grid.set(1, 1, True)
    assert grid.to_text() == "...\n.#.\n..."


def test_blinker_oscillates():
    grid = Grid.from_text(BLINKER)
    assert grid.population() == 3
    flipped = grid.step()
    assert flipped.to_text().splitlines()[2] == ".###."
    assert flipped.step().to_text() == grid.to_text()


def test_lonely_cell_dies():
    grid = Grid(1, 1)
    grid.set(0, 0, True)
    assert grid.step().population() == 0


def test_ragged_rows_are_refused():
    with pytest.raises(ValueError):
        Grid.from_text("..\n...")
