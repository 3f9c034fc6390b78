#include "image_layers.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "sys_error.hpp"

namespace mayura {
namespace {

// `tree` (a detached mount) shows the sandbox's ids: its user namespace's.
void idmap(int tree, int userns, std::uint64_t attrs, const std::string& step) {
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | attrs;
  attr.userns_fd = static_cast<__u64>(userns);
  attr.propagation = MS_PRIVATE;
  if (::mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    fail_step(step, errno, errno == EINVAL ? Reason::UNSUPPORTED : Reason::INTERNAL);
  }
}

UniqueFd user_namespace_of(int proc) {
  UniqueFd userns(::openat(proc, "ns/user", O_RDONLY | O_CLOEXEC));
  if (!userns) fail_step("opening the sandbox's user namespace", errno);
  return userns;
}

}  // namespace

void idmap_disk(int proc, int mount) {
  idmap(mount, user_namespace_of(proc).get(), MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        "mounting the sandbox's disk with its ids (the kernel must support idmapped ext4 mounts)");
}

std::vector<UniqueFd> idmapped_layers(int proc, const rootfs::Plan& plan) {
  std::vector<UniqueFd> layers;
  for (const auto& op : plan) {
    if (op.kind != rootfs::OpKind::image_layers) continue;
    const UniqueFd userns = user_namespace_of(proc);
    std::size_t start = 0;
    while (start < op.data.size()) {
      const auto end = op.data.find('\n', start);
      const std::string dir = op.data.substr(start, end - start);
      start = end == std::string::npos ? op.data.size() : end + 1;
      if (dir.empty()) continue;
      UniqueFd tree(::open_tree(AT_FDCWD, dir.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW));
      if (!tree)
        fail_step("opening the image's layer " + dir, errno,
                  errno == ENOENT ? Reason::INVALID_CONFIG : Reason::INTERNAL);
      idmap(tree.get(), userns.get(), MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            "mounting the image's layer with the sandbox's ids (the store's file system must support idmapped mounts)");
      layers.push_back(std::move(tree));
    }
  }
  return layers;
}

}  // namespace mayura
