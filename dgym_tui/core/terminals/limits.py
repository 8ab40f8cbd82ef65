"""Resource caps of a sandbox (bwrap and docker): processes, memory, CPU time, file and tmpfs sizes.

On ``bwrap`` the caps are resource limits (rlimits) set by ``prlimit`` *inside*
the sandbox, after bwrap made its user namespace: Linux counts
``RLIMIT_NPROC`` per user namespace, so the process cap holds per sandbox,
not per host uid (episodes running side by side do not share it). The
private ``/tmp`` and ``/dev/shm`` are tmpfs mounts of a fixed size. No cgroup
is used: a delegated cgroup v2 subtree is not available on the machines this
runs on (cgroup v1 hybrid, no systemd user session), so memory is capped as
address space (``RLIMIT_AS``), which also counts memory mapped but not used.

On ``docker`` the container's cgroup caps processes (``pids_limit``) and
memory (``mem_limit``); the same rlimits cap CPU time, file size and core
dumps; ``/tmp`` and ``/dev/shm`` are tmpfs mounts of the same sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class Limits:
    """Caps of one sandbox. 0 (or None) means "no cap" for that resource.

    Attributes:
        processes: processes and threads the sandbox's commands may run at once
            (``RLIMIT_NPROC`` per sandbox on bwrap; ``pids_limit`` on docker).
        memory: bytes of address space per process on bwrap (``RLIMIT_AS``);
            bytes of memory of the whole container on docker.
        cpu_seconds: CPU time of one process, in seconds (``RLIMIT_CPU``): a
            busy loop is killed with SIGKILL past it.
        file_size: largest file a command may write, in bytes (``RLIMIT_FSIZE``;
            writing past it fails with ``EFBIG``).
        tmp_size: bytes of the private ``/tmp`` (a tmpfs).
        shm_size: bytes of the private ``/dev/shm`` (a tmpfs).
    """

    processes: int = 512
    memory: int = 4 * GiB
    cpu_seconds: int = 3600
    file_size: int = 1 * GiB
    tmp_size: int = 512 * MiB
    shm_size: int = 64 * MiB

    @classmethod
    def from_options(cls, options: dict | None) -> Limits:
        """Limits from a terminal's options (keys as the attributes; missing keys keep defaults).

        Raises:
            ValueError: a value is not a non-negative integer (message names it).
        """
        values = {}
        for name, default in cls().__dict__.items():
            raw = (options or {}).get(name, default)
            try:
                value = int(raw)
            except (TypeError, ValueError):
                raise ValueError(f"limit {name} must be a whole number, got {raw!r}") from None
            if value < 0:
                raise ValueError(f"limit {name} must not be negative, got {value}")
            values[name] = value
        return cls(**values)

    def prlimit_argv(self) -> list[str]:
        """``prlimit`` arguments that apply these caps (soft = hard) to the command it runs."""
        argv = ["prlimit", "--core=0:0"]
        for option, value in (("--nproc", self.processes), ("--as", self.memory),
                              ("--cpu", self.cpu_seconds), ("--fsize", self.file_size)):
            if value:
                argv.append(f"{option}={value}:{value}")
        return [*argv, "--"]

    def docker_ulimits(self) -> list:
        """``docker.types.Ulimit`` objects for the rlimits Docker's cgroup does not cover."""
        from docker.types import Ulimit

        out = [Ulimit(name="core", soft=0, hard=0)]
        if self.cpu_seconds:
            out.append(Ulimit(name="cpu", soft=self.cpu_seconds, hard=self.cpu_seconds))
        if self.file_size:
            out.append(Ulimit(name="fsize", soft=self.file_size, hard=self.file_size))
        return out
