// The seccomp allowlist: every call that reaches for the kernel's privileged
// machinery fails with the exact errno of the default profile, other arches'
// entry points never run, and a caller's own profile applies to its sandbox
// only.

#include <sys/syscall.h>
#include <sys/wait.h>

#include <iostream>

#include "tests/support/ia32_entry.hpp"
#include "attack.hpp"

namespace mayura::testing {
namespace {

using SyscallsTest = AttackTest;

// What the probe's `syscalls` tries that the built-in profile and the
// baseline under every caller's profile both refuse.
constexpr const char* kRefusedByEveryProfile[] = {"mount",           "umount2",         "fsopen",
                                                  "fsmount",         "fspick",          "move_mount",
                                                  "open_tree",       "mount_setattr",   "unshare",
                                                  "setns",           "clone_NEWNS",     "clone_NEWUTS",
                                                  "clone_NEWIPC",    "clone_NEWUSER",   "clone_NEWPID",
                                                  "clone_NEWNET",    "clone_NEWCGROUP", "clone_NEWTIME",
                                                  "pivot_root",      "chroot",          "keyctl",
                                                  "add_key",         "request_key",     "bpf",
                                                  "perf_event_open", "userfaultfd",     "io_uring_setup",
                                                  "kexec_load",      "kexec_file_load", "init_module",
                                                  "finit_module",    "delete_module",   "open_by_handle_at",
                                                  "x32_getpid"};

TEST_F(SyscallsTest, PrivilegedCallsFailEperm) {
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"syscalls"});
  for (const char* call : kRefusedByEveryProfile) EXPECT_EQ(r[call], "EPERM") << call;
  EXPECT_EQ(r["personality_read_implies_exec"], "EPERM");  // the built-in profile's own
  // clone3 hides its flags from seccomp: refused as if absent, so libc falls back to clone
  EXPECT_EQ(r["clone3"], "ENOSYS");
  // what is allowed still works
  EXPECT_EQ(r["clone_plain"], "ok");
  EXPECT_EQ(r["personality_query"], "ok");
}

TEST_F(SyscallsTest, TiocstiIsRefusedEvenWithHighBitsInTheCommand) {
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"tiocsti"});
  ASSERT_EQ(r["ptmx"], "ok");
  ASSERT_EQ(r["pts"], "ok");
  EXPECT_EQ(r["tiocsti"], "EPERM");
  EXPECT_EQ(r["tiocsti_high"], "EPERM");
  EXPECT_EQ(r["tiocsti_master"], "EPERM");
  EXPECT_EQ(r["tioclinux"], "EPERM");
  EXPECT_EQ(r["tiocgwinsz"], "ok");  // other ioctls on the same terminal work
}

#if defined(__x86_64__)
TEST_F(SyscallsTest, I386EntryNeverRuns) {
  // What the host does unfiltered: runs the call (IA32 emulation) or faults.
  const Ia32Entry host = host_ia32_entry();
  std::cout << describe(host) << "\n";
  ASSERT_NE(host, Ia32Entry::other) << describe(host);
  auto s = create();
  install_probe(s);
  EXPECT_EQ(probe(s, {"int80"})["int80"], host == Ia32Entry::runs ? "EPERM" : "SEGV");
}
#endif

TEST_F(SyscallsTest, AnOciProfileAppliesToItsSandboxOnly) {
  CreateOptions o;
  o.seccomp_profile = R"({
    "defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [
      {"names": ["mkdir", "mkdirat", "no_such_syscall_anywhere", "another_unknown_one"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}
    ]})";
  auto denied = create(o);
  auto plain = create();
  auto r = denied.exec({"/bin/sh", "-c", "mkdir /workspace/d"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.stderr.find("Permission denied"), std::string::npos) << r.stderr;
  EXPECT_EQ(sh(denied, "echo still works"), "still works\n");
  sh(plain, "mkdir /workspace/d && test -d /workspace/d");
}

TEST_F(SyscallsTest, AProfileThatAllowsEverythingStillCannotReopenTheBaseline) {
  // The caller's profile goes over a baseline no profile can reopen: the
  // guarantees do not depend on which profile a caller brings.
  CreateOptions o;
  o.seccomp_profile = R"({"defaultAction": "SCMP_ACT_ALLOW"})";
  auto s = create(o);
  install_probe(s);
  auto r = probe(s, {"syscalls"});
  for (const char* call : kRefusedByEveryProfile) EXPECT_EQ(r[call], "EPERM") << call;
  EXPECT_EQ(r["clone3"], "ENOSYS");
  EXPECT_EQ(r["clone_plain"], "ok");
  // what the baseline leaves to the profile, the profile decides
  EXPECT_EQ(r["personality_read_implies_exec"], "ok");
  const ExecResult u = s.exec({"unshare", "-Ur", "id"});
  EXPECT_NE(u.exit_code, 0);
  EXPECT_NE(u.stderr.find("Operation not permitted"), std::string::npos) << u.stderr;
}

TEST_F(SyscallsTest, AProfileThatRefusesWhatStartingACommandNeedsFailsClearly) {
  CreateOptions o;
  o.seccomp_profile = R"({"defaultAction": "SCMP_ACT_ALLOW",
                          "syscalls": [{"names": ["setresuid"], "action": "SCMP_ACT_ERRNO"}]})";
  auto s = create(o);
  EXPECT_EQ(reason_of([&] { s.exec({"true"}); }), Reason::INVALID_CONFIG);
}

TEST_F(SyscallsTest, AnInvalidProfileCreatesNothing) {
  for (const char* bad : {"{", R"({"defaultAction": "SCMP_ACT_NOPE"})", R"([1,2,3])"}) {
    CreateOptions o;
    o.seccomp_profile = bad;
    EXPECT_EQ(reason_of([&] { create(o); }), Reason::INVALID_INPUT) << bad;
    EXPECT_EQ(sandboxes().size(), 0u);
  }
}

}  // namespace
}  // namespace mayura::testing
