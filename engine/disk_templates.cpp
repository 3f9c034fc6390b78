#include "disk_templates.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "disk_format.hpp"
#include "mayura/rootfs/plan.hpp"
#include "mayura/random_id.hpp"
#include "sys_error.hpp"
#include "tenant_dirs.hpp"

namespace mayura::native {

DiskTemplates::DiskTemplates(std::string dir) : dir_(std::move(dir)), id_(random_hex(16)) {}

DiskTemplates::~DiskTemplates() {
  for (const auto& [key, made] : made_) ::unlink(made.path.c_str());
}

UniqueFd DiskTemplates::open(std::uint64_t bytes, std::uint32_t uid, std::uint32_t gid) {
  std::lock_guard lock(mutex_);
  const auto key = std::make_tuple(bytes, uid, gid);
  auto it = made_.find(key);
  if (it == made_.end()) {
    // A few sizes serve most creates: past kKept, the least lately used goes
    // (a create of every size must not pile up files and descriptors).
    if (made_.size() >= kKept) {
      auto oldest = made_.begin();
      for (auto m = made_.begin(); m != made_.end(); ++m) {
        if (m->second.used < oldest->second.used) oldest = m;
      }
      ::unlink(oldest->second.path.c_str());
      made_.erase(oldest);
    }
    make_engine_dir(dir_, "the disk directory");
    const std::string path = dir_ + "/." + id_ + "-" + std::to_string(bytes) + "-" + std::to_string(uid) + "-" +
                             std::to_string(gid) + kTemplateSuffix;
    disk::format_ext4(path, {.bytes = bytes,
                             .directories = {{rootfs::kDiskWorkspace, uid, gid, 0755}, {rootfs::kDiskTmp, 0, 0, 01777}},
                             .reserve = false});
    UniqueFd held(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!held || ::flock(held.get(), LOCK_SH) != 0) {
      const int error = errno;
      ::unlink(path.c_str());
      fail_step("holding the disk template " + path, error);
    }
    it = made_.emplace(key, Made{path, std::move(held), 0}).first;
  }
  it->second.used = ++uses_;
  UniqueFd copy(::open(it->second.path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!copy) fail_step("opening the disk template " + it->second.path, errno);
  return copy;
}

}  // namespace mayura::native
