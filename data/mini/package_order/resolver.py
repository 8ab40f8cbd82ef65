"""Work out the order in which packages must be installed.

``graph`` maps a package to the packages it needs. Dependencies come before
the packages that need them; a true cycle is an error.
"""

from __future__ import annotations


class CycleError(Exception):
    def __init__(self, path: list[str]):
        super().__init__(" -> ".join(path))
        self.path = path


class MissingPackage(KeyError):
    pass


def install_order(graph: dict[str, list[str]], targets: list[str]) -> list[str]:
    """Return every package ``targets`` need, each once, dependencies first.

    Raises:
        CycleError: packages need each other; ``path`` shows the cycle.
        MissingPackage: a package is needed but not in ``graph``.
    """
    order: list[str] = []
    done: set[str] = set()
    in_progress: list[str] = []

    def visit(name: str) -> None:
        if name in in_progress:
            start = in_progress.index(name)
            raise CycleError(in_progress[start:] + [name])
        if name in done:
            return
        if name not in graph:
            raise MissingPackage(name)
        in_progress.append(name)
        for dependency in sorted(graph[name]):
            visit(dependency)
        done.add(name)
        order.append(name)

    for target in targets:
        visit(target)
    return order


def parse_requirements(text: str) -> dict[str, list[str]]:
    """Parse lines like ``web: http, json`` into a graph (blank lines ignored)."""
    graph: dict[str, list[str]] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, deps = line.partition(":")
        if not sep:
            raise ValueError(f"line {number}: expected 'name: deps'")
        graph[name.strip()] = [d.strip() for d in deps.split(",") if d.strip()]
    return graph
