#include "idmap_probe.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "mayura/base/unique_fd.hpp"

namespace mayura::rootfs {
namespace {

// A user namespace that is not the initial one (the kernel refuses that as
// a mapping), held by a child that only waits to be killed: a process with
// threads cannot unshare one itself. (No pipe to wait on: a child cloned by
// another thread at the same moment would hold its write end.)
UniqueFd fresh_user_namespace(int& error) {
  int pidfd = -1;
  clone_args args{};
  args.flags = CLONE_NEWUSER | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<std::uint64_t>(&pidfd);
  args.exit_signal = 0;  // no SIGCHLD for a host's own handler to see
  const long pid = ::syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    for (;;) ::pause();
  }
  if (pid < 0) {
    error = errno;
    return {};
  }
  const UniqueFd child(pidfd);
  const std::string proc = "/proc/" + std::to_string(pid);
  UniqueFd userns(::open((proc + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
  if (!userns) error = errno;
  // The kernel idmaps only with a namespace that maps something: one id,
  // nobody's, is enough to ask.
  for (const char* map : {"/uid_map", "/gid_map"}) {
    const UniqueFd file(::open((proc + map).c_str(), O_WRONLY | O_CLOEXEC));
    const char line[] = "0 65534 1\n";
    if (userns && (!file || ::write(file.get(), line, sizeof line - 1) != static_cast<ssize_t>(sizeof line - 1))) {
      error = errno;
      userns.reset();
    }
  }
  ::syscall(SYS_pidfd_send_signal, child.get(), SIGKILL, nullptr, 0);
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.get()), &info, WEXITED | __WALL) != 0 &&
         errno == EINTR) {
  }
  return userns;
}

}  // namespace

int idmap_error(const std::string& dir) {
  int error = 0;
  const UniqueFd userns = fresh_user_namespace(error);
  if (!userns) return error ? error : EINVAL;
  const UniqueFd tree(::open_tree(AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW));
  if (!tree) return errno;
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<__u64>(userns.get());
  // A detached clone: nothing is mounted anywhere, and it goes with its fd.
  return ::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) == 0 ? 0 : errno;
}

}  // namespace mayura::rootfs
