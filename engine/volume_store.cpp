#include "volume_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <set>
#include <thread>

#include "disk_format.hpp"
#include "mayura/errors.hpp"
#include "mayura/rootfs/plan.hpp"
#include "sandbox_disk.hpp"
#include "sys_error.hpp"
#include "tenant_dirs.hpp"

namespace mayura::native {
namespace {

constexpr char kVolumeSuffix[] = ".ext4";

void make_volume_dir(const std::string& dir) { make_engine_dir(dir, "the volume directory"); }

[[noreturn]] void in_use(const std::string& name) {
  throw SandboxError(Reason::INVALID_INPUT, "the volume " + name + " is in use by a sandbox");
}

// The volume's file, opened and locked; NOT_FOUND if there is none (or it
// was deleted while we waited for nothing: its lock was taken by the
// deletion, which unlinked it).
UniqueFd open_locked(const std::string& path, const std::string& name, int mode) {
  UniqueFd fd(::open(path.c_str(), mode | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) throw SandboxError(Reason::NOT_FOUND, "there is no volume named " + name);
    fail_step("opening the volume " + name, errno);
  }
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) in_use(name);
    fail_step("locking the volume " + name, errno);
  }
  struct stat st {};
  check_sys(::fstat(fd.get(), &st), "reading the volume " + name);
  if (st.st_nlink == 0) throw SandboxError(Reason::NOT_FOUND, "there is no volume named " + name);
  return fd;
}

// When the volume was made: its file's birth (a volume's file is written
// whenever its sandbox writes), or its last change where the host's file
// system keeps no birth time.
std::int64_t made_ms(const std::string& path) {
  struct statx st {};
  if (::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BTIME | STATX_MTIME, &st) != 0) return 0;
  const statx_timestamp& t = (st.stx_mask & STATX_BTIME) ? st.stx_btime : st.stx_mtime;
  return static_cast<std::int64_t>(t.tv_sec) * 1000 + t.tv_nsec / 1000000;
}

}  // namespace

std::string VolumeStore::path(const std::string& owner, const std::string& name) const {
  check_stored_name(name, "volume");
  return tenant_dir(dir_, owner) + "/" + name + kVolumeSuffix;
}

Volume VolumeStore::create(const std::string& owner, const std::string& name, std::int64_t size_mib) const {
  const std::string final_path = path(owner, name);
  const std::string dir = tenant_dir(dir_, owner);
  make_volume_dir(dir_);
  make_volume_dir(dir);
  // Made in a file with no name, then linked to its name: whole or not at
  // all (an engine dying halfway leaves nothing), and never over another's
  // (linkat fails EEXIST where rename would replace).
  const UniqueFd file(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!file) fail_step("making the volume " + name, errno);
  disk::format_ext4_into(file.get(), {.bytes = static_cast<std::uint64_t>(size_mib) << 20,
                                      .directories = {{rootfs::kVolumeData, uid_, gid_, 0755}}});
  if (::fsync(file.get()) != 0) fail_step("syncing the volume " + name, errno);
  const std::string self = "/proc/self/fd/" + std::to_string(file.get());
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, final_path.c_str(), AT_SYMLINK_FOLLOW) != 0) {
    if (errno == EEXIST) throw SandboxError(Reason::INVALID_INPUT, "there is a volume named " + name + " already");
    fail_step("naming the volume " + name, errno);
  }
  return {name, size_mib, made_ms(final_path), false};
}

std::vector<Volume> VolumeStore::list(const std::string& owner) const {
  // In use: mounted, so bound to a loop device (not told by its lock, which
  // a look would take a moment from a create or a delete), by a sandbox
  // that is not ending: one released a moment ago is no user any more (a
  // create or a delete waits for its removal).
  const std::set<std::string> bound = loop_bound_files();
  std::vector<Volume> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(tenant_dir(dir_, owner), ec)) {
    const std::string file = e.path().filename().string();
    if (file.front() == '.' || file.size() <= sizeof kVolumeSuffix - 1 ||
        file.compare(file.size() - (sizeof kVolumeSuffix - 1), std::string::npos, kVolumeSuffix) != 0) {
      continue;
    }
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;  // deleted meanwhile
    out.push_back({file.substr(0, file.size() - (sizeof kVolumeSuffix - 1)),
                   static_cast<std::int64_t>(st.st_size >> 20), made_ms(e.path().string()),
                   bound.contains(e.path().string()) && !held_by_an_ending_sandbox(e.path().string())});
  }
  std::sort(out.begin(), out.end(), [](const Volume& a, const Volume& b) { return a.name < b.name; });
  return out;
}

void VolumeStore::remove(const std::string& owner, const std::string& name) {
  const std::string file = path(owner, name);
  // Unlinked under its lock: a sandbox taking it after finds it gone.
  const UniqueFd held = lock_waiting_for_an_ending_sandbox(file, name, O_RDONLY);
  if (::unlink(file.c_str()) != 0) fail_step("removing the volume " + name, errno);
}

void HeldVolume::let_go() noexcept {
  try {
    if (lock) wait_unbound(path, std::chrono::seconds(10));
  } catch (...) {
    // Unlocked all the same: a sandbox ended must not hold its volume.
  }
  lock.reset();
  mount.reset();
}

bool VolumeStore::held_by_an_ending_sandbox(const std::string& file) const {
  std::lock_guard lock(mutex_);
  const auto it = holders_.find(file);
  if (it == holders_.end()) return false;
  const auto ending = it->second.lock();
  return ending && ending->load();
}

UniqueFd VolumeStore::lock_waiting_for_an_ending_sandbox(const std::string& file, const std::string& name, int mode) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    try {
      return open_locked(file, name, mode);
    } catch (const SandboxError& e) {
      if (e.reason() != Reason::INVALID_INPUT || std::chrono::steady_clock::now() >= give_up) throw;
      // Released a moment ago: its removal, off the release's path, is
      // this engine's to finish, and soon. One that finished since the try
      // (it unlocks before it forgets its holder) has let go: try again.
      if (!held_by_an_ending_sandbox(file)) return open_locked(file, name, mode);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

HeldVolume VolumeStore::hold(const std::string& owner, const std::string& name, bool read_only) {
  HeldVolume held;
  held.path = path(owner, name);
  // The lock on an open file of its own: the loop device keeps the file it
  // is given until a moment after it is unbound, and the lock must go as
  // soon as it is (let_go), not with the kernel's last reference.
  held.lock = lock_waiting_for_an_ending_sandbox(held.path, name, O_RDONLY);
  {
    std::lock_guard lock(mutex_);
    std::erase_if(holders_, [](const auto& entry) { return entry.second.expired(); });
    holders_[held.path] = held.ending;
  }
  // Its last sandbox's file system may be a moment from gone.
  if (!wait_unbound(held.path, std::chrono::seconds(5))) in_use(name);
  const UniqueFd file(::open(held.path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC | O_NOFOLLOW));
  if (!file) fail_step("opening the volume " + name, errno);
  // Its top: the plan's handed op names its data directory.
  held.mount = mount_disk_file(file.get(), read_only, Reason::INVALID_INPUT);
  struct stat st {};
  check_sys(::fstat(held.mount.get(), &st), "reading the volume " + name);
  held.device = st.st_dev;
  return held;
}

HeldVolume VolumeStore::take_back(const std::string& path) {
  if (!path.starts_with(dir_ + "/") || path.find("/..") != std::string::npos)
    throw SandboxError(Reason::INVALID_INPUT, "a kept volume is not one of this store's");
  HeldVolume held;
  held.path = path;
  const std::string name = path.substr(path.rfind('/') + 1);
  held.lock = open_locked(path, name, O_RDONLY);
  const std::string device = loop_device_of(path);
  struct stat st {};
  if (device.empty() || ::stat(device.c_str(), &st) != 0)
    throw SandboxError(Reason::GONE, "the volume " + name + " is no longer attached");
  held.device = st.st_rdev;
  std::lock_guard lock(mutex_);
  holders_[held.path] = held.ending;
  return held;
}

}  // namespace mayura::native
