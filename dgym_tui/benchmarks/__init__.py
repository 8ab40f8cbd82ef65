"""Task loaders: our own mini set, a local repository, Exercism-style exercises,
SWE-bench and SWE-bench-debug.

>>> from dgym_tui.benchmarks import get_benchmark
>>> bench = get_benchmark("mini")
>>> task = bench.load(bench.tasks()[0])
>>> env = task.make_env(terminal="local")     # a dgym_tui.core.env.RepoEnv

Loader modules are imported only when their benchmark is asked for.
"""

from dgym_tui.benchmarks.base import (
    REGISTRY,
    Benchmark,
    BenchmarkOptionError,
    Task,
    benchmark_names,
    get_benchmark,
)

__all__ = ["REGISTRY", "Benchmark", "BenchmarkOptionError", "Task", "benchmark_names", "get_benchmark"]
