#include "records.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <cstdlib>
#include <string_view>
#include <vector>
#include <utility>

#include "cgroups.hpp"
#include "kept_sandbox.hpp"
#include "mayura/random_id.hpp"
#include "sys_error.hpp"

namespace mayura::records {
namespace {

std::string slots_dir(const std::string& state_dir) { return state_dir + "/slots"; }
std::string engines_dir(const std::string& state_dir) { return state_dir + "/engines"; }

void make_dirs(const std::string& state_dir) {
  for (const std::string& dir : {state_dir, slots_dir(state_dir), engines_dir(state_dir)}) {
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
      fail_step("making the state directory " + dir, errno, Reason::UNSUPPORTED);
  }
}

std::string random_id() { return random_hex(16); }

bool is_id(const std::string& id) {
  return id.size() == 16 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  ::lseek(fd, 0, SEEK_SET);
  while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// A record's file, written whole before it gets its name, so no reader ever
// sees it half written. Where the file system has O_TMPFILE it is in no
// directory yet; where it has not (9p, NFS, FUSE), it has a dot name, which
// readers skip, until it is named, and the name goes with this object.
class NewFile {
 public:
  NewFile(const std::string& state_dir, const std::string& dir, const std::string& content);
  NewFile(const NewFile&) = delete;
  NewFile& operator=(const NewFile&) = delete;
  ~NewFile() {
    if (!temp_.empty()) ::unlink(temp_.c_str());
  }
  int get() const { return fd_.get(); }
  UniqueFd take() { return std::move(fd_); }

 private:
  UniqueFd fd_;
  std::string temp_;
};

constexpr const char* kTempPrefix = ".new-";
// A dot file older than this was left by an engine that died while writing.
constexpr int kStaleTempSeconds = 60;

NewFile::NewFile(const std::string& state_dir, const std::string& dir, const std::string& content) {
  fd_.reset(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!fd_ && errno == ENOENT) {
    make_dirs(state_dir);  // another engine that went away removed the unused directories just now
    fd_.reset(::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  }
  // EISDIR is how a kernel or file system that predates O_TMPFILE refuses it.
  if (!fd_ && (errno == EOPNOTSUPP || errno == EISDIR)) {
    for (int attempt = 0; attempt < 8 && !fd_; ++attempt) {
      temp_ = dir + "/" + kTempPrefix + random_id();
      fd_.reset(::open(temp_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600));
      if (!fd_ && errno != EEXIST) break;
    }
    if (!fd_) temp_.clear();
  }
  if (!fd_) fail_step("making a record in " + dir, errno, Reason::UNSUPPORTED);
  if (::pwrite(fd_.get(), content.data(), content.size(), 0) != static_cast<ssize_t>(content.size())) {
    fail_step("writing a record in " + dir, errno);
  }
}

// Gives the new file its name; false (errno EEXIST) if the name is taken.
bool name_file(int fd, const std::string& path) {
  if (::linkat(fd, "", AT_FDCWD, path.c_str(), AT_EMPTY_PATH) == 0) return true;
  if (errno != ENOENT) return false;
  // AT_EMPTY_PATH wants CAP_DAC_READ_SEARCH; the /proc link does not.
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  return ::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, path.c_str(), AT_SYMLINK_FOLLOW) == 0;
}

// A new file's dot name that an engine which died while writing left.
void remove_if_stale_temp(const std::string& dir, const char* name) {
  if (std::string_view(name).rfind(kTempPrefix, 0) != 0) return;
  const std::string path = dir + "/" + name;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::time(nullptr) - st.st_mtime > kStaleTempSeconds)
    ::unlink(path.c_str());
}

// The classic lock-file check: the locked file is still the one at the path.
bool still_at(int fd, const std::string& path) {
  struct stat held {
  }, now{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
         held.st_dev == now.st_dev;
}

// Whether the engine `id` has ended: its file is gone, or we can lock it.
// A dead engine's file is removed (under its lock).
bool engine_dead(const std::string& state_dir, const std::string& id) {
  if (!is_id(id)) return true;  // not an engine's record: nothing keeps it
  const std::string path = engines_dir(state_dir) + "/" + id;
  const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return errno == ENOENT;
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return false;  // alive (or another engine is asking)
  if (still_at(fd.get(), path)) ::unlink(path.c_str());
  return true;
}

// A slot's record, read: the engine that holds it, the sandbox's cgroup and
// what it kept for a later engine (each empty if the record has none). A
// record of this layout's first version is the cgroup path alone.
struct Record {
  std::string engine;
  std::string cgroup;
  std::string kept;
};

Record parse_record(const std::string& text) {
  Record r;
  std::size_t at = 0;
  std::vector<std::string> lines;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  for (std::string& line : lines) {
    while (!line.empty() && line.back() == '\0') line.pop_back();
  }
  if (lines.empty()) return r;
  if (lines[0].rfind("engine ", 0) != 0) {
    r.cgroup = lines[0];
    return r;
  }
  r.engine = lines[0].substr(7);
  if (lines.size() > 1) r.cgroup = lines[1];
  if (lines.size() > 2 && lines[2].rfind("kept ", 0) == 0) r.kept = lines[2].substr(5);
  return r;
}

std::string record_text(const std::string& engine, const std::string& cgroup, const std::string& kept) {
  std::string text = "engine " + engine + "\n" + cgroup + "\n";
  if (!kept.empty()) text += "kept " + kept + "\n";
  return text;
}

// Puts a record with `content` at `path` in place of the one there, in one
// rename.
void replace_record(const std::string& state_dir, const std::string& path, const std::string& content) {
  const std::string dir = slots_dir(state_dir);
  const NewFile file(state_dir, dir, content);
  const std::string temp = dir + "/" + kTempPrefix + random_id();
  if (!name_file(file.get(), temp)) fail_step("writing the sandbox's record", errno);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    fail_step("writing the sandbox's record", error);
  }
}

enum class Cleaned { kept, was_free, removed };

// The record at `path`, if what made it has ended: removes what it names,
// then the record.
Cleaned clean_if_dead(const std::string& state_dir, const cgroups::Places& places, const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return errno == ENOENT ? Cleaned::was_free : Cleaned::kept;
  // Cleaners exclude each other with the record's own lock.
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) return Cleaned::kept;
  if (!still_at(fd.get(), path)) return Cleaned::kept;  // given back and taken again meanwhile: try another
  // A record of the first version (no engine line) was flocked by its
  // engine while the sandbox lived: unlocked, its engine is gone.
  const Record record = parse_record(read_all(fd.get()));
  if (!record.engine.empty() && !engine_dead(state_dir, record.engine)) return Cleaned::kept;
  // A sandbox that outlives its engine is a later engine's to take back
  // (or release): removed here only once nothing of it runs (its init
  // ended it at its deadline).
  if (!record.kept.empty() && !record.cgroup.empty() && cgroups::has_processes(record.cgroup)) {
    // Unless its lifetime is over (a paused one's init, stopped too, cannot
    // end it): then nobody may keep it.
    const auto kept = native::decode_kept(record.kept);
    if (!kept || kept->deadline_ms > native::boot_ms()) return Cleaned::kept;
  }
  // Only ever a sandbox cgroup of an engine: a cgroup2 directory under this
  // engine's root or another's. The record is trusted no further than that.
  if (!record.cgroup.empty() && !cgroups::remove_orphan(places, record.cgroup))
    return Cleaned::kept;  // for a later try
  ::unlink(path.c_str());
  return record.cgroup.empty() ? Cleaned::was_free : Cleaned::removed;
}

// The sockets in inits/ that no record names (each is named as its
// sandbox's cgroup): an engine died between making one and writing the
// record that keeps its sandbox, which has been removed since. A create
// under way names its cgroup in its record before it makes its socket.
void remove_stray_init_sockets(const std::string& state_dir) {
  const std::string inits = state_dir + "/inits";
  DIR* dir = ::opendir(inits.c_str());
  if (!dir) return;
  std::vector<std::string> sockets;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') sockets.emplace_back(e->d_name);
  }
  ::closedir(dir);
  if (sockets.empty()) return;
  std::vector<std::string> named;
  if (DIR* slots = ::opendir(slots_dir(state_dir).c_str())) {
    while (const dirent* e = ::readdir(slots)) {
      if (e->d_name[0] == '.') continue;
      const UniqueFd fd(::open((slots_dir(state_dir) + "/" + e->d_name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      if (!fd && errno == ENOENT) continue;  // given back meanwhile
      if (!fd) {
        // Unread, it could be any socket's: none is removed this time.
        ::closedir(slots);
        return;
      }
      const std::string cgroup = parse_record(read_all(fd.get())).cgroup;
      named.push_back(cgroup.substr(cgroup.rfind('/') + 1));
    }
    ::closedir(slots);
  }
  for (const std::string& name : sockets) {
    if (std::find(named.begin(), named.end(), name) == named.end()) ::unlink((inits + "/" + name).c_str());
  }
}

}  // namespace

EngineLock::EngineLock(const std::string& state_dir, std::uint32_t slots) : state_dir_(state_dir), held_(slots) {
  make_dirs(state_dir);
  // Locked before it is named: no other engine ever sees it unlocked while
  // this one lives.
  for (int attempt = 0; attempt < 8 && !fd_; ++attempt) {
    NewFile file(state_dir, engines_dir(state_dir), "");
    if (::flock(file.get(), LOCK_EX | LOCK_NB) != 0) fail_step("locking the engine's record", errno);
    const std::string id = random_id();
    const std::string path = engines_dir(state_dir) + "/" + id;
    if (name_file(file.get(), path)) {
      fd_ = file.take();
      path_ = path;
      id_ = id;
    } else if (errno != EEXIST) {
      fail_step("recording the engine in " + engines_dir(state_dir), errno);
    }
  }
  if (!fd_) throw SandboxError(Reason::INTERNAL, "no free engine id in " + engines_dir(state_dir));
}

void EngineLock::release() noexcept {
  if (!fd_) return;
  ::unlink(path_.c_str());
  fd_.reset();
}

SlotLease EngineLock::claim(const cgroups::Places& places, const std::string& cgroup_path) {
  const auto slots = static_cast<std::uint32_t>(held_.size());
  const NewFile record(state_dir_, slots_dir(state_dir_), record_text(id_, cgroup_path, ""));
  const auto start = static_cast<std::uint32_t>(random_below(slots));
  for (std::uint32_t i = 0; i < slots; ++i) {
    const std::uint32_t slot = (start + i) % slots;
    {
      std::lock_guard lock(mutex_);
      if (held_[slot]) continue;
    }
    const std::string path = slots_dir(state_dir_) + "/" + std::to_string(slot);
    bool named = name_file(record.get(), path);
    if (!named && errno != EEXIST) fail_step("recording the sandbox's slot", errno);
    if (!named) named = clean_if_dead(state_dir_, places, path) != Cleaned::kept && name_file(record.get(), path);
    if (!named) continue;
    {
      std::lock_guard lock(mutex_);
      held_[slot] = true;
    }
    SlotLease lease;
    lease.engine_ = this;
    lease.path_ = path;
    lease.cgroup_ = cgroup_path;
    lease.slot_ = slot;
    return lease;
  }
  throw SandboxError(Reason::LIMIT_REACHED,
                     "every sandbox id range of this host is in use (id_slots " + std::to_string(slots) + ")");
}

void EngineLock::take_back(const std::function<void(const Left&, SlotLease)>& take) {
  // The names first: records are replaced as they are taken.
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(slots_dir(state_dir_).c_str())) {
    while (const dirent* e = ::readdir(dir)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    ::closedir(dir);
  }
  for (const std::string& name : names) {
    const unsigned long slot = std::strtoul(name.c_str(), nullptr, 10);
    if (name.find_first_not_of("0123456789") != std::string::npos || slot >= held_.size()) continue;
    const std::string path = slots_dir(state_dir_) + "/" + name;
    const UniqueFd fd(::open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd || ::flock(fd.get(), LOCK_EX | LOCK_NB) != 0 || !still_at(fd.get(), path)) continue;
    const Record record = parse_record(read_all(fd.get()));
    if (record.kept.empty() || record.engine.empty() || record.engine == id_ || !engine_dead(state_dir_, record.engine))
      continue;
    // Ours from here: the record names this engine, which lives. One that
    // cannot be written now (a full disk) stays the dead engine's, for the
    // next start: the rest are taken back all the same.
    try {
      replace_record(state_dir_, path, record_text(id_, record.cgroup, record.kept));
    } catch (const SandboxError&) {
      continue;
    }
    {
      std::lock_guard lock(mutex_);
      held_[slot] = true;
    }
    SlotLease lease;
    lease.engine_ = this;
    lease.path_ = path;
    lease.cgroup_ = record.cgroup;
    lease.slot_ = static_cast<std::uint32_t>(slot);
    take(Left{static_cast<std::uint32_t>(slot), record.cgroup, record.kept}, std::move(lease));
  }
}

void SlotLease::keep(const std::string& kept) {
  if (!engine_) throw SandboxError(Reason::GONE, "the sandbox has ended");
  if (kept.find('\n') != std::string::npos) throw SandboxError(Reason::INTERNAL, "a kept record is one line");
  replace_record(engine_->state_dir_, path_, record_text(engine_->id_, cgroup_, kept));
}

void EngineLock::give_back(std::uint32_t slot) noexcept {
  std::lock_guard lock(mutex_);
  if (slot < held_.size()) held_[slot] = false;
}

SlotLease& SlotLease::operator=(SlotLease&& other) noexcept {
  if (this != &other) {
    clear();
    engine_ = std::exchange(other.engine_, nullptr);
    path_ = std::move(other.path_);
    cgroup_ = std::move(other.cgroup_);
    slot_ = other.slot_;
  }
  return *this;
}

void SlotLease::clear() noexcept {
  if (!engine_) return;
  // Ours while the engine lives: no other engine removes it.
  ::unlink(path_.c_str());
  engine_->give_back(slot_);
  engine_ = nullptr;
}

void remove_state_if_unused(const std::string& state_dir) noexcept {
  // No slot and no engine left means no sandbox of any engine on this state
  // directory, so none holds the network lock either.
  // Gone already is as good: another engine that ended removed it.
  if (::rmdir(slots_dir(state_dir).c_str()) != 0 && errno != ENOENT) return;
  if (::rmdir(engines_dir(state_dir).c_str()) != 0 && errno != ENOENT) return;
  ::rmdir((state_dir + "/inits").c_str());  // the sockets of inits that outlive their engine
  ::unlink((state_dir + "/" + kNetworkLock).c_str());
  ::rmdir(state_dir.c_str());
}

int clean_orphans(const std::string& state_dir, const cgroups::Places& places) {
  make_dirs(state_dir);
  int removed = 0;
  DIR* dir = ::opendir(slots_dir(state_dir).c_str());
  if (!dir) return 0;
  while (const dirent* e = ::readdir(dir)) {
    remove_if_stale_temp(slots_dir(state_dir), e->d_name);
    if (e->d_name[0] == '.') continue;
    if (clean_if_dead(state_dir, places, slots_dir(state_dir) + "/" + e->d_name) == Cleaned::removed) ++removed;
  }
  ::closedir(dir);
  remove_stray_init_sockets(state_dir);
  // Engines that died with no sandbox: their files.
  if (DIR* engines = ::opendir(engines_dir(state_dir).c_str())) {
    while (const dirent* e = ::readdir(engines)) {
      remove_if_stale_temp(engines_dir(state_dir), e->d_name);
      if (e->d_name[0] != '.') engine_dead(state_dir, e->d_name);
    }
    ::closedir(engines);
  }
  return removed;
}

}  // namespace mayura::records
