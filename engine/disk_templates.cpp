#include "disk_templates.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "disk_format.hpp"
#include "mayura/random_id.hpp"
#include "sys_error.hpp"
#include "tenant_dirs.hpp"

namespace mayura::native {

DiskTemplates::DiskTemplates(std::string dir) : dir_(std::move(dir)), id_(random_hex(16)) {}

DiskTemplates::~DiskTemplates() {
  for (const auto& [key, made] : made_) ::unlink(made.first.c_str());
}

UniqueFd DiskTemplates::open(std::uint64_t bytes, std::uint32_t uid, std::uint32_t gid) {
  std::lock_guard lock(mutex_);
  const auto key = std::make_tuple(bytes, uid, gid);
  auto it = made_.find(key);
  if (it == made_.end()) {
    make_engine_dir(dir_, "the disk directory");
    const std::string path = dir_ + "/." + id_ + "-" + std::to_string(bytes) + "-" + std::to_string(uid) + "-" +
                             std::to_string(gid) + kTemplateSuffix;
    disk::format_ext4(
        path,
        {.bytes = bytes, .directories = {{kDiskWorkspace, uid, gid, 0755}, {kDiskTmp, 0, 0, 01777}}, .reserve = false});
    UniqueFd held(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!held || ::flock(held.get(), LOCK_SH) != 0) {
      const int error = errno;
      ::unlink(path.c_str());
      fail_step("holding the disk template " + path, error);
    }
    it = made_.emplace(key, std::make_pair(path, std::move(held))).first;
  }
  UniqueFd copy(::open(it->second.first.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!copy) fail_step("opening the disk template " + it->second.first, errno);
  return copy;
}

}  // namespace mayura::native
