"""Caps on every sandbox, shown with small limits and small overshoots (nothing here can hurt
the machine: at most 100 sleeping processes, a 1 GiB allocation refused or cut at 256 MiB,
16 MiB written into a tmpfs, 8 MiB into a file)."""

from __future__ import annotations

MiB = 1024 * 1024


def caps(prober, **limits) -> dict:
    """Terminal options setting ``limits`` (fields of ``terminals.limits.Limits``); on docker the
    container's own caps take the processes and the memory."""
    if prober.terminal != "docker":
        return {"limits": limits}
    options = {}
    if "processes" in limits:
        options["pids_limit"] = limits.pop("processes")
    if "memory" in limits:
        options["mem_limit"] = f"{limits.pop('memory') // MiB}m"
    return {**options, "limits": limits}


SPAWN = """
import subprocess
procs, error = [], ""
for _ in range(100):
    try:
        procs.append(subprocess.Popen(["sleep", "20"]))
    except OSError as exc:
        error = type(exc).__name__
        break
print("started", len(procs), error)
for p in procs:
    p.kill()
    p.wait()
"""


def test_process_cap(prober):
    """With a cap of 64, at most 64 processes start; the 100th fork is refused, not the host."""
    probe = prober.run([f"python3 -c '{SPAWN}'"], options=caps(prober, processes=64))
    words = probe[0].output.split()
    assert words[:1] == ["started"], probe[0].output
    assert 10 < int(words[1]) < 64 and len(words) == 3, probe[0].output


def test_memory_cap(prober):
    """Allocating 1 GiB under a 256 MiB cap fails (MemoryError on bwrap, killed on docker)."""
    probe = prober.run(["python3 -c 'b = bytearray(b\"x\" * (1024 ** 3)); print(\"allocated\")'"],
                        options=caps(prober, memory=256 * MiB))
    assert probe[0].exit_code != 0 and "allocated" not in probe[0].output, probe[0].output


def test_tmp_and_shm_sizes(prober):
    """Writing 16 MiB into an 8 MiB private /tmp or /dev/shm stops at their size."""
    probe = prober.run(["head -c 16777216 /dev/zero > /tmp/fill; stat -c %s /tmp/fill",
                         "head -c 16777216 /dev/zero > /dev/shm/fill; stat -c %s /dev/shm/fill"],
                        options=caps(prober, tmp_size=8 * MiB, shm_size=8 * MiB))
    for res in probe.results:
        assert "No space left" in res.output, res.output
        assert int(res.output.split()[-1]) <= 8 * MiB


def test_file_size_cap(prober):
    """A file written past the cap stops at the cap (the writer gets SIGXFSZ / EFBIG)."""
    probe = prober.run(["head -c 8388608 /dev/zero > big.bin; echo rc=$?", "stat -c %s big.bin"],
                        options=caps(prober, file_size=4 * MiB))
    assert "rc=0" not in probe[0].output, probe[0].output
    assert int(probe[1].output.split()[-1]) <= 4 * MiB


def test_cpu_time_cap_and_no_core_dumps(prober):
    """A busy loop is killed after its CPU seconds (long before the command's 60 s timeout);
    core dumps are off."""
    probe = prober.run(["python3 -c 'while True: pass'", "ulimit -c"],
                        options=caps(prober, cpu_seconds=2))
    assert probe[0].exit_code not in (0, None) and not probe[0].timed_out, probe[0]
    assert probe[1].output.strip() == "0", probe[1].output
