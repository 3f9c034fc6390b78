// The seccomp profiles, proved in forked children that install them and make
// the raw calls. No root needed.

#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "mayura/seccomp/profile.hpp"
#include "tests/support/ia32_entry.hpp"

namespace mayura::seccomp {
namespace {

// Exit codes above any errno the child reports.
constexpr int kInstallFailed = 250;
constexpr int kExecFailed = 251;

// Runs fn in a child; returns fn's result (the child's exit code), or 1000 +
// the signal that ended it. With no filter: the kernel's own answer.
int run_unfiltered(const std::function<int()>& fn) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(fn());
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status);
}

// The same, with program installed first.
int run_under(const Program& program, const std::function<int()>& fn) {
  return run_unfiltered([&] {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || install(program.data(), program.size()) != 0)
      return kInstallFailed;
    return fn();
  });
}

// The errno of a raw syscall that should fail, or 0 if it succeeded.
template <typename... Args>
int errno_of(long nr, Args... args) {
  errno = 0;
  return ::syscall(nr, args...) == -1 ? errno : 0;
}

int exec(const std::vector<std::string>& argv) {
  std::vector<char*> raw;
  raw.reserve(argv.size());
  for (const auto& a : argv) raw.push_back(const_cast<char*>(a.c_str()));
  raw.push_back(nullptr);
  ::execv(raw[0], raw.data());
  return kExecFailed;
}

const Program& compiled_default() {
  static const Program p = compile_default();
  return p;
}

TEST(SeccompDefault, IsWholeBpfInstructions) {
  const Program& p = compiled_default();
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.size() % sizeof(sock_filter), 0U);
  EXPECT_LE(p.size() / sizeof(sock_filter), std::size_t{BPF_MAXINSNS});
}

TEST(SeccompDefault, InstallRejectsMalformedPrograms) {
  errno = 0;
  EXPECT_EQ(install("1234567", 7), -1);
  EXPECT_EQ(errno, EINVAL);
  EXPECT_EQ(install(nullptr, 0), -1);
}

TEST(SeccompDefault, DeniesContainmentEscapesWithEperm) {
  const Program& p = compiled_default();
  // Arguments that would fail differently (or harmlessly succeed) unfiltered.
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_mount, "none", "/nonexistent", "tmpfs", 0UL, nullptr); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_umount2, "/nonexistent", 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_unshare, CLONE_NEWNS); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_setns, -1, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_keyctl, 0, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_bpf, 999, nullptr, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_io_uring_setup, 0, nullptr); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_open_by_handle_at, -1, nullptr, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_pivot_root, "/nonexistent", "/nonexistent"); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_chroot, "/"); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_fsopen, "tmpfs", 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_perf_event_open, nullptr, 0, -1, -1, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_userfaultfd, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_pidfd_getfd, -1, -1, 0); }), EPERM);
  // A number no kernel has yet is not allowed either.
  EXPECT_EQ(run_under(p, [] { return errno_of(1000); }), EPERM);
}

TEST(SeccompDefault, AllowsModernEverydaySyscalls) {
  const Program& p = compiled_default();
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_memfd_create, "x", 0U); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_pidfd_open, ::getpid(), 0U); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_close_range, 1000U, 2000U, 0U); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_faccessat2, AT_FDCWD, "/nonexistent", F_OK, 0); }), ENOENT);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_openat2, AT_FDCWD, "/nonexistent", nullptr, 0UL); }), EINVAL);
  // By number, where libseccomp 2.5 may not know the name: fchmodat2 (452,
  // Linux 6.6) and file_getattr (468, 6.17) reach the kernel, which answers
  // as it does unfiltered (ENOENT where it has them, ENOSYS where it is older).
  const auto fchmodat2 = [] { return errno_of(452, AT_FDCWD, "/nonexistent", 0, 0); };
  const auto file_getattr = [] { return errno_of(468, AT_FDCWD, "/nonexistent", nullptr, 0UL, 0U); };
  EXPECT_EQ(run_under(p, fchmodat2), run_unfiltered(fchmodat2));
  EXPECT_EQ(run_under(p, file_getattr), run_unfiltered(file_getattr));
  EXPECT_NE(run_unfiltered(fchmodat2), EPERM);
  EXPECT_NE(run_unfiltered(file_getattr), EPERM);
  // Denied by choice.
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_memfd_secret, 0U); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_kcmp, 1, 1, 0, 0, 0); }), EPERM);
}

TEST(SeccompDefault, CloneWithNamespaceFlagsIsDeniedPlainForkWorks) {
  const Program& p = compiled_default();
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(run_under(p,
                      [] {
                        pid_t child = ::fork();
                        if (child == 0) ::_exit(7);
                        int status = 0;
                        if (child < 0 || ::waitpid(child, &status, 0) != child) return 1;
                        return WIFEXITED(status) && WEXITSTATUS(status) == 7 ? 0 : 2;
                      }),
            0);
}

TEST(SeccompDefault, Clone3IsEnosys) {
  EXPECT_EQ(run_under(compiled_default(),
                      [] {
                        clone_args args{};
                        args.exit_signal = SIGCHLD;
                        return errno_of(SYS_clone3, &args, sizeof args);
                      }),
            ENOSYS);
}

TEST(SeccompDefault, PersonalityOnlyDockersValues) {
  const Program& p = compiled_default();
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_personality, 0x20000UL); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_personality, 0xffffffffUL); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_personality, 0x400000UL); }), EPERM);
}

TEST(SeccompDefault, IoctlDeniesOnlyTiocstiAndTioclinuxWhateverTheUpperBits) {
  const Program& p = compiled_default();
  // Every cmd in the tty range on a pipe: exactly the two are EPERM; the rest
  // reach the kernel (which answers ENOTTY or succeeds). Upper bits, which the
  // kernel drops, change nothing.
  int result = run_under(p, [] {
    int fds[2];
    if (::pipe(fds) != 0) return 200;
    char buf[256] = {};
    for (unsigned long upper : {0UL, 1UL << 32, 0xffffffffUL << 32}) {
      for (unsigned long cmd = 0x5400; cmd <= 0x54ff; ++cmd) {
        int e = errno_of(SYS_ioctl, fds[0], upper | cmd, buf);
        bool denied = cmd == TIOCSTI || cmd == TIOCLINUX;
        if ((e == EPERM) != denied) return static_cast<int>(cmd & 0xff);
      }
    }
    int n = -1;
    return ::ioctl(fds[0], FIONREAD, &n) == 0 && n == 0 ? 0 : 201;
  });
  EXPECT_EQ(result, 0) << "wrong answer for cmd 0x54" << std::hex << result;
}

TEST(SeccompDefault, SocketAllowsInetAndUnixButNotVsock) {
  const Program& p = compiled_default();
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_socket, AF_UNIX, SOCK_STREAM, 0); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_socket, AF_INET, SOCK_DGRAM, 0); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_socket, (1UL << 32) | 40, SOCK_STREAM, 0); }), EPERM);
}

#if defined(__x86_64__)
TEST(SeccompDefault, TheBuiltInBytesAreTheCompiledProfile) {
  EXPECT_EQ(mayura::seccomp::default_program(), compile_default());
  EXPECT_EQ(mayura::seccomp::default_program().size() % sizeof(sock_filter), 0u);
}

TEST(SeccompDefault, OtherArchesSyscallsAreEperm) {
  EXPECT_EQ(run_under(Program{}, [] { return 0; }), kInstallFailed);  // an empty program is refused
  const Program& p = compiled_default();
  // x32: the same entry point, with the x32 bit in the number.
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_getpid | 0x40000000L); }), EPERM);
  // i386 through int $0x80, on a host that runs it (the filter answers
  // EPERM) or faults on it (it faults under the filter too): either way the
  // call never runs.
  const testing::Ia32Entry host = testing::host_ia32_entry();
  std::cout << testing::describe(host) << "\n";
  ASSERT_NE(host, testing::Ia32Entry::other) << testing::describe(host);
  const int filtered = run_under(p, [] { return testing::int80_getpid_in_child() == -EPERM ? 0 : 1; });
  EXPECT_EQ(filtered, host == testing::Ia32Entry::runs ? 0 : 1000 + SIGSEGV);
}
#endif

TEST(SeccompDefault, OrdinaryProgramsRun) {
  const Program& p = compiled_default();
  EXPECT_EQ(
      run_under(
          p,
          [] {
            return exec({"/bin/sh", "-c", "echo ok >/dev/null; ls / >/dev/null; cat /proc/self/status >/dev/null"});
          }),
      0);
  EXPECT_EQ(run_under(p,
                      [] {
                        return exec({"/usr/bin/python3", "-c",
                                     "import threading, subprocess, socket, os, tempfile\n"
                                     "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
                                     "subprocess.run(['true'], check=True)\n"
                                     "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
                                     "c = socket.create_connection(s.getsockname()); a, _ = s.accept()\n"
                                     "c.sendall(b'x'); assert a.recv(1) == b'x'\n"
                                     "with tempfile.TemporaryDirectory() as d: os.mkdir(os.path.join(d, 'x'))\n"
                                     "os.listdir('/')\n"});
                      }),
            0);
}

// --- The baseline under every OCI profile ---

// A caller's profile that allows everything, over the baseline.
int run_under_baseline_and_permissive(const std::function<int()>& fn) {
  static const Program permissive = compile_oci(R"({"defaultAction": "SCMP_ACT_ALLOW"})");
  return run_under(baseline_program(), [&] {
    if (install(permissive.data(), permissive.size()) != 0) return kInstallFailed;
    return fn();
  });
}

TEST(SeccompBaseline, TheBuiltInBytesAreTheCompiledBaseline) { EXPECT_EQ(baseline_program(), compile_baseline()); }

TEST(SeccompBaseline, NoProfileReopensWhatTheGuaranteesRestOn) {
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_unshare, CLONE_NEWUSER); }), EPERM);
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_mount, "none", "/tmp", "tmpfs", 0, nullptr); }),
            EPERM);
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_setns, 0, 0); }), EPERM);
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_bpf, 0, nullptr, 0); }), EPERM);
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_io_uring_setup, 1, nullptr); }), EPERM);
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_keyctl, 0, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_getpid | 0x40000000L); }), EPERM);  // x32
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_clone3, nullptr, 0); }), ENOSYS);
  EXPECT_EQ(run_under_baseline_and_permissive([] { return errno_of(SYS_socket, 40 /* AF_VSOCK */, SOCK_STREAM, 0); }),
            EPERM);
  EXPECT_EQ(run_under_baseline_and_permissive([] {
              int fds[2];
              if (::pipe(fds) != 0) return 200;
              char c = 'x';
              return errno_of(SYS_ioctl, fds[0], (1UL << 32) | TIOCSTI, &c);
            }),
            EPERM);
  for (int flag : {CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWCGROUP,
                   CLONE_NEWTIME}) {
    EXPECT_EQ(run_under_baseline_and_permissive([flag] {
                return errno_of(SYS_clone, static_cast<unsigned long>(flag | SIGCHLD), nullptr, nullptr, nullptr, 0);
              }),
              EPERM)
        << std::hex << flag;
  }
}

TEST(SeccompBaseline, EverythingElseRuns) {
  EXPECT_EQ(run_under_baseline_and_permissive([] {
              return exec({"/usr/bin/python3", "-c",
                           "import os, subprocess, threading, socket\n"
                           "subprocess.run(['true'], check=True)\n"
                           "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
                           "socket.socket().close()\n"
                           "os.personality(0x400000) if hasattr(os, 'personality') else None\n"});
            }),
            0);
}

// --- OCI / Docker JSON profiles ---

TEST(SeccompOci, DenyMkdirWithErrnoRet) {
  Program p = compile_oci(R"({
    "defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [
      {"names": ["mkdir", "mkdirat", "no_such_syscall_anywhere"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13},
      {"name": "getpid", "action": "SCMP_ACT_ALLOW"}
    ]})");
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_mkdirat, AT_FDCWD, "/nonexistent/x", 0700); }), EACCES);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_getpid); }), 0);
  EXPECT_EQ(run_under(p, [] { return exec({"/bin/sh", "-c", "ls / >/dev/null"}); }), 0);
  EXPECT_EQ(run_under(p, [] { return exec({"/bin/sh", "-c", "mkdir /tmp/mayura-seccomp-never 2>/dev/null"}); }), 1);
#if defined(__x86_64__)
  // A denylist cannot be bypassed through another arch's entry.
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_getpid | 0x40000000L); }), EPERM);
#endif
}

TEST(SeccompOci, ArgsAndDefaultErrno) {
  // The base set keeps a sanitizer runtime alive in the child; umask and
  // alarm (which never fail) carry the conditions.
  Program p = compile_oci(R"({
    "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64", "SCMP_ARCH_S390X"],
    "syscalls": [
      {"names": ["exit_group", "exit", "getppid", "read", "write", "close", "mmap", "munmap", "mprotect",
                 "madvise", "brk", "rt_sigaction", "rt_sigprocmask", "sigaltstack", "futex", "sched_yield",
                 "gettid", "getpid", "prctl"], "action": "SCMP_ACT_ALLOW"},
      {"names": ["umask"], "action": "SCMP_ACT_ALLOW", "args": [
        {"index": 0, "value": 5, "op": "SCMP_CMP_EQ"}]},
      {"names": ["alarm"], "action": "SCMP_ACT_ALLOW", "args": [
        {"index": 0, "value": 255, "valueTwo": 1, "op": "SCMP_CMP_MASKED_EQ"},
        {"index": 0, "value": 3, "op": "SCMP_CMP_EQ"}]}
    ]})");
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_getppid); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_umask, 5); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_umask, 6); }), ENOSYS);
  // One argument tested twice: either condition allows (as runc does it).
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_alarm, 0x101); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_alarm, 3); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_alarm, 2); }), ENOSYS);
}

// A profile in the shape of Docker's default (abridged).
constexpr const char* kDockerStyle = R"({
  "defaultAction": "SCMP_ACT_ERRNO",
  "defaultErrnoRet": 1,
  "archMap": [
    {"architecture": "SCMP_ARCH_X86_64", "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]},
    {"architecture": "SCMP_ARCH_AARCH64", "subArchitectures": ["SCMP_ARCH_ARM"]},
    {"architecture": "SCMP_ARCH_MIPS64", "subArchitectures": ["SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64N32"]},
    {"architecture": "SCMP_ARCH_S390X", "subArchitectures": ["SCMP_ARCH_S390"]}
  ],
  "syscalls": [
    {"names": ["accept", "accept4", "access", "arch_prctl", "brk", "capget", "chdir", "close", "close_range",
               "dup", "dup2", "dup3", "epoll_create1", "epoll_ctl", "epoll_pwait", "execve", "exit", "exit_group",
               "faccessat", "faccessat2", "fcntl", "fstat", "newfstatat", "statx", "futex", "getcwd", "getdents64",
               "getegid", "geteuid", "getgid", "getpgrp", "getpid", "getppid", "getrandom", "getuid", "ioctl",
               "lseek", "mmap", "mprotect", "munmap", "openat", "pipe", "pipe2", "pread64", "prlimit64", "read",
               "readlink", "rseq", "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "set_robust_list",
               "set_tid_address", "stat", "lstat", "sysinfo", "uname", "vfork", "wait4", "write", "writev",
               "fchmodat2", "futex_wake", "no_such_syscall", "socketcall", "getpgid", "setpgid", "getsid",
               "socket", "connect", "sendto", "recvfrom", "poll", "ppoll", "fork", "prctl", "sched_getaffinity",
               "clock_gettime", "clock_nanosleep", "nanosleep", "getrusage", "fadvise64", "readlinkat",
               "statfs", "fstatfs", "unlink", "unlinkat", "kill", "tgkill", "sigaltstack", "umask", "getgroups"],
     "action": "SCMP_ACT_ALLOW"},
    {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": 0, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]},
    {"names": ["personality"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": 4294967295, "valueTwo": 0, "op": "SCMP_CMP_EQ"}]},
    {"names": ["arm_fadvise64_64", "arm_sync_file_range"], "action": "SCMP_ACT_ALLOW",
     "includes": {"arches": ["arm", "arm64"]}},
    {"names": ["modify_ldt"], "action": "SCMP_ACT_ALLOW", "includes": {"arches": ["amd64", "x32", "x86"]}},
    {"names": ["bpf", "mount", "umount2", "unshare", "setns"], "action": "SCMP_ACT_ALLOW",
     "includes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["clone"], "action": "SCMP_ACT_ALLOW",
     "args": [{"index": 0, "value": 2114060288, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}],
     "excludes": {"caps": ["CAP_SYS_ADMIN"], "arches": ["s390", "s390x"]}},
    {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": 38, "excludes": {"caps": ["CAP_SYS_ADMIN"]}},
    {"names": ["ptrace"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "4.8"}},
    {"names": ["getcpu"], "action": "SCMP_ACT_ALLOW", "includes": {"minKernel": "99.0"}},
    {"names": ["syslog"], "action": "SCMP_ACT_ALLOW", "includes": {"caps": ["CAP_SYSLOG"]}},
    {"names": ["open"], "action": "SCMP_ACT_ALLOW", "excludes": {"arches": ["amd64"]}},
    {"names": ["creat"], "action": "SCMP_ACT_ERRNO", "comment": "same as the default: skipped"}
  ]
})";

TEST(SeccompOci, DockerStyleProfileCompilesAndRuns) {
  Program p = compile_oci(kDockerStyle);
  ASSERT_EQ(p.size() % sizeof(sock_filter), 0U);
  EXPECT_EQ(run_under(p, [] { return exec({"/bin/sh", "-c", "echo ok >/dev/null; ls / >/dev/null"}); }), 0);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_unshare, CLONE_NEWNS); }), EPERM);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0); }), EPERM);
  EXPECT_EQ(run_under(p,
                      [] {
                        clone_args args{};
                        args.exit_signal = SIGCHLD;
                        return errno_of(SYS_clone3, &args, sizeof args);
                      }),
            ENOSYS);
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_getcpu, nullptr, nullptr, nullptr); }), EPERM);  // minKernel 99
  EXPECT_EQ(run_under(p, [] { return errno_of(SYS_ptrace, -1, 0, 0, 0); }), ESRCH);                // minKernel 4.8
}

void expect_error(const std::string& json, const std::string& fragment) {
  try {
    compile_oci(json);
    ADD_FAILURE() << "no ProfileError for " << json;
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what() << " (wanted: " << fragment << ")";
  }
}

TEST(SeccompOci, BadInputIsProfileError) {
  expect_error("", "invalid JSON");
  expect_error("{", "invalid JSON");
  expect_error("[]", "expected an object");
  expect_error("{}", "defaultAction");
  expect_error(R"({"defaultAction": 1})", "defaultAction");
  expect_error(R"({"defaultAction": "SCMP_ACT_BOGUS"})", "unknown action");
  expect_error(R"({"defaultAction": "SCMP_ACT_NOTIFY"})", "SCMP_ACT_NOTIFY");
  expect_error(R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": -1})", "defaultErrnoRet");
  expect_error(R"({"defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 70000})", "defaultErrnoRet");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": {}})", "syscalls");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"]}]})",
               "syscalls[0]: missing \"action\"");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": "read", "action": "SCMP_ACT_KILL"}]})",
               "syscalls[0].names");
  expect_error(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read", 3], "action": "SCMP_ACT_KILL"}]})",
      "syscalls[0].names[1]");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_NOTIFY"}]})",
               "SCMP_ACT_NOTIFY");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_KILL",
               "args": [{"index": 6, "value": 1, "op": "SCMP_CMP_EQ"}]}]})",
               "syscalls[0].args[0].index");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_KILL",
               "args": [{"index": 0, "value": 1, "op": "SCMP_CMP_SORTA"}]}]})",
               "unknown operator");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_KILL",
               "args": [{"index": 0, "value": "1", "op": "SCMP_CMP_EQ"}]}]})",
               "syscalls[0].args[0].value");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["x86_64"]})", "architectures[0]");
  expect_error(R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_KILL",
               "includes": {"minKernel": "four"}}]})",
               "minKernel");
  expect_error(std::string(100, '[') + std::string(100, ']'), "nested deeper");
  expect_error(std::string(5 << 20, ' '), "larger than");
}

TEST(SeccompOci, HugeProfilesAreRefusedBeforeLibseccompWorksOnThem) {
  // libseccomp before 2.6.1 counts instructions in 16 bits: a profile like
  // this one corrupted its heap or exported a slice of the filter.
  std::string json = R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [)";
  for (int i = 0; i < 3200; ++i) {
    json += std::string(i ? "," : "") + R"({"names": ["read"], "action": "SCMP_ACT_ERRNO", "args": [)";
    for (int j = 0; j < 6; ++j) {
      json += std::string(j ? "," : "") + R"({"index": )" + std::to_string(j) + R"(, "value": )" + std::to_string(i) +
              R"(, "op": "SCMP_CMP_EQ"})";
    }
    json += "]}";
  }
  json += "]}";
  try {
    compile_oci(json);
    FAIL() << "a huge profile compiled";
  } catch (const ProfileError& e) {
    EXPECT_NE(std::string(e.what()).find("too large"), std::string::npos) << e.what();
  }
}

TEST(SeccompOci, ArbitraryBytesNeverCrash) {
  // A cheap fuzz: truncations and byte flips of a valid profile either
  // compile or throw ProfileError.
  const std::string base = kDockerStyle;
  unsigned seed = 12345;
  for (int i = 0; i < 400; ++i) {
    std::string s = base.substr(0, base.size() * static_cast<std::size_t>(i % 40) / 40 + static_cast<std::size_t>(i));
    for (int k = 0; k < 3; ++k) {
      seed = seed * 1103515245U + 12345U;
      if (!s.empty()) s[(seed >> 8) % s.size()] = static_cast<char>(seed >> 24);
    }
    try {
      compile_oci(s);
    } catch (const ProfileError&) {
    }
  }
}

}  // namespace
}  // namespace mayura::seccomp
