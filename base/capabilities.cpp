#include "mayura/base/capabilities.hpp"

#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace mayura::caps {
namespace {

int last_cap() {
  // CAP_LAST_CAP of the headers may be older than the kernel; probe upward.
  int cap = CAP_LAST_CAP;
  while (cap < 63 && ::prctl(PR_CAPBSET_READ, cap + 1, 0, 0, 0) >= 0) ++cap;
  return cap;
}

int capset_raw(std::uint64_t effective, std::uint64_t permitted, std::uint64_t inheritable) {
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  data[0].effective = static_cast<__u32>(effective);
  data[1].effective = static_cast<__u32>(effective >> 32);
  data[0].permitted = static_cast<__u32>(permitted);
  data[1].permitted = static_cast<__u32>(permitted >> 32);
  data[0].inheritable = static_cast<__u32>(inheritable);
  data[1].inheritable = static_cast<__u32>(inheritable >> 32);
  return static_cast<int>(::syscall(SYS_capset, &header, data));
}

}  // namespace

int drop_bounding_and_inheritable() {
  const int last = last_cap();
  for (int cap = 0; cap <= last; ++cap) {
    if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL) return -1;
  }
  if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL) return -1;
  return 0;
}

int lock_securebits() {
  const unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP_LOCKED |
                             SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  return ::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0);
}

int set_no_new_privs() { return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }

int become_user(uid_t uid, gid_t gid) {
  // Raw calls: glibc's wrappers would try to change every thread's ids.
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) return -1;
  if (::syscall(SYS_setresgid, gid, gid, gid) != 0) return -1;
  if (::syscall(SYS_setresuid, uid, uid, uid) != 0) return -1;
  return capset_raw(0, 0, 0);
}

int act_as_user(uid_t uid, gid_t gid) {
  if (::syscall(SYS_setgroups, 0, nullptr) != 0) return -1;
  ::syscall(SYS_setfsgid, gid);
  ::syscall(SYS_setfsuid, uid);
  // setfs*id report the old id, never an error: ask again to be sure.
  if (static_cast<uid_t>(::syscall(SYS_setfsuid, -1)) != uid ||
      static_cast<gid_t>(::syscall(SYS_setfsgid, -1)) != gid) {
    errno = EPERM;
    return -1;
  }
  return capset_raw(0, 0, 0);
}

int keep_only_init_caps() {
  const std::uint64_t keep = (1ull << CAP_SETUID) | (1ull << CAP_SETGID) | (1ull << CAP_KILL);
  return capset_raw(keep, keep, 0);
}

}  // namespace mayura::caps
