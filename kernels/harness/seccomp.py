"""A seccomp filter for the sandbox child, installed after the harness has opened every
file it needs and loaded the candidate, before the candidate's first call.

Whatever a kernel manages to call — a libc function found by walking symbol tables,
shellcode on a page it made executable — the system calls that would let it touch the
host end the process with SIGSYS: opening files, starting programs or processes, sockets,
signalling other processes, leaving its session, changing identity or the file system,
tracing, and the kernel interfaces that bypass the filter (io_uring, bpf, userfaultfd).
Threads (``clone`` with ``CLONE_THREAD``) stay allowed: OpenMP needs them.

x86-64 Linux only; elsewhere ``install`` returns a reason and the child says it ran
without the filter.
"""
from __future__ import annotations

import ctypes
import os
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
CLONE_THREAD = 0x00010000
ENOSYS = 38

# BPF opcodes
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06

DENY_X86_64 = {
    # files and the file system
    "open": 2, "openat": 257, "openat2": 437, "creat": 85, "name_to_handle_at": 303, "open_by_handle_at": 304,
    "unlink": 87, "unlinkat": 263, "rename": 82, "renameat": 264, "renameat2": 316, "mkdir": 83, "mkdirat": 258,
    "rmdir": 84, "link": 86, "linkat": 265, "symlink": 88, "symlinkat": 266, "chmod": 90, "fchmod": 91,
    "fchmodat": 268, "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260, "truncate": 76, "mknod": 133,
    "mknodat": 259, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "chdir": 80, "fchdir": 81,
    # programs and processes
    "execve": 59, "execveat": 322, "fork": 57, "vfork": 58,
    # network
    "socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43, "accept4": 288,
    # other processes, sessions, identity
    "kill": 62, "tkill": 200, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297, "pidfd_open": 434,
    "pidfd_send_signal": 424, "pidfd_getfd": 438, "ptrace": 101, "process_vm_readv": 310,
    "process_vm_writev": 311, "setsid": 112, "setpgid": 109, "setuid": 105, "setgid": 106, "setreuid": 113,
    "setregid": 114, "setresuid": 117, "setresgid": 119, "setgroups": 116, "unshare": 272, "setns": 308,
    "personality": 135,
    # interfaces that sidestep the filter or the machine
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "bpf": 321, "userfaultfd": 323,
    "perf_event_open": 298, "keyctl": 250, "add_key": 248, "request_key": 249, "kexec_load": 246,
    "kexec_file_load": 320, "init_module": 175, "finit_module": 313, "delete_module": 176, "reboot": 169,
    "swapon": 167, "swapoff": 168, "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
    "settimeofday": 164, "clock_settime": 227, "adjtimex": 159, "acct": 163, "quotactl": 179,
}
CLONE, CLONE3, TGKILL = 56, 435, 234
SOCKET, AF_UNIX, EACCES = 41, 1, 13

# A baseline's process (trusted code, or a user's own model) may open files, start the
# compiler torch.compile runs and signal its own children; it may not reach the network,
# trace or read other processes, or change the machine.
_BASELINE_ALLOWED = {
    "open", "openat", "openat2", "creat", "unlink", "unlinkat", "rename", "renameat", "renameat2", "mkdir",
    "mkdirat", "rmdir", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmod", "fchmodat", "truncate",
    "chdir", "fchdir", "execve", "execveat", "fork", "vfork", "kill", "tkill", "setsid", "setpgid", "socketpair",
    "name_to_handle_at",
}
# "capture" is the own-ops capture child, which runs a user's problem file with torch loaded:
# the candidate's list, and no directory listings (nothing to learn about the host to smuggle
# out in the graph it returns) and no anonymous files.
PROFILES = {
    "candidate": dict(DENY_X86_64),
    "capture": {**DENY_X86_64, "getdents": 78, "getdents64": 217, "memfd_create": 319},
    "baseline": {name: nr for name, nr in DENY_X86_64.items() if name not in _BASELINE_ALLOWED},
}
PROFILES["kernel"] = PROFILES["candidate"]     # the name the capture code first knew it by


def _ins(code, k, jt=0, jf=0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def program(pid: int, profile: str = "candidate") -> bytes:
    """The filter: arch check, clone3 → ENOSYS (glibc falls back to clone), the profile's deny
    list → kill, everything else allowed. "candidate" and "capture" allow clone only for
    threads and tgkill only at ourselves; "baseline" lets processes and files be, and refuses
    sockets other than AF_UNIX with EACCES (a library probing the network gets an error)."""
    if profile not in PROFILES:
        raise ValueError(f"unknown seccomp profile {profile!r}; known: {', '.join(PROFILES)}")
    kill = _ins(RET_K, SECCOMP_RET_KILL_PROCESS)
    allow = _ins(RET_K, SECCOMP_RET_ALLOW)
    deny = PROFILES[profile]
    out = [
        _ins(LD_W_ABS, 4),                              # arch
        _ins(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        kill,
        _ins(LD_W_ABS, 0),                              # syscall number
        _ins(JGE_K, 0x40000000, 0, 1),                  # x32 ABI numbers (bit 30 set): refuse
        kill,
    ]
    out += [_ins(JEQ_K, CLONE3, 0, 1), _ins(RET_K, SECCOMP_RET_ERRNO | ENOSYS)]
    if profile != "baseline":
        out += [_ins(JEQ_K, CLONE, 0, 4), _ins(LD_W_ABS, 16), _ins(JSET_K, CLONE_THREAD, 1, 0), kill, allow]
        out += [_ins(JEQ_K, TGKILL, 0, 4), _ins(LD_W_ABS, 16), _ins(JEQ_K, pid, 1, 0), kill, allow]
    else:
        deny = {k: v for k, v in deny.items() if k != "socket"}
        out += [_ins(JEQ_K, SOCKET, 0, 4), _ins(LD_W_ABS, 16), _ins(JEQ_K, AF_UNIX, 1, 0),
                _ins(RET_K, SECCOMP_RET_ERRNO | EACCES), allow]
    for nr in sorted(set(deny.values())):
        out += [_ins(JEQ_K, nr, 0, 1), kill]
    out.append(allow)
    return b"".join(out)


def install(profile: str = "candidate") -> str | None:
    """Install the filter on this process (and its future threads). None on success,
    else why not."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return f"seccomp filter not available on {platform.system()}/{platform.machine()}"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"no_new_privs failed: {os.strerror(ctypes.get_errno())}"
    prog = program(os.getpid(), profile)
    buf = ctypes.create_string_buffer(prog, len(prog))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(prog) // 8, ctypes.addressof(buf))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        return f"seccomp filter refused: {os.strerror(ctypes.get_errno())}"
    return None
