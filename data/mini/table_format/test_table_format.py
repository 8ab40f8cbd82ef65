from table import clip, column_widths, render, render_records


def test_clip():
    assert clip("abcdef", 4) == "abc…"
    assert clip("abc", 4) == "abc"


def test_column_widths():
    assert column_widths([["a", "bbb"], ["cc", "d"]]) == [2, 3]


def test_small_table_is_not_clipped():
    text = render(["name", "qty"], [["tea", 2], ["coffee", 10]])
    assert text.splitlines() == [
        "name   | qty",
        "------------",
        "tea    | 2",
        "coffee | 10",
    ]


def test_long_rows_are_clipped_to_width():
    rows = [["alpha", "short"], ["beta", "a much longer description than fits"]]
    lines = render(["name", "note"], rows, width=20).splitlines()
    assert all(len(line) <= 20 for line in lines)
    assert lines[3] == "beta  | a much long…"


def test_render_records_missing_key():
    text = render_records([{"b": 3}, {"a": 22, "b": 4}], ["a", "b"])
    assert text.splitlines()[2:] == ["   | 3", "22 | 4"]
