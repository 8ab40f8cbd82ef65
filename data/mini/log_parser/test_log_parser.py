from datetime import datetime

import pytest

from logparse import ParseError, errors_by_source, first_at_or_above, parse, parse_line

LOG = """\
# service log
2024-03-01T12:00:01Z INFO api: started on port 8080
2024-03-01T12:00:05Z WARN db: slow query: 1.2s
2024-03-01T12:00:09Z ERROR db: connection lost: retrying in 5s
2024-03-01T12:00:10Z ERROR api: upstream failed

2024-03-01T12:00:14Z ERROR db: connection lost: giving up
"""


def test_simple_line():
    record = parse_line("2024-03-01T12:00:01Z INFO api: started")
    assert record.when == datetime(2024, 3, 1, 12, 0, 1)
    assert (record.level, record.source, record.message) == ("INFO", "api", "started")


def test_message_with_colon():
    record = parse_line("2024-03-01T12:00:05Z WARN db: slow query: 1.2s")
    assert record.source == "db"
    assert record.message == "slow query: 1.2s"


def test_errors_by_source():
    assert errors_by_source(parse(LOG)) == {"db": 2, "api": 1}


def test_first_warning():
    record = first_at_or_above(parse(LOG), "WARN")
    assert record.when.second == 5


def test_bad_level():
    with pytest.raises(ParseError):
        parse_line("2024-03-01T12:00:01Z LOUD api: hi")
