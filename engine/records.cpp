#include "records.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <random>

#include "cgroups.hpp"
#include "sys_error.hpp"

namespace mayura::records {
namespace {

std::string slots_dir(const std::string& state_dir) { return state_dir + "/slots"; }

void make_dirs(const std::string& state_dir) {
  for (const std::string& dir : {state_dir, slots_dir(state_dir)}) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) fail_step("making the state directory " + dir, errno, Reason::UNSUPPORTED);
  }
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  ::lseek(fd, 0, SEEK_SET);
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// The slot is ours (locked): remove what its record names, then empty it.
// False if what it names could not be removed: the record stays, and the
// slot is not used until a later try removes it.
bool clean_locked(int fd, const cgroups::Places& places) {
  std::string cgroup = read_all(fd);
  while (!cgroup.empty() && (cgroup.back() == '\n' || cgroup.back() == '\0')) cgroup.pop_back();
  // Only ever a sandbox cgroup of an engine: a cgroup2 directory under this
  // engine's root or another's. The record is trusted no further than that.
  if (!cgroups::remove_orphan(places, cgroup)) return false;
  if (::ftruncate(fd, 0) != 0) {
    // an unreadable record is cleaned again next time
  }
  return true;
}

// Opens and locks the record at `path` without waiting; an fd only if the
// lock is held on the file that is at the path now.
UniqueFd lock_record(const std::string& path, bool create) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600));
    if (!fd) {
      if (errno == ENOENT && !create) return UniqueFd();
      if (errno == ENOENT) {
        // Another engine that went away removed the unused directories just now.
        const std::string slots = path.substr(0, path.rfind('/'));
        make_dirs(slots.substr(0, slots.rfind('/')));
        continue;
      }
      fail_step("opening a slot record", errno);
    }
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return UniqueFd();
    struct stat held {}, now {};
    if (::fstat(fd.get(), &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
        held.st_dev == now.st_dev && held.st_nlink > 0) {
      return fd;
    }
    if (!create) return UniqueFd();  // removed while we opened it: it was live or cleaned
  }
  return UniqueFd();
}

}  // namespace

SlotLease SlotLease::acquire(const std::string& state_dir, const cgroups::Places& places, std::uint32_t slots) {
  make_dirs(state_dir);
  thread_local std::mt19937 rng{std::random_device{}()};
  const std::uint32_t start = std::uniform_int_distribution<std::uint32_t>(0, slots - 1)(rng);
  for (std::uint32_t i = 0; i < slots; ++i) {
    const std::uint32_t slot = (start + i) % slots;
    const std::string path = slots_dir(state_dir) + "/" + std::to_string(slot);
    UniqueFd fd = lock_record(path, true);
    if (!fd) continue;
    if (!clean_locked(fd.get(), places)) continue;  // the flock goes with the fd
    SlotLease lease;
    lease.fd_ = std::move(fd);
    lease.path_ = path;
    lease.slot_ = slot;
    return lease;
  }
  throw SandboxError(Reason::LIMIT_REACHED, "every sandbox id range of this host is in use");
}

void SlotLease::record(const std::string& cgroup_path) {
  if (::ftruncate(fd_.get(), 0) != 0 || ::pwrite(fd_.get(), cgroup_path.data(), cgroup_path.size(), 0) !=
                                            static_cast<ssize_t>(cgroup_path.size())) {
    fail_step("writing the slot record", errno);
  }
}

void SlotLease::clear() noexcept {
  if (!fd_) return;
  // Removed while locked, so the directory holds only live and dead
  // engines' records; a racing opener sees the unlink and tries again.
  if (::unlink(path_.c_str()) != 0 && ::ftruncate(fd_.get(), 0) != 0) {
    // the next engine cleans it; the cgroup it names is gone already
  }
  fd_.reset();  // closing drops the flock
}

void remove_state_if_unused(const std::string& state_dir) noexcept {
  // No slot left means no sandbox of any engine on this state directory, so
  // none holds the network lock either.
  if (::rmdir(slots_dir(state_dir).c_str()) != 0) return;
  ::unlink((state_dir + "/" + kNetworkLock).c_str());
  ::rmdir(state_dir.c_str());
}

int clean_orphans(const std::string& state_dir, const cgroups::Places& places) {
  make_dirs(state_dir);
  int removed = 0;
  DIR* dir = ::opendir(slots_dir(state_dir).c_str());
  if (!dir) return 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string path = slots_dir(state_dir) + "/" + e->d_name;
    UniqueFd fd = lock_record(path, false);
    if (!fd) continue;
    struct stat st {};
    if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
      if (!clean_locked(fd.get(), places)) continue;  // kept for the next try
      ++removed;
    }
    ::unlink(path.c_str());
  }
  ::closedir(dir);
  return removed;
}

}  // namespace mayura::records
