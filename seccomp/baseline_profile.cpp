// The baseline: what no profile may give a sandboxed command, installed
// under every OCI/Docker profile a caller brings (the kernel runs every
// filter a process has and keeps the strictest answer). A profile can narrow
// what a command may do; it can never reopen these, so what the README
// guarantees holds whatever profile is used.

#include <linux/sched.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <string_view>

#include "filter.hpp"

namespace mayura::seccomp {
namespace {

// Refused outright: making namespaces, mounting, reaching kernel state that
// is not namespaced, and what hands a process a way around the rest.
constexpr const char* kRefused[] = {
    "mount",
    "umount",
    "umount2",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
    "open_tree_attr",
    "mount_setattr",
    "unshare",
    "setns",
    "pivot_root",
    "chroot",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "create_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "iopl",
    "ioperm",
    "quotactl",
    "quotactl_fd",
    "lookup_dcookie",
    "uselib",
    "vm86",
    "vm86old",
    "pidfd_getfd",
    "kcmp",
};

// Numbers libseccomp 2.5 may not know (the same on every arch).
int resolve_new(const char* name) {
  if (std::string_view(name) == "open_tree_attr") return 467;
  return -1;
}

}  // namespace

Program compile_baseline() {
  detail::Filter f(SCMP_ACT_ALLOW);
  // Other arches' entry points (i386 int $0x80, x32) are refused whole.
  f.set_attr(SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(EPERM), "the bad-arch action");
  f.set_attr(SCMP_FLTATR_CTL_OPTIMIZE, 2, "the binary-tree optimization");
  for (const char* name : kRefused) {
    const int nr = detail::resolve(name, resolve_new(name));
    if (nr >= 0) detail::add_rule(f, SCMP_ACT_ERRNO(EPERM), nr, {}, name);
  }
  // clone with any namespace flag; clone3 hides its flags in memory, so it
  // answers ENOSYS and libc falls back to clone.
  for (std::uint64_t flag = 1; flag != 0; flag <<= 1) {
    if (!(detail::kNamespaceFlags & flag)) continue;
    detail::add_rule(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), {scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, flag, flag}},
                     "clone");
  }
  if (const int nr = detail::resolve("clone3"); nr >= 0) detail::add_rule(f, SCMP_ACT_ERRNO(ENOSYS), nr, {}, "clone3");
  // ints to the kernel: the low 32 bits decide
  for (std::uint64_t cmd : {std::uint64_t{TIOCSTI}, std::uint64_t{TIOCLINUX}}) {
    detail::add_rule(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(ioctl), {scmp_arg_cmp{1, SCMP_CMP_MASKED_EQ, 0xffffffffU, cmd}},
                     "ioctl");
  }
  detail::add_rule(f, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket),
                   {scmp_arg_cmp{0, SCMP_CMP_MASKED_EQ, 0xffffffffU, detail::kAfVsock}}, "socket");
  return f.export_bpf();
}

}  // namespace mayura::seccomp
