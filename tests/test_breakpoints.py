"""BreakpointStore and the difflib remap rule, on real files in a real Workspace."""

from __future__ import annotations

import pytest

from dgym_tui.core.breakpoints import BreakpointStore, Move, remap_lines
from dgym_tui.core.fs.workspace import Workspace

OLD = "def f(x):\n    y = x * 2\n    return y\n\nprint(f(3))\n"


def remapped(old: str, new: str, lines: list[int]) -> dict[int, int | None]:
    """``remap_lines`` without the "survived" flags: old line -> new line or None."""
    return {line: target for line, (target, _) in remap_lines(old, new, lines).items()}


def test_insertion_above_moves_kept_lines_with_their_block():
    new = "import os\nimport sys\n" + OLD
    assert remapped(OLD, new, [1, 2, 3, 5]) == {1: 3, 2: 4, 3: 5, 5: 7}


def test_deleted_line_moves_to_the_line_now_following_the_deleted_block():
    new = "def f(x):\n    return x * 2\n\nprint(f(3))\n"  # lines 2-3 replaced by one line
    assert remapped(OLD, new, [2, 3, 5]) == {2: 2, 3: 2, 5: 4}
    pure_delete = "def f(x):\n    return y\n\nprint(f(3))\n"  # line 2 deleted
    assert remapped(OLD, pure_delete, [2]) == {2: 2}


def test_deleted_block_at_end_moves_to_the_preceding_line():
    new = "def f(x):\n    y = x * 2\n    return y\n"
    assert remapped(OLD, new, [5]) == {5: 3}


def test_landing_on_blank_or_comment_slides_forward_or_drops():
    new = "def f(x):\n    # gone\n\n    return 1\n"
    assert remapped(OLD, new, [2]) == {2: 4}
    assert remapped(OLD, "x = 1\n# only a comment\n", [5]) == {5: None}
    assert remapped(OLD, "", [1, 5]) == {1: None, 5: None}


def test_store_add_remove_clear_conditions_and_flags():
    store = BreakpointStore()
    store.add("b.py", 3)
    store.add("a.py", 12, "x > 3")
    store.add("a.py", 2, "   ")  # blank condition counts as none
    assert store.list() == [("a.py", 2), ("a.py", 12), ("b.py", 3)]
    assert store.conditions() == {"a.py:12": "x > 3"}
    assert store.set_enabled("a.py", 12, False) and not store.get("a.py", 12).enabled
    assert store.get("a.py", 12).condition == "x > 3"  # the condition survives disabling
    assert store.remove("b.py", 3) and not store.remove("b.py", 3)
    assert [bp.key for bp in store.clear("a.py")] == ["a.py:2", "a.py:12"]
    assert store.list() == [] and len(store) == 0
    with pytest.raises(ValueError):
        store.add("a.py", 0)


def test_pdb_commands_use_the_terminal_paths_and_keep_conditions():
    store = BreakpointStore()
    store.add("pkg/m.py", 7, "n == 2")
    store.add("t.py", 4, temporary=True)
    expected = ["break /w/pkg/m.py:7, n == 2", "tbreak /w/t.py:4"]
    assert store.pdb_commands(lambda rel: f"/w/{rel}") == expected


@pytest.fixture
def workspace(make_repo):
    ws = Workspace(make_repo({"prog.py": OLD, "other.py": "a = 1\nb = 2\n"}))
    yield ws
    ws.cleanup()


def test_remap_changed_after_any_write(workspace):
    store = BreakpointStore(workspace)
    store.add("prog.py", 2, "x > 1")
    store.add("prog.py", 5)
    store.add("other.py", 2)
    assert store.remap_changed() == []  # nothing changed: nothing moves
    (workspace.root / "prog.py").write_text("# header\n" + OLD)  # not through any tool
    moves = store.remap_changed(workspace)
    assert moves == [Move("prog.py", 2, 3), Move("prog.py", 5, 6)]
    assert store.list() == [("other.py", 2), ("prog.py", 3), ("prog.py", 6)]
    assert store.conditions() == {"prog.py:3": "x > 1"}
    # the snapshot was updated: a second call moves nothing
    assert store.remap_changed() == []
    (workspace.root / "other.py").unlink()
    assert store.remap_changed() == [Move("other.py", 2, None)]
    assert store.list() == [("prog.py", 3), ("prog.py", 6)]


def test_collision_keeps_the_breakpoint_whose_line_survived(workspace):
    store = BreakpointStore(workspace)
    store.add("prog.py", 2, "first")
    store.add("prog.py", 3, "second")
    (workspace.root / "prog.py").write_text("def f(x):\n    return y\n\nprint(f(3))\n")
    moves = store.remap_changed()
    # line 3 "return y" survived (now line 2); line 2 was deleted and would land on 2 too
    assert store.list() == [("prog.py", 2)]
    assert store.conditions() == {"prog.py:2": "second"}
    assert Move("prog.py", 2, None) in moves and Move("prog.py", 3, 2) in moves
