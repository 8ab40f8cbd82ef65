import pytest

from org import Employee, OrgChart


def build():
    chart = OrgChart(Employee("ada", "CEO"))
    chart.hire(Employee("bob", "CTO"), "ada")
    chart.hire(Employee("cat", "lead"), "bob")
    chart.hire(Employee("dev", "engineer"), "cat")
    chart.hire(Employee("eli", "engineer"), "cat")
    chart.hire(Employee("fay", "CFO"), "ada")
    return chart


def test_headcount():
    chart = build()
    assert chart.headcount("ada") == 5
    assert chart.headcount("bob") == 3


def test_chain_of_command():
    assert build().chain_of_command("dev") == ["dev", "cat", "bob", "ada"]


def test_move_keeps_the_team():
    chart = build()
    chart.move("cat", "fay")
    assert chart.headcount("fay") == 3
    assert chart.chain_of_command("eli") == ["eli", "cat", "fay", "ada"]


def test_cannot_report_to_a_direct_report():
    chart = build()
    with pytest.raises(ValueError):
        chart.move("cat", "dev")


def test_cannot_report_to_an_indirect_report():
    chart = build()
    with pytest.raises(ValueError):
        chart.move("bob", "eli")
    assert chart.chain_of_command("eli") == ["eli", "cat", "bob", "ada"]
    assert chart.headcount("ada") == 5
