"""A seccomp-BPF syscall filter for the sandbox child, built without libseccomp.

Runs inside the child (loaded as a plain module, so it imports nothing from `tablequest`).
The filter is a deny-list on top of "allow": it does not try to enumerate what pandas needs,
it removes what table code never needs and what escapes are made of:

- new processes: `fork`, `vfork`, `clone` without `CLONE_THREAD` (threads stay possible),
  `clone3` (answered with ENOSYS so glibc falls back to `clone`), `execve`, `execveat`;
- sockets: `socket` (all families unless the network is allowed, then only AF_INET/AF_INET6)
  and `socketpair` (always: table code has no use for a local channel);
- memory outside the address-space limit: `memfd_create`, `memfd_secret`, System V shared
  memory, semaphores and message queues, POSIX message queues (they outlive their mappings,
  and System V segments outlive the process when there is no IPC namespace);
- leaving the process group: `setsid`, `setpgid` (the host stops and kills the child by its
  group; a child in a group of its own would keep running while the host waits);
- signals to other processes: `kill`, `tgkill`, `rt_(tg)sigqueueinfo` unless aimed at our own
  pid, `tkill`, the pidfd calls; `prlimit64`/`sched_setaffinity` on other pids, priority,
  scheduler and memory-policy changes of other processes;
- kernel attack surface: ptrace, process_vm_*, bpf, perf_event_open, userfaultfd, io_uring,
  keyrings, mount/namespace calls, module and kexec loading, and similar administration calls.

`install` applies the filter to the calling thread only (no TSYNC): the child installs it
while it is single-threaded, so every later thread inherits it, and a task that reports
`Seccomp: 2` provably started after the lockdown (Landlock is applied just before, in the same
thread), which is what the tests check from the host.

Only x86_64 is supported (syscall numbers differ per architecture); elsewhere `build_filter`
raises `SeccompUnsupported` and the sandbox reports the layer as inactive. A foreign
architecture or the x32 ABI inside an x86_64 process is refused outright.
"""

from __future__ import annotations

import platform
import struct

if __package__:  # imported as part of tablequest, in the host
    from tablequest.errors import RunError
else:  # loaded by path in the sandbox child before lock-down: the standard library only

    class RunError(Exception):  # type: ignore[no-redef]
        """The child's stand-in: its errors reach the host as messages, not exceptions."""


AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
CLONE_THREAD = 0x00010000
AF_INET = 2
AF_INET6 = 10

RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
EPERM = 1
ENOSYS = 38

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

# offsets into struct seccomp_data
OFF_NR = 0
OFF_ARCH = 4
OFF_ARG0_LO = 16

# x86_64 numbers (from asm/unistd_64.h)
NR = {
    "shmget": 29,
    "shmat": 30,
    "shmctl": 31,
    "socket": 41,
    "socketpair": 53,
    "semget": 64,
    "semop": 65,
    "semctl": 66,
    "msgget": 68,
    "msgsnd": 69,
    "msgrcv": 70,
    "msgctl": 71,
    "semtimedop": 220,
    "mq_open": 240,
    "mq_unlink": 241,
    "mq_timedsend": 242,
    "mq_timedreceive": 243,
    "mq_notify": 244,
    "mq_getsetattr": 245,
    "memfd_create": 319,
    "memfd_secret": 447,
    "clone": 56,
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "kill": 62,
    "ptrace": 101,
    "syslog": 103,
    "rt_sigqueueinfo": 129,
    "uselib": 134,
    "personality": 135,
    "vhangup": 153,
    "pivot_root": 155,
    "chroot": 161,
    "acct": 163,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "nfsservctl": 180,
    "tkill": 200,
    "lookup_dcookie": 212,
    "tgkill": 234,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "setpgid": 109,
    "setsid": 112,
    "rt_tgsigqueueinfo": 297,
    "perf_event_open": 298,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "execveat": 322,
    "userfaultfd": 323,
    "pidfd_send_signal": 424,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_open": 434,
    "clone3": 435,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "mount_setattr": 442,
    "quotactl_fd": 443,
    "setpriority": 141,
    "sched_setparam": 142,
    "sched_setscheduler": 144,
    "sched_setaffinity": 203,
    "ioprio_set": 251,
    "migrate_pages": 256,
    "move_pages": 279,
    "prlimit64": 302,
    "sched_setattr": 314,
}

#: syscalls refused with EPERM unconditionally
DENIED = (
    "setsid",  # leaving the process group the host stops between runs (issue 25)
    "setpgid",
    "fork",
    "vfork",
    "execve",
    "execveat",
    "tkill",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kcmp",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
    "process_madvise",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "add_key",
    "request_key",
    "keyctl",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "quotactl_fd",
    "iopl",
    "ioperm",
    "name_to_handle_at",
    "open_by_handle_at",
    "syslog",
    "uselib",
    "personality",
    "vhangup",
    "sethostname",
    "setdomainname",
    "nfsservctl",
    "lookup_dcookie",
    "fanotify_init",
    "setpriority",
    "sched_setparam",
    "sched_setscheduler",
    "sched_setattr",
    "ioprio_set",
    "migrate_pages",
    "move_pages",
    "socketpair",
    "memfd_create",
    "memfd_secret",
    "shmget",
    "shmat",
    "shmctl",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
    "mq_open",
    "mq_unlink",
    "mq_timedsend",
    "mq_timedreceive",
    "mq_notify",
    "mq_getsetattr",
)
#: syscalls allowed only when their first argument is our own pid (signals to ourselves)
SELF_ONLY = ("kill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
#: syscalls whose first argument is a pid where 0 also means "this process"
SELF_OR_ZERO = ("prlimit64", "sched_setaffinity")


class SeccompUnsupported(RunError, RuntimeError):
    """The filter cannot be built or installed on this machine."""


def _insn(code: int, jt: int, jf: int, k: int) -> tuple[int, int, int, int]:
    return (code, jt, jf, k & 0xFFFFFFFF)


def build_filter(*, own_pid: int, allow_network: bool, machine: str | None = None) -> bytes:
    """Return the filter as packed `struct sock_filter` records.

    Args:
        own_pid: the child's pid as the kernel sees it in its namespace (signals allowed there).
        allow_network: keep AF_INET/AF_INET6 sockets usable (other families stay blocked).
        machine: architecture name, default `platform.machine()`.
    """
    arch = machine if machine is not None else platform.machine()
    if arch not in ("x86_64", "AMD64"):
        raise SeccompUnsupported(f"seccomp filter not available for architecture {arch!r}")
    eperm = RET_ERRNO | EPERM
    prog: list[tuple[int, int, int, int]] = [
        _insn(_LD_W_ABS, 0, 0, OFF_ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, OFF_NR),
        _insn(_JGE_K, 0, 1, X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, eperm),
    ]
    for name in DENIED:
        prog += [_insn(_JEQ_K, 0, 1, NR[name]), _insn(_RET_K, 0, 0, eperm)]
    prog += [_insn(_JEQ_K, 0, 1, NR["clone3"]), _insn(_RET_K, 0, 0, RET_ERRNO | ENOSYS)]
    # clone: allowed only for threads (CLONE_THREAD in the flags, first argument)
    prog += [
        _insn(_JEQ_K, 0, 4, NR["clone"]),
        _insn(_LD_W_ABS, 0, 0, OFF_ARG0_LO),
        _insn(_JSET_K, 0, 1, CLONE_THREAD),
        _insn(_RET_K, 0, 0, RET_ALLOW),
        _insn(_RET_K, 0, 0, eperm),
    ]
    for name in SELF_ONLY:
        prog += [
            _insn(_JEQ_K, 0, 4, NR[name]),
            _insn(_LD_W_ABS, 0, 0, OFF_ARG0_LO),
            _insn(_JEQ_K, 0, 1, own_pid),
            _insn(_RET_K, 0, 0, RET_ALLOW),
            _insn(_RET_K, 0, 0, eperm),
        ]
    for name in SELF_OR_ZERO:
        prog += [
            _insn(_JEQ_K, 0, 5, NR[name]),
            _insn(_LD_W_ABS, 0, 0, OFF_ARG0_LO),
            _insn(_JEQ_K, 2, 0, 0),
            _insn(_JEQ_K, 1, 0, own_pid),
            _insn(_RET_K, 0, 0, eperm),
            _insn(_RET_K, 0, 0, RET_ALLOW),
        ]
    if allow_network:
        prog += [
            _insn(_JEQ_K, 0, 5, NR["socket"]),
            _insn(_LD_W_ABS, 0, 0, OFF_ARG0_LO),
            _insn(_JEQ_K, 2, 0, AF_INET),
            _insn(_JEQ_K, 1, 0, AF_INET6),
            _insn(_RET_K, 0, 0, eperm),
            _insn(_RET_K, 0, 0, RET_ALLOW),
        ]
    else:
        prog += [_insn(_JEQ_K, 0, 1, NR["socket"]), _insn(_RET_K, 0, 0, eperm)]
    prog.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    return b"".join(struct.pack("=HBBI", *ins) for ins in prog)


def install(program: bytes) -> None:  # pragma: no cover - irreversible; exercised in the child
    """Install `program` for this thread and every thread it starts (sets no_new_privs first).

    Call it while the process has a single thread: threads that already exist keep running
    unfiltered (that is deliberate, see the module docstring).
    """
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise SeccompUnsupported(f"prctl(NO_NEW_PRIVS) failed: errno {ctypes.get_errno()}")

    class _Prog(ctypes.Structure):
        _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))

    buf = ctypes.create_string_buffer(program, len(program))
    prog = _Prog(len(program) // 8, ctypes.addressof(buf))
    # seccomp(SECCOMP_SET_MODE_FILTER, flags=0, &prog)
    rc = libc.syscall(ctypes.c_long(317), ctypes.c_long(1), ctypes.c_long(0), ctypes.byref(prog))
    if rc != 0:
        raise SeccompUnsupported(f"seccomp() failed: rc {rc}, errno {ctypes.get_errno()}")
