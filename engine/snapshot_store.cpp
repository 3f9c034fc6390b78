#include "snapshot_store.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <utility>
#include <vector>

#include "mayura/errors.hpp"
#include "mayura/random_id.hpp"
#include "sys_error.hpp"
#include "tenant_dirs.hpp"

namespace mayura::native {
namespace {

constexpr char kTemporaryPrefix[] = ".tmp-";
constexpr char kSnapshotSuffix[] = ".ext4";
// A fork's snapshot lives only while the fork runs: one older than this was
// left by an engine that died in the middle of one.
constexpr std::chrono::minutes kForkSnapshotAge{10};

void make_snapshot_dir(const std::string& dir) { make_engine_dir(dir, "the snapshot directory"); }

void sync_dir(const std::string& dir) {
  const UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd || ::fsync(fd.get()) != 0) fail_step("syncing the snapshot directory " + dir, errno);
}

Snapshot describe(const std::string& name, const struct stat& st) {
  Snapshot s;
  s.name = name;
  s.disk_mib = static_cast<std::int64_t>(st.st_size >> 20);
  s.stored_bytes = static_cast<std::int64_t>(st.st_blocks) * 512;
  s.created_ms = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  return s;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Copies [offset, end) of `from` into `to` at the same place, in pieces,
// asking `stopped` before each.
void copy_range(int from, int to, off_t offset, off_t end, const std::function<bool()>& stopped) {
  constexpr off_t kPiece = off_t{64} << 20;
  while (offset < end) {
    if (stopped && stopped()) throw SandboxError(Reason::GONE, "the sandbox ended while its disk was copied");
    off_t in = offset;
    off_t out = offset;
    const ssize_t n =
        ::copy_file_range(from, &in, to, &out, static_cast<std::size_t>(std::min(end - offset, kPiece)), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_step("copying the sandbox's disk", errno, errno == ENOSPC ? Reason::LIMIT_REACHED : Reason::INTERNAL);
    }
    if (n == 0) fail_step("copying the sandbox's disk (it ended early)", EIO);
    offset += n;
  }
}

}  // namespace

bool clone_disk_file(int from, int to) { return ::ioctl(to, FICLONE, from) == 0; }

void copy_disk_file(int from, int to, std::uint64_t size, const std::function<bool()>& stopped) {
  if (clone_disk_file(from, to)) return;
  // The ranges first: a page read ahead of a range counts as data once it
  // is cached (an unwritten extent with pages is data to SEEK_DATA), and
  // reading one range would make the next look bigger.
  ::posix_fadvise(from, 0, 0, POSIX_FADV_RANDOM);
  const auto end = static_cast<off_t>(size);
  std::vector<std::pair<off_t, off_t>> ranges;
  for (off_t offset = 0; offset < end;) {
    const off_t data = ::lseek(from, offset, SEEK_DATA);
    if (data < 0) {
      if (errno == ENXIO) break;  // nothing but a hole from here
      fail_step("finding the data of the sandbox's disk", errno);
    }
    const off_t hole = ::lseek(from, data, SEEK_HOLE);
    if (hole < 0) fail_step("finding the holes of the sandbox's disk", errno);
    ranges.emplace_back(data, std::min(hole, end));
    offset = hole;
  }
  for (const auto& [data, hole] : ranges) copy_range(from, to, data, hole, stopped);
  if (::ftruncate(to, end) != 0) fail_step("sizing the copy of the sandbox's disk", errno);
  // Neither file is read through the host's cache again soon (a loop device
  // reads its file directly): the pages the copy cached are let go.
  ::posix_fadvise(from, 0, 0, POSIX_FADV_DONTNEED);
}

std::string SnapshotStore::owner_dir(const std::string& owner) const { return tenant_dir(dir_, owner); }

std::string SnapshotStore::path(const std::string& owner, const std::string& name) const {
  check_stored_name(name, "snapshot");
  return owner_dir(owner) + "/" + name + kSnapshotSuffix;
}

UniqueFd SnapshotStore::open(const std::string& owner, const std::string& name) const {
  UniqueFd fd(::open(path(owner, name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) {
    if (errno == ENOENT) throw SandboxError(Reason::NOT_FOUND, "there is no snapshot named " + name);
    fail_step("opening the snapshot " + name, errno);
  }
  return fd;
}

std::vector<Snapshot> SnapshotStore::list(const std::string& owner) const {
  std::vector<Snapshot> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(owner_dir(owner), ec)) {
    const std::string file = e.path().filename().string();
    // Neither a snapshot being written nor a fork's own.
    if (file.front() == '.' || file.front() == '~' || !ends_with(file, kSnapshotSuffix)) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;  // removed meanwhile
    out.push_back(describe(file.substr(0, file.size() - (sizeof kSnapshotSuffix - 1)), st));
  }
  std::sort(out.begin(), out.end(), [](const Snapshot& a, const Snapshot& b) { return a.name < b.name; });
  return out;
}

void SnapshotStore::remove(const std::string& owner, const std::string& name) const {
  if (::unlink(path(owner, name).c_str()) != 0) {
    if (errno == ENOENT) throw SandboxError(Reason::NOT_FOUND, "there is no snapshot named " + name);
    fail_step("removing the snapshot " + name, errno);
  }
}

Snapshot SnapshotStore::write(const std::string& owner, const std::string& name,
                              const std::function<void(int file)>& fill) const {
  const std::string final_path = path(owner, name);
  const std::string dir = owner_dir(owner);
  make_snapshot_dir(dir_);
  make_snapshot_dir(dir);
  const std::string temporary = dir + "/" + kTemporaryPrefix + random_hex(16) + kSnapshotSuffix;
  UniqueFd file(::open(temporary.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600));
  if (!file)
    fail_step("making the snapshot " + name, errno, errno == ENOSPC ? Reason::LIMIT_REACHED : Reason::INTERNAL);
  // Held until the file is renamed or removed: an engine that finds it
  // unlocked knows its writer died.
  if (::flock(file.get(), LOCK_EX) != 0) {
    ::unlink(temporary.c_str());
    fail_step("locking the snapshot being written", errno);
  }
  // A fork's own lives only while its sandboxes are made, and is no
  // snapshot after a crash: it need not reach the disk.
  const bool durable = name.front() != '~';
  try {
    fill(file.get());
    if (durable) {
      if (::fsync(file.get()) != 0) fail_step("syncing the snapshot " + name, errno);
      ::posix_fadvise(file.get(), 0, 0, POSIX_FADV_DONTNEED);  // written out: its pages are not needed
    }
    if (::rename(temporary.c_str(), final_path.c_str()) != 0) fail_step("naming the snapshot " + name, errno);
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  if (durable) sync_dir(dir);
  struct stat st {};
  check_sys(::fstat(file.get(), &st), "reading the snapshot " + name);
  return describe(name, st);
}

void SnapshotStore::remove_orphans() const noexcept {
  try {
    const auto old = std::filesystem::file_time_type::clock::now() - kForkSnapshotAge;
    std::error_code ec;
    for (const auto& owner : std::filesystem::directory_iterator(dir_, ec)) {
      std::error_code inner;
      for (const auto& e : std::filesystem::directory_iterator(owner.path(), inner)) {
        const std::string file = e.path().filename().string();
        if (file.rfind(kTemporaryPrefix, 0) == 0) {
          const UniqueFd fd(::open(e.path().c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
          if (fd && ::flock(fd.get(), LOCK_EX | LOCK_NB) == 0) ::unlink(e.path().c_str());
        } else if (file.front() == '~') {
          std::error_code time_ec;
          const auto made = std::filesystem::last_write_time(e.path(), time_ec);
          if (!time_ec && made < old) ::unlink(e.path().c_str());
        }
      }
    }
  } catch (...) {
    // What cannot be looked at stays, for the next engine to try.
  }
}

}  // namespace mayura::native
