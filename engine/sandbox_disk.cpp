#include "sandbox_disk.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <utility>

#include "disk_templates.hpp"
#include "snapshot_store.hpp"
#include "sys_error.hpp"
#include "tenant_dirs.hpp"
#include "trace.hpp"

namespace mayura::native {
namespace {

// A free loop device bound to `file` (a device another engine takes between
// the ask and the bind is asked for again). It lets go of the file by itself
// once nothing holds it open any more (autoclear): the file system's last
// mount.
UniqueFd attach_loop(int file, bool read_only) {
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
    const __u32 mode = read_only ? LO_FLAGS_READ_ONLY : 0;
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR | LO_FLAGS_DIRECT_IO | mode;
    if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return loop;
    if (errno == EINVAL) {
      config.info.lo_flags = LO_FLAGS_AUTOCLEAR | mode;
      if (::ioctl(loop.get(), LOOP_CONFIGURE, &config) == 0) return loop;
    }
    if (errno != EBUSY) fail_step("binding a loop device to the sandbox's disk", errno);
  }
  fail_step("binding a loop device to the sandbox's disk (every free one was taken meanwhile)", EBUSY,
            Reason::LIMIT_REACHED);
}

// Small files packed end to end, where ext4 would start each at a boundary
// of its size rounded up to a power of two: a tree of small files then
// leaves no hole between them in the disk's file, whose extents on the host
// stay few (a GiB of 100 KiB files: about 300 rather than 20,000), and a
// clone of the file (a snapshot, a fork) costs a few ms rather than 170.
// Files under 16 MiB share the file system's group preallocation, in 16 MiB
// runs. A tuning only: a kernel without these files gets ext4's defaults.
void pack_small_files(const std::string& device) noexcept {
  const std::string dir = "/sys/fs/ext4/" + device.substr(device.rfind('/') + 1) + "/";
  for (const char* knob : {"mb_stream_req", "mb_group_prealloc"}) {
    const UniqueFd fd(::open((dir + knob).c_str(), O_WRONLY | O_CLOEXEC));
    if (fd) (void)!::write(fd.get(), "4096", 4);  // blocks of 4 KiB
  }
}

// The ext4 on `device`, mounted and detached: no path reaches it until the
// init attaches it in the sandbox.
// `unusable`: the reason when the kernel finds no ext4 there.
UniqueFd mount_ext4(const std::string& device, bool read_only, Reason unusable) {
  const UniqueFd fs(::fsopen("ext4", FSOPEN_CLOEXEC));
  if (!fs) fail_step("opening an ext4 context for the sandbox's disk", errno, Reason::UNSUPPORTED);
  check_sys(::fsconfig(fs.get(), FSCONFIG_SET_STRING, "source", device.c_str(), 0), "naming the sandbox's disk");
  // Read-only all the way down: nothing, not even a journal's replay, writes.
  if (read_only) check_sys(::fsconfig(fs.get(), FSCONFIG_SET_FLAG, "ro", nullptr, 0), "making the disk read-only");
  if (::fsconfig(fs.get(), FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0)
    fail_step("mounting the sandbox's disk", errno, errno == EINVAL || errno == EUCLEAN ? unusable : Reason::INTERNAL);
  UniqueFd mount(
      ::fsmount(fs.get(), FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | (read_only ? MOUNT_ATTR_RDONLY : 0)));
  if (!mount) fail_step("mounting the sandbox's disk", errno);
  return mount;
}

// A snapshot's copy at `path` (a new file), its whole size reserved on the
// host as a new disk's is.
void copy_snapshot(int snapshot, const std::string& path) {
  struct stat st {};
  check_sys(::fstat(snapshot, &st), "reading the snapshot");
  if (!S_ISREG(st.st_mode) || st.st_size < (off_t{16} << 20))
    throw SandboxError(Reason::INVALID_INPUT, "the snapshot is not a sandbox's disk");
  const UniqueFd copy(::open(path.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
  if (!copy) fail_step("making the sandbox's disk " + path, errno);
  copy_disk_file(snapshot, copy.get(), static_cast<std::uint64_t>(st.st_size));
  int error = 0;
  do {
    error = ::posix_fallocate(copy.get(), 0, st.st_size);
  } while (error == EINTR);
  if (error != 0)
    fail_step("reserving the sandbox's disk on the host", error,
              error == ENOSPC || error == EDQUOT ? Reason::LIMIT_REACHED : Reason::INTERNAL);
}

}  // namespace

namespace {

// Each bound loop device's file (by the path it was bound by) and device.
std::map<std::string, std::string> loop_devices() {
  std::map<std::string, std::string> devices;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/sys/block", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("loop", 0) != 0) continue;
    std::ifstream in(e.path() / "loop" / "backing_file");
    std::string file;
    if (std::getline(in, file)) devices[file] = "/dev/" + name;
  }
  return devices;
}

}  // namespace

std::set<std::string> loop_bound_files() {
  std::set<std::string> files;
  for (const auto& [file, device] : loop_devices()) files.insert(file);
  return files;
}

std::string loop_device_of(const std::string& path) {
  const auto devices = loop_devices();
  const auto it = devices.find(path);
  return it == devices.end() ? std::string() : it->second;
}

bool wait_unbound(const std::string& path, std::chrono::milliseconds bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (!loop_bound_files().contains(path)) return true;
    if (std::chrono::steady_clock::now() >= give_up) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

UniqueFd mount_disk_file(int file, bool read_only, Reason unusable, std::string* device) {
  StepTimer timer("disk mount");
  const UniqueFd loop = attach_loop(file, read_only);
  timer.step("loop device bound");
  loop_info64 info{};
  check_sys(::ioctl(loop.get(), LOOP_GET_STATUS64, &info), "reading the disk's loop device");
  const std::string path = "/dev/loop" + std::to_string(info.lo_number);
  if (device) *device = path;
  UniqueFd mount = mount_ext4(path, read_only, unusable);
  // Once per file system: the disk's further mounts (take_mounts) are the
  // same superblock.
  if (!read_only) pack_small_files(path);
  timer.step("mounted");
  return mount;
}

void remove_orphan_disks(const std::string& dir, std::chrono::seconds grace) noexcept {
  try {
    const std::set<std::string> bound = loop_bound_files();
    const auto before = std::filesystem::file_time_type::clock::now() - grace;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string path = e.path().string();
      if (e.path().extension() == kTemplateSuffix) {
        // A live engine holds its templates locked.
        const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
        if (fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) ::unlink(path.c_str());
        continue;
      }
      if (e.path().extension() != ".ext4" || bound.contains(path)) continue;
      std::error_code time_ec;
      const auto made = std::filesystem::last_write_time(e.path(), time_ec);
      if (!time_ec && made < before) ::unlink(path.c_str());
    }
  } catch (...) {
    // What cannot be looked at stays, for the next engine to try.
  }
}

SandboxDisk::SandboxDisk(const std::string& dir, const std::string& name, DiskSource source)
    : path_(dir + "/" + name + ".ext4") {
  StepTimer timer("disk");
  make_engine_dir(dir, "the disk directory");
  try {
    const int from = source.snapshot ? source.snapshot.get() : source.made_like.get();
    if (from < 0) throw SandboxError(Reason::INTERNAL, "a disk needs a snapshot or a template to be made from");
    copy_snapshot(from, path_);
    timer.step("copied");
    const UniqueFd file(::open(path_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!file) fail_step("opening the sandbox's disk", errno);
    struct stat st {};
    check_sys(::fstat(file.get(), &st), "reading the sandbox's disk");
    bytes_ = static_cast<std::uint64_t>(st.st_size);
    mount_ = mount_disk_file(file.get(), false, source.snapshot ? Reason::INVALID_INPUT : Reason::INTERNAL, &device_);
    top_.reset(::openat(mount_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!top_) fail_step("opening the sandbox's disk", errno);
    check_sys(::fstat(top_.get(), &st), "reading the sandbox's disk");
    device_number_ = st.st_dev;
    timer.step("loop device bound and mounted");
  } catch (...) {
    remove();
    throw;
  }
}

SandboxDisk SandboxDisk::existing(const std::string& path) {
  SandboxDisk disk;
  struct stat st {};
  const std::string device = loop_device_of(path);
  if (device.empty() || ::stat(path.c_str(), &st) != 0)
    throw SandboxError(Reason::GONE, "the sandbox's disk is no longer attached");
  disk.path_ = path;
  disk.bytes_ = static_cast<std::uint64_t>(st.st_size);
  disk.device_ = device;
  try {
    // The same device mounted again is the same file system.
    disk.mount_ = mount_ext4(device, false, Reason::INTERNAL);
    disk.top_.reset(::openat(disk.mount_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!disk.top_) fail_step("opening the sandbox's disk", errno);
    check_sys(::fstat(disk.top_.get(), &st), "reading the sandbox's disk");
    disk.device_number_ = st.st_dev;
    disk.thaw();  // EINVAL unless it was left stopped
  } catch (...) {
    disk.path_.clear();  // the file is the sandbox's still: only its end removes it
    throw;
  }
  return disk;
}

std::vector<UniqueFd> SandboxDisk::take_mounts(bool with_root) {
  // One mount of its top for each directory the plan hands on (the init
  // clones the directory from it): a second mount of the same device is
  // the same file system.
  std::vector<UniqueFd> mounts;
  if (with_root) mounts.push_back(mount_ext4(device_, false, Reason::INTERNAL));
  mounts.push_back(std::move(mount_));
  mounts.push_back(mount_ext4(device_, false, Reason::INTERNAL));
  return mounts;
}

void SandboxDisk::sync() const {
  if (::syncfs(top_.get()) != 0) fail_step("writing the sandbox's disk out", errno);
  // The loop device wrote into the file's pages on the host: a clone of the
  // file (FICLONE) writes them out first, and would while the sandbox is
  // stopped.
  const UniqueFd file(::open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!file || ::fdatasync(file.get()) != 0) fail_step("writing the sandbox's disk's file out", errno);
}

void SandboxDisk::freeze() const {
  if (::ioctl(top_.get(), FIFREEZE, 0) != 0) fail_step("stopping the writes to the sandbox's disk", errno);
}

void SandboxDisk::thaw() const noexcept { ::ioctl(top_.get(), FITHAW, 0); }

bool SandboxDisk::checkpoint() const {
  // linux/ext4.h has it from 6.x on; the call itself is 5.13's.
  constexpr unsigned long kExt4Checkpoint = _IOW('f', 43, __u32);
  if (::syncfs(top_.get()) != 0) fail_step("writing the sandbox's disk out", errno);
  __u32 flags = 0;
  // Any refusal (an old kernel, no journal) leaves the stopped file system's
  // way, which needs neither.
  return ::ioctl(top_.get(), kExt4Checkpoint, &flags) == 0;
}

SandboxDisk& SandboxDisk::operator=(SandboxDisk&& other) noexcept {
  if (this != &other) {
    remove();
    path_ = std::exchange(other.path_, {});
    bytes_ = std::exchange(other.bytes_, 0);
    device_ = std::exchange(other.device_, {});
    device_number_ = std::exchange(other.device_number_, 0);
    mount_ = std::move(other.mount_);
    top_ = std::move(other.top_);
  }
  return *this;
}

void SandboxDisk::remove() noexcept {
  mount_.reset();
  top_.reset();
  // Unlinked now, freed by the host once the loop device lets go of it.
  if (!path_.empty()) ::unlink(path_.c_str());
  path_.clear();
}

}  // namespace mayura::native
