// The built-in profile: an allowlist. Everything not named here fails with
// EPERM, as do other arches' syscalls (i386 int $0x80, x32).
//
// Left out on purpose (EPERM), beyond what is simply not listed:
//  - mounts and namespaces: mount, umount2, fsopen, fsconfig, fsmount, fspick,
//    move_mount, open_tree, open_tree_attr, mount_setattr, unshare, setns,
//    pivot_root, chroot; clone with a CLONE_NEW* flag.
//  - kernel state: keyctl, add_key, request_key, bpf, perf_event_open,
//    userfaultfd, io_uring_*, kexec_*, *_module, acct, swapon/off, reboot,
//    syslog, quotactl*, sethostname, setdomainname, the clock setters.
//  - obsolete or x86 legacy: uselib, ustat, sysfs, _sysctl, lookup_dcookie,
//    nfsservctl, iopl, ioperm, modify_ldt, vm86*.
//  - other processes' memory and files: pidfd_getfd, kcmp, process_madvise
//    (ptrace and process_vm_* stay: the pid namespace bounds them).
//  - NUMA policy (get/set_mempolicy, mbind, move/migrate_pages), fanotify,
//    name_to_handle_at/open_by_handle_at, vhangup, lsm_* attributes.
//  - memfd_secret: pins unswappable memory outside the kernel's direct map;
//    no ordinary program needs it.
//  - ioctl TIOCSTI/TIOCLINUX (typing into, or poking, a terminal).
//  - socket(AF_VSOCK): vsock is not network-namespaced, and on a VM host it
//    reaches the hypervisor side, past the sandbox's network rules.

#include <linux/sched.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>

#include <bit>

#include <cerrno>

#include "filter.hpp"

namespace mayura::seccomp {
namespace {

struct Syscall {
  const char* name;
  // The number where libseccomp may not know the name: syscalls from 424 on
  // have one number on every arch, so these fit both x86-64 and aarch64.
  int unified_nr = -1;
};

// Allowed unconditionally. Names unknown on the build arch are skipped.
constexpr Syscall kAllowed[] = {
    // files and directories
    {"read"},
    {"write"},
    {"open"},
    {"openat"},
    {"openat2"},
    {"creat"},
    {"close"},
    {"close_range"},
    {"stat"},
    {"fstat"},
    {"lstat"},
    {"newfstatat"},
    {"statx"},
    {"statfs"},
    {"fstatfs"},
    {"lseek"},
    {"pread64"},
    {"pwrite64"},
    {"readv"},
    {"writev"},
    {"preadv"},
    {"pwritev"},
    {"preadv2"},
    {"pwritev2"},
    {"access"},
    {"faccessat"},
    {"faccessat2"},
    {"dup"},
    {"dup2"},
    {"dup3"},
    {"pipe"},
    {"pipe2"},
    {"fcntl"},
    {"flock"},
    {"fsync"},
    {"fdatasync"},
    {"sync"},
    {"syncfs"},
    {"sync_file_range"},
    {"truncate"},
    {"ftruncate"},
    {"fallocate"},
    {"fadvise64"},
    {"readahead"},
    {"getdents"},
    {"getdents64"},
    {"getcwd"},
    {"chdir"},
    {"fchdir"},
    {"rename"},
    {"renameat"},
    {"renameat2"},
    {"mkdir"},
    {"mkdirat"},
    {"rmdir"},
    {"link"},
    {"linkat"},
    {"unlink"},
    {"unlinkat"},
    {"symlink"},
    {"symlinkat"},
    {"readlink"},
    {"readlinkat"},
    {"mknod"},
    {"mknodat"},
    {"chmod"},
    {"fchmod"},
    {"fchmodat"},
    {"fchmodat2", 452},
    {"chown"},
    {"fchown"},
    {"lchown"},
    {"fchownat"},
    {"umask"},
    {"utime"},
    {"utimes"},
    {"futimesat"},
    {"utimensat"},
    {"setxattr"},
    {"lsetxattr"},
    {"fsetxattr"},
    {"getxattr"},
    {"lgetxattr"},
    {"fgetxattr"},
    {"listxattr"},
    {"llistxattr"},
    {"flistxattr"},
    {"removexattr"},
    {"lremovexattr"},
    {"fremovexattr"},
    {"setxattrat", 463},
    {"getxattrat", 464},
    {"listxattrat", 465},
    {"removexattrat", 466},
    {"file_getattr", 468},
    {"file_setattr", 469},
    {"sendfile"},
    {"splice"},
    {"tee"},
    {"vmsplice"},
    {"copy_file_range"},
    {"cachestat", 451},
    {"inotify_init"},
    {"inotify_init1"},
    {"inotify_add_watch"},
    {"inotify_rm_watch"},
    {"statmount", 457},
    {"listmount", 458},
    // memory
    {"brk"},
    {"mmap"},
    {"munmap"},
    {"mremap"},
    {"mprotect"},
    {"msync"},
    {"mincore"},
    {"madvise"},
    {"remap_file_pages"},
    {"mlock"},
    {"mlock2"},
    {"munlock"},
    {"mlockall"},
    {"munlockall"},
    {"memfd_create"},
    {"membarrier"},
    {"pkey_mprotect"},
    {"pkey_alloc"},
    {"pkey_free"},
    {"map_shadow_stack", 453},
    {"mseal", 462},
    // processes and threads (clone and clone3 are below)
    {"fork"},
    {"vfork"},
    {"execve"},
    {"execveat"},
    {"exit"},
    {"exit_group"},
    {"wait4"},
    {"waitid"},
    {"set_tid_address"},
    {"set_robust_list"},
    {"get_robust_list"},
    {"rseq"},
    {"futex"},
    {"futex_waitv"},
    {"futex_wake", 454},
    {"futex_wait", 455},
    {"futex_requeue", 456},
    {"arch_prctl"},
    {"set_thread_area"},
    {"get_thread_area"},
    {"prctl"},
    {"seccomp"},
    {"ptrace"},
    {"process_vm_readv"},
    {"process_vm_writev"},
    {"pidfd_open"},
    {"pidfd_send_signal"},
    {"process_mrelease"},
    {"getpid"},
    {"getppid"},
    {"gettid"},
    {"getpgid"},
    {"setpgid"},
    {"getpgrp"},
    {"getsid"},
    {"setsid"},
    {"getrlimit"},
    {"setrlimit"},
    {"prlimit64"},
    {"getrusage"},
    {"times"},
    {"sysinfo"},
    {"uname"},
    {"getpriority"},
    {"setpriority"},
    {"ioprio_get"},
    {"ioprio_set"},
    {"getcpu"},
    {"sched_yield"},
    {"sched_setparam"},
    {"sched_getparam"},
    {"sched_setscheduler"},
    {"sched_getscheduler"},
    {"sched_get_priority_max"},
    {"sched_get_priority_min"},
    {"sched_rr_get_interval"},
    {"sched_setaffinity"},
    {"sched_getaffinity"},
    {"sched_setattr"},
    {"sched_getattr"},
    {"landlock_create_ruleset"},
    {"landlock_add_rule"},
    {"landlock_restrict_self"},
    // credentials: harmless without capabilities
    {"getuid"},
    {"geteuid"},
    {"getgid"},
    {"getegid"},
    {"getresuid"},
    {"getresgid"},
    {"getgroups"},
    {"setuid"},
    {"setgid"},
    {"setreuid"},
    {"setregid"},
    {"setresuid"},
    {"setresgid"},
    {"setfsuid"},
    {"setfsgid"},
    {"setgroups"},
    {"capget"},
    {"capset"},
    // signals
    {"rt_sigaction"},
    {"rt_sigprocmask"},
    {"rt_sigreturn"},
    {"rt_sigpending"},
    {"rt_sigtimedwait"},
    {"rt_sigqueueinfo"},
    {"rt_tgsigqueueinfo"},
    {"rt_sigsuspend"},
    {"sigaltstack"},
    {"kill"},
    {"tkill"},
    {"tgkill"},
    {"pause"},
    {"signalfd"},
    {"signalfd4"},
    {"restart_syscall"},
    // time and timers
    {"time"},
    {"gettimeofday"},
    {"clock_gettime"},
    {"clock_getres"},
    {"clock_nanosleep"},
    {"nanosleep"},
    {"alarm"},
    {"getitimer"},
    {"setitimer"},
    {"timer_create"},
    {"timer_settime"},
    {"timer_gettime"},
    {"timer_getoverrun"},
    {"timer_delete"},
    {"timerfd_create"},
    {"timerfd_settime"},
    {"timerfd_gettime"},
    // waiting and events
    {"poll"},
    {"ppoll"},
    {"select"},
    {"pselect6"},
    {"epoll_create"},
    {"epoll_create1"},
    {"epoll_ctl"},
    {"epoll_wait"},
    {"epoll_pwait"},
    {"epoll_pwait2"},
    {"eventfd"},
    {"eventfd2"},
    {"io_setup"},
    {"io_destroy"},
    {"io_submit"},
    {"io_cancel"},
    {"io_getevents"},
    {"io_pgetevents"},
    // sockets (socket itself is below)
    {"socketpair"},
    {"bind"},
    {"listen"},
    {"connect"},
    {"accept"},
    {"accept4"},
    {"getsockname"},
    {"getpeername"},
    {"setsockopt"},
    {"getsockopt"},
    {"shutdown"},
    {"sendto"},
    {"recvfrom"},
    {"sendmsg"},
    {"recvmsg"},
    {"sendmmsg"},
    {"recvmmsg"},
    // System V and POSIX IPC (IPC namespace)
    {"shmget"},
    {"shmat"},
    {"shmdt"},
    {"shmctl"},
    {"semget"},
    {"semop"},
    {"semtimedop"},
    {"semctl"},
    {"msgget"},
    {"msgsnd"},
    {"msgrcv"},
    {"msgctl"},
    {"mq_open"},
    {"mq_unlink"},
    {"mq_timedsend"},
    {"mq_timedreceive"},
    {"mq_notify"},
    {"mq_getsetattr"},
    // misc
    {"getrandom"},
};

using detail::kAfVsock;
using detail::kNamespaceFlags;
static_assert(kNamespaceFlags == (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |
                                  CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME));

// personality values Docker allows: PER_LINUX, PER_LINUX32 (0x0008),
// UNAME26 (0x20000), both, and the query 0xffffffff.
constexpr std::uint64_t kPersonalities[] = {0x0, 0x0008, 0x20000, 0x20008, 0xffffffff};

// BPF ahead of libseccomp's program: on the native arch, ioctl with TIOCSTI
// or TIOCLINUX and socket with AF_VSOCK fail EPERM; everything else falls
// through to the program that follows. Written by hand because libseccomp
// refuses a rule whose action is the default's (EPERM), and the complement
// written as allow rules took 65 rules and some 190 instructions of the
// filter every command carries. Only the low 32 bits are
// compared: the kernel reads both arguments as ints, so upper bits cannot
// slip past.
Program argument_guards() {
  constexpr std::uint32_t kLow = std::endian::native == std::endian::little ? 0 : 4;
  constexpr std::uint32_t kArg0 = offsetof(seccomp_data, args) + kLow;
  constexpr std::uint32_t kArg1 = offsetof(seccomp_data, args) + 8 + kLow;
  constexpr std::uint8_t kDeny = 10, kRest = 11;  // instruction indices
  auto to = [](std::uint8_t target, std::uint8_t at) { return static_cast<std::uint8_t>(target - at - 1); };
  const sock_filter guard[] = {
      /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, seccomp_arch_native(), 0, to(kRest, 1)),
      /* 2 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ioctl, 0, to(7, 3)),
      /* 4 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg1),
      /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, to(kDeny, 5), 0),
      /* 6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, to(kDeny, 6), to(kRest, 6)),
      /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, to(kRest, 7)),
      /* 8 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, kArg0),
      /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAfVsock, to(kDeny, 9), to(kRest, 9)),
      /* 10 */ BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
  };
  static_assert(sizeof guard / sizeof guard[0] == kRest);
  return Program(reinterpret_cast<const char*>(guard), sizeof guard);
}

}  // namespace

Program compile_default() {
  detail::Filter f(SCMP_ACT_ERRNO(EPERM));
  f.set_attr(SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM), "the bad-arch action");
  // A binary search over syscall numbers instead of a linear scan.
  f.set_attr(SCMP_FLTATR_CTL_OPTIMIZE, 2, "the binary-tree optimization");

  for (const Syscall& s : kAllowed) {
    int nr = detail::resolve(s.name, s.unified_nr);
    if (nr < 0) continue;
    detail::add_rule(f, SCMP_ACT_ALLOW, nr, {}, s.name);
  }

  // clone: flags are arg0 on x86-64 and aarch64 (s390 would differ).
  detail::add_rule(f, SCMP_ACT_ALLOW, SCMP_SYS(clone), {scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, kNamespaceFlags, 0}},
                   "clone");
  // clone3 passes its flags in memory, out of seccomp's sight: ENOSYS makes
  // libc fall back to clone, where the flags are checked.
  if (int nr = seccomp_syscall_resolve_name("clone3"); nr >= 0)
    detail::add_rule(f, SCMP_ACT_ERRNO(ENOSYS), nr, {}, "clone3");

  // personality takes an unsigned int; the kernel ignores the upper bits.
  for (std::uint64_t p : kPersonalities)
    detail::add_rule(f, SCMP_ACT_ALLOW, SCMP_SYS(personality), {scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, 0xffffffffU, p}},
                     "personality");

  // ioctl and socket are allowed here; argument_guards() refuses the few
  // values that must not pass, ahead of this program.
  detail::add_rule(f, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), {}, "ioctl");
  detail::add_rule(f, SCMP_ACT_ALLOW, SCMP_SYS(socket), {}, "socket");

  return argument_guards() + f.export_bpf();
}

}  // namespace mayura::seccomp
