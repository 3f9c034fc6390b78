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

std::vector<UniqueFd> idmapped_layers(int proc, const rootfs::Plan& plan) {
  std::vector<UniqueFd> layers;
  for (const auto& op : plan) {
    if (op.kind != rootfs::OpKind::image_layers) continue;
    const UniqueFd userns(::openat(proc, "ns/user", O_RDONLY | O_CLOEXEC));
    if (!userns) fail_step("opening the sandbox's user namespace", errno);
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
      mount_attr attr{};
      attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
      attr.userns_fd = static_cast<__u64>(userns.get());
      attr.propagation = MS_PRIVATE;
      if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
        fail_step(
            "mounting the image's layer with the sandbox's ids (the store's file system must support idmapped mounts)",
            errno, errno == EINVAL ? Reason::UNSUPPORTED : Reason::INTERNAL);
      }
      layers.push_back(std::move(tree));
    }
  }
  return layers;
}

}  // namespace mayura
