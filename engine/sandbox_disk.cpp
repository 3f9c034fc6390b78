#include "sandbox_disk.hpp"

#include <fcntl.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>

#include "disk_format.hpp"
#include "sys_error.hpp"
#include "trace.hpp"

namespace mayura::native {
namespace {

// A free loop device bound to `file` (a device another engine takes between
// the ask and the bind is asked for again). It lets go of the file by itself
// once nothing holds it open any more (autoclear): the file system's last
// mount.
UniqueFd attach_loop(int file) {
  const UniqueFd control(::open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) fail_step("opening /dev/loop-control for the sandbox's disk", errno, Reason::UNSUPPORTED);
  for (int attempt = 0; attempt < 32; ++attempt) {
    const int number = ::ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (number < 0) fail_step("finding a free loop device for the sandbox's disk", errno, Reason::LIMIT_REACHED);
    UniqueFd loop(::open(("/dev/loop" + std::to_string(number)).c_str(), O_RDWR | O_CLOEXEC));
    if (!loop) fail_step("opening /dev/loop" + std::to_string(number) + " for the sandbox's disk", errno);
    loop_config config{};
    config.fd = static_cast<__u32>(file);
    config.block_size = 4096;
    // Direct I/O: the file's pages are not cached twice (once for the loop
    // device, once for the file); a host file system without it gets none.
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return loop;
    if (errno == EINVAL) {
      config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
      if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return loop;
    }
    if (errno != EBUSY) fail_step("binding a loop device to the sandbox's disk", errno);
  }
  fail_step("binding a loop device to the sandbox's disk (every free one was taken meanwhile)", EBUSY,
            Reason::LIMIT_REACHED);
}

// The ext4 on `device`, mounted and detached: no path reaches it until the
// init attaches it in the sandbox.
UniqueFd mount_ext4(const std::string& device) {
  const UniqueFd fs(::fsopen("ext4", FSOPEN_CLOEXEC));
  if (!fs) fail_step("opening an ext4 context for the sandbox's disk", errno, Reason::UNSUPPORTED);
  check_sys(::fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", device.c_str(), 0), "naming the sandbox's disk");
  check_sys(::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0), "mounting the sandbox's disk");
  UniqueFd mount(::fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  if (!mount) fail_step("mounting the sandbox's disk", errno);
  return mount;
}

// The files loop devices are bound to now.
std::set<std::string> bound_files() {
  std::set<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block", ec)) {
    if (e.path().filename().string().rfind("loop", 0) != 0) continue;
    std::ifstream in(e.path() / "loop" / "backing_file");
    std::string file;
    if (std::getline(in, file)) files.insert(file);
  }
  return files;
}

}  // namespace

void remove_orphan_disks(const std::string& dir, std::chrono::seconds grace) noexcept {
  try {
    const std::set<std::string> bound = bound_files();
    const auto before = std::filesystem::file_time_type::clock::now() - grace;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string path = e.path().string();
      if (e.path().extension() != ".ext4" || bound.contains(path)) continue;
      std::error_code time_ec;
      const auto made = std::filesystem::last_write_time(e.path(), time_ec);
      if (!time_ec && made < before) ::unlink(path.c_str());
    }
  } catch (...) {
    // What cannot be looked at stays, for the next engine to try.
  }
}

SandboxDisk::SandboxDisk(const std::string& dir, const std::string& name, std::uint64_t mib, std::uint32_t uid,
                         std::uint32_t gid)
    : path_(dir + "/" + name + ".ext4") {
  StepTimer timer("disk");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) fail_step("making the disk directory " + dir, errno);
  try {
    disk::format_ext4(path_, {.bytes = mib << 20, .root_uid = uid, .root_gid = gid, .root_mode = 0755});
    timer.step("formatted");
    const UniqueFd file(::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!file) fail_step("opening the sandbox's disk", errno);
    const UniqueFd loop = attach_loop(file.get());
    loop_info64 info{};
    check_sys(::ioctl(loop.get(), LOOP_GET_STATUS64, &info), "reading the sandbox's loop device");
    timer.step("loop device bound");
    mount_ = mount_ext4("/dev/loop" + std::to_string(info.lo_number));
    timer.step("mounted");
  } catch (...) {
    remove();
    throw;
  }
}

SandboxDisk& SandboxDisk::operator=(SandboxDisk&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
    mount_ = std::move(other.mount_);
  }
  return *this;
}

void SandboxDisk::remove() noexcept {
  mount_.reset();
  // Unlinked now, freed by the host once the loop device lets go of it.
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

}  // namespace mayura::native
