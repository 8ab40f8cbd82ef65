"""Nobody inside: the agent's code never has the host's root, capabilities or kernel interfaces."""

from __future__ import annotations

import os
import textwrap
import uuid

#: Inside the sandbox: try what tests never need, print one "name result" line each.
SYSCALLS = textwrap.dedent(r"""
    import ctypes, errno, os, signal, time
    libc = ctypes.CDLL(None, use_errno=True)
    def call(name, nr, *args):
        ctypes.set_errno(0)
        r = libc.syscall(nr, *[ctypes.c_long(a) for a in args])
        print(name, "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?"), flush=True)
    KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION = 0, -3
    call("keyctl", 250, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION, 1)
    call("add_key", 248, 0, 0, 0, 0, KEY_SPEC_SESSION)
    child = os.fork()
    if child == 0:
        time.sleep(30)
        os._exit(0)
    call("ptrace_attach", 101, 16, child, 0, 0)
    os.kill(child, signal.SIGKILL)
    os.waitpid(child, 0)
    call("mount", 165, 0, 0, 0, 0, 0)
    call("unshare_user", 272, 0x10000000)
    call("unshare_mount", 272, 0x00020000)
    call("bpf", 321, 0, 0, 0)
    call("perf_event_open", 298, 0, 0, -1, -1, 0)
    call("open_by_handle_at", 304, -100, 0, 0)
    call("kexec_load", 246, 0, 0, 0, 0)
""")


def test_commands_never_run_as_host_root(prober):
    """uid 0 nowhere: not the command's uid, no capability, no_new_privs set."""
    probe = prober.run(["id -u; id -G; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status"])
    lines = probe[0].output.split("\n")
    assert lines[0].strip() != "0" and "0" not in lines[1].split(), probe[0].output
    caps = dict(line.split(":\t") for line in lines[2:] if ":\t" in line)
    assert caps["CapEff"] == caps["CapPrm"] == "0000000000000000", caps
    assert caps["NoNewPrivs"] == "1", caps


def test_shadow_and_root_home_unreadable(prober):
    """/etc/shadow and root's home: not shown (bwrap) or refused (docker's own files)."""
    marker = None
    if os.geteuid() == 0:  # a file of the host's root that nothing inside may read
        marker = f"/root/.dgym-probe-{uuid.uuid4().hex}"
        with open(marker, "w") as f:
            f.write("ROOT-ONLY 4c1d\n")
        os.chmod(marker, 0o600)
    try:
        probe = prober.run(["cat /etc/shadow", f"cat {marker or '/root/.bashrc'}", "ls -A /root"])
    finally:
        if marker:
            os.unlink(marker)
    assert probe[0].exit_code != 0 and "root:" not in probe[0].output, probe[0].output
    assert probe[1].exit_code != 0 and "ROOT-ONLY" not in probe[1].output, probe[1].output
    assert ".dgym-probe" not in probe[2].output, probe[2].output


def test_proc_sys_is_read_only(prober):
    """Writing kernel.core_pattern (root code execution on the host) is refused."""
    with open("/proc/sys/kernel/core_pattern") as f:
        before = f.read()
    probe = prober.run(["echo '|/tmp/pwn' > /proc/sys/kernel/core_pattern",
                         "echo 1 > /proc/sysrq-trigger"])
    assert probe[0].exit_code != 0 and probe[1].exit_code != 0
    with open("/proc/sys/kernel/core_pattern") as f:
        assert f.read() == before


def test_kernel_interfaces_tests_never_need_are_refused(bwrap_prober):
    """The seccomp filter: keyrings, ptrace, mount, new namespaces, bpf, perf, file handles, kexec."""
    probe = bwrap_prober.run([f"python3 -c '{SYSCALLS}'"])
    got = dict(line.split(" ", 1) for line in probe[0].output.splitlines() if " " in line)
    assert set(got) >= {"keyctl", "add_key", "ptrace_attach", "mount", "unshare_user",
                        "unshare_mount", "bpf", "perf_event_open", "open_by_handle_at",
                        "kexec_load"}, probe[0].output
    assert all(v == "EPERM" for v in got.values()), got


def test_docker_refuses_keyrings_mounts_and_namespaces(prober):
    """On both terminals: no keyring, no mount, no new user namespace."""
    probe = prober.run([f"python3 -c '{SYSCALLS}'"])
    got = dict(line.split(" ", 1) for line in probe[0].output.splitlines() if " " in line)
    for name in ("keyctl", "add_key", "mount", "unshare_user", "unshare_mount", "bpf",
                 "kexec_load", "open_by_handle_at"):
        assert got.get(name, "ok") != "ok", (name, got)
