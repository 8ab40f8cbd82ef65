"""A company's reporting lines: every employee has at most one manager."""

from __future__ import annotations


class Employee:
    def __init__(self, name: str, title: str = ""):
        self.name = name
        self.title = title
        self.manager: Employee | None = None
        self.reports: list[Employee] = []

    def __repr__(self) -> str:
        return f"Employee({self.name!r})"


class OrgChart:
    def __init__(self, ceo: Employee):
        self.ceo = ceo
        self.by_name = {ceo.name: ceo}

    def hire(self, employee: Employee, manager_name: str) -> None:
        if employee.name in self.by_name:
            raise ValueError(f"{employee.name} already works here")
        manager = self.by_name[manager_name]
        employee.manager = manager
        manager.reports.append(employee)
        self.by_name[employee.name] = employee

    def move(self, name: str, new_manager_name: str) -> None:
        """Make ``name`` report to ``new_manager_name``, keeping their own team.

        Raises:
            ValueError: the move would make someone their own (indirect) manager.
        """
        employee = self.by_name[name]
        new_manager = self.by_name[new_manager_name]
        if new_manager is employee or new_manager in employee.reports:
            raise ValueError(f"{new_manager_name} reports to {name}")
        if employee.manager is not None:
            employee.manager.reports.remove(employee)
        employee.manager = new_manager
        new_manager.reports.append(employee)

    def headcount(self, name: str) -> int:
        """Number of people below ``name`` (direct and indirect reports)."""
        employee = self.by_name[name]
        return sum(1 + self.headcount(report.name) for report in employee.reports)

    def chain_of_command(self, name: str) -> list[str]:
        """Names from ``name`` up to the CEO."""
        chain = []
        employee = self.by_name[name]
        while employee is not None:
            chain.append(employee.name)
            employee = employee.manager
        return chain
