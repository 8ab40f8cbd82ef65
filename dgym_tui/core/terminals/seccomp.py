"""The seccomp filter of the bwrap sandbox: system calls tests never need are refused.

Built once per process with ``pyseccomp`` (a ctypes binding of the system's
``libseccomp.so.2``), exported as classic BPF into an anonymous memory file,
and handed to bwrap as ``--seccomp FD`` on every sandbox start (bwrap loads
it last, just before it runs the command, with ``no_new_privs`` set).

Everything is allowed except:

- :data:`REFUSED`: kernel keyrings (``keyctl``, ``add_key``, ``request_key``),
  ``ptrace`` and reading or writing other processes' memory, mounting and
  the new mount API, ``pivot_root``, ``chroot``, entering or creating
  namespaces (``unshare``, ``setns``), loading kernels, modules and BPF
  programs, ``perf_event_open``, file handles (``open_by_handle_at``),
  ``userfaultfd``, ``io_uring``, swap, quotas, accounting, reboot,
  ``syslog``, clock and host name changes, raw I/O ports. Refused with
  ``EPERM``: the program gets an error, not a crash.
- ``clone`` with any ``CLONE_NEW*`` flag (a new user, mount, PID, network,
  IPC, UTS, cgroup or time namespace) is refused with ``EPERM``; plain
  ``fork`` / thread creation goes on.
- ``clone3`` answers ``ENOSYS`` (its flags sit in memory a filter cannot
  read); the C library then falls back to ``clone``, which is checked.
- ``ioctl(TIOCSTI)`` / ``ioctl(TIOCLINUX)`` (typing into the terminal) are
  refused with ``EPERM`` (bwrap's ``--new-session`` covers TIOCSTI already).
- System calls of another architecture (32-bit ``int 0x80``, x32) kill the
  process: the filter only knows this machine's numbers.
"""

from __future__ import annotations

import errno
import functools
import os
import threading

#: System calls refused with EPERM in every sandbox (names as libseccomp knows them).
REFUSED = (
    # kernel keyrings
    "keyctl", "add_key", "request_key",
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # mounts and file-system views
    "mount", "umount", "umount2", "pivot_root", "chroot", "mount_setattr", "move_mount",
    "open_tree", "fsopen", "fsconfig", "fsmount", "fspick",
    # namespaces
    "unshare", "setns",
    # the kernel itself
    "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
    "bpf", "perf_event_open", "reboot", "swapon", "swapoff", "acct", "quotactl",
    "quotactl_fd", "syslog", "lookup_dcookie", "iopl", "ioperm", "settimeofday",
    "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname",
    "vhangup",
    # file handles bypass path permissions
    "open_by_handle_at", "name_to_handle_at",
    # large kernel attack surfaces tests do not use
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
)

#: ``clone`` flags that create namespaces (linux/sched.h).
CLONE_NEW_FLAGS = {
    "CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080,
}

#: Terminal ioctls that inject input or talk to the console.
TIOCSTI, TIOCLINUX = 0x5412, 0x541C

_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _filter_fd() -> int:
    """A memory file holding the exported BPF program (made once per process).

    Raises:
        OSError: libseccomp is missing or refuses the rules.
    """
    try:
        import pyseccomp as sc
    except (ImportError, OSError) as exc:  # the binding loads libseccomp.so.2 at import
        raise OSError(f"seccomp unavailable ({exc}); install libseccomp2 and pyseccomp") from None
    flt = sc.SyscallFilter(sc.ALLOW)
    for name in REFUSED:
        try:
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (OSError, ValueError):  # not a system call on this architecture
            continue
    for flag in CLONE_NEW_FLAGS.values():
        flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for request in (TIOCSTI, TIOCLINUX):
        flt.add_rule(sc.ERRNO(errno.EPERM), "ioctl", sc.Arg(1, sc.MASKED_EQ, 0xFFFFFFFF, request))
    fd = os.memfd_create("dgym-seccomp", os.MFD_CLOEXEC)
    with os.fdopen(os.dup(fd), "wb", buffering=0) as out:
        flt.export_bpf(out)
    return fd


def open_filter() -> int:
    """A fresh descriptor of the seccomp program, positioned at its start (close it after use).

    bwrap reads ``--seccomp FD`` to its end, so every sandbox start needs its
    own open file description; each call reopens the memory file.

    Returns:
        A file descriptor (not inheritable; pass it with ``pass_fds``).

    Raises:
        OSError: seccomp is unavailable here (message says what to install).
    """
    with _lock:
        fd = _filter_fd()
    return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)


def problem() -> str | None:
    """Why the filter cannot be built here (one line), or None when it can."""
    try:
        os.close(open_filter())
    except OSError as exc:
        return str(exc)
    return None
