#include "cgroups.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <linux/magic.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <sstream>
#include <thread>
#include <vector>

#include "cgroup_files.hpp"
#include "sys_error.hpp"

namespace mayura::cgroups {
namespace {

bool write_file(const std::string& path, const char* text) noexcept {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const auto len = std::char_traits<char>::length(text);
  const bool ok = ::write(fd, text, len) == static_cast<ssize_t>(len);
  ::close(fd);
  return ok;
}

bool populated(const std::string& path) {
  const std::string events = read_path(path + "/cgroup.events");
  if (events.empty()) return false;  // gone already
  return events.find("populated 1") != std::string::npos;
}

std::vector<std::string> children(const std::string& path) {
  std::vector<std::string> out;
  DIR* dir = ::opendir(path.c_str());
  if (!dir) return out;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_type == DT_DIR && e->d_name[0] != '.') out.push_back(path + "/" + e->d_name);
  }
  ::closedir(dir);
  return out;
}

// Without cgroup.kill (kernels before 5.14): freeze, kill every listed
// process, thaw, until none is left.
void kill_by_listing(const std::string& path) {
  for (const auto& child : children(path)) kill_by_listing(child);
  write_file(path + "/cgroup.freeze", "1");
  std::istringstream procs(read_path(path + "/cgroup.procs"));
  pid_t pid;
  while (procs >> pid) ::kill(pid, SIGKILL);
  write_file(path + "/cgroup.freeze", "0");
}

// Kills every process in the tree at `path` and waits, up to `bound`, until
// none is left. True if it is empty.
bool kill_tree(const std::string& path, std::chrono::milliseconds bound) noexcept {
  try {
    const bool has_kill = write_file(path + "/cgroup.kill", "1");
    if (!has_kill) kill_by_listing(path);
    using namespace std::chrono;
    const auto give_up = steady_clock::now() + bound;
    auto pause = microseconds(50);
    while (populated(path)) {
      if (steady_clock::now() >= give_up) return false;
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, microseconds(5000));
      if (!has_kill) kill_by_listing(path);  // what was forked meanwhile
    }
    return true;
  } catch (...) {
    return false;
  }
}

bool remove_tree(const std::string& path) {
  for (const auto& child : children(path)) remove_tree(child);
  return ::rmdir(path.c_str()) == 0 || errno == ENOENT;
}

// A legacy host has no cgroup2: mount one (with no controllers, all of them
// being on v1) to track and kill processes with.
std::string mount_own_cgroup2() {
  std::string path = kEngineCgroup2;
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) fail_step("making " + path, errno, Reason::UNSUPPORTED);
  // Engines starting at once mount it once: the check and the mount under a
  // lock (the lock file stays, like the mount).
  const UniqueFd lock(::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock) fail_step("locking " + path, errno, Reason::UNSUPPORTED);
  while (::flock(lock.get(), LOCK_EX) != 0) {
    if (errno != EINTR) fail_step("locking " + path, errno, Reason::UNSUPPORTED);
  }
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) return path;
  if (::mount("cgroup2", path.c_str(), "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) {
    fail_step("mounting a cgroup2 hierarchy on this cgroup v1 host", errno, Reason::UNSUPPORTED);
  }
  return path;
}

}  // namespace

bool remove_orphan(const Places& places, const std::string& path) noexcept {
  if (!looks_like_sandbox_cgroup(path, places.root)) return true;  // not ours to remove: nothing to retry
  if (!kill_and_remove(path)) return false;
  // Its v1 groups are named like its cgroup2 one, under the root of the
  // engine that made it (which may have had another root than this one).
  const std::string parent = path.substr(0, path.rfind('/'));
  remove_v1(places.host, parent.substr(parent.rfind('/') + 1), path.substr(path.rfind('/') + 1));
  return true;
}

Placement prepare_root(const std::string& configured, Host& host) {
  if (host.v2.empty()) host.v2 = mount_own_cgroup2();
  Placement placement = plan_placement_here(host.v2, configured);
  const std::string& root = placement.root;
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) {
    fail_step("making the engine's cgroup " + root, errno, Reason::UNSUPPORTED);
  }
  if (::access((root + "/cgroup.procs").c_str(), W_OK) != 0) {
    fail_step("using the engine's cgroup " + root, errno, Reason::UNSUPPORTED);
  }
  return placement;
}

std::string default_root_for(const Host& host, const std::string& name) {
  return plan_placement_here(host.v2_or_engines(), "").base + "/" + name;
}

void bound_roots(const Places& places) {
  bound_v2_root(places.host, places.root, places.totals);
  bound_v1_roots(places.host, places.root_name(), places.totals);
}

void remove_root_if_unused(const Places& places) noexcept {
  if (places.root.empty()) return;
  ::rmdir(places.root.c_str());
  remove_v1_roots_if_unused(places.host, places.root_name());
}

SandboxCgroup::SandboxCgroup(const Places& places, const std::string& name, uid_t owner, gid_t group)
    : host_(places.host), path_(places.root + "/" + name), owner_(owner), group_(group) {
  int made = ::mkdir(path_.c_str(), 0755);
  if (made != 0 && errno == ENOENT) {
    // Another engine that went away may have removed the unused root just
    // now: made again, with the totals.
    if (::mkdir(places.root.c_str(), 0755) == 0) bound_v2_root(places.host, places.root, places.totals);
    made = ::mkdir(path_.c_str(), 0755);
  }
  if (made != 0) {
    const int e = errno;
    path_.clear();
    fail_step("making the sandbox's cgroup", e);
  }
  try {
    dir_.reset(::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!dir_ || ::fchownat(dir_.get(), "cgroup.procs", owner, group, 0) != 0) {
      fail_step("delegating the sandbox's cgroup", errno);
    }
    // The init's leaf, where it moves once its cgroup namespace is rooted
    // here: needed only where the pids controller is handed down to the
    // commands (see enable_v2_command_limits).
    if (host_.pids.v2) make_delegated(dir_.get(), "init", "making the init's cgroup");
    make_delegated(dir_.get(), "commands", "making the commands' cgroup");
    v1_ = V1Groups(host_, places.root_name(), name, places.totals);
  } catch (...) {
    destroy();
    throw;
  }
}

SandboxCgroup SandboxCgroup::existing(const Places& places, const std::string& name, uid_t owner, gid_t group,
                                      std::uint64_t& next_command) {
  SandboxCgroup cgroup;
  cgroup.host_ = places.host;
  cgroup.path_ = places.root + "/" + name;
  cgroup.owner_ = owner;
  cgroup.group_ = group;
  cgroup.commands_limited_ = true;
  cgroup.v1_ = V1Groups::existing(places.host, places.root_name(), name);
  const UniqueFd commands = cgroup.open_dir("/commands");
  next_command = 1;
  DIR* dir = ::fdopendir(::dup(commands.get()));
  if (!dir) fail_step("reading the sandbox's commands' cgroups", errno);
  while (const dirent* e = ::readdir(dir)) {
    const std::string_view entry = e->d_name;
    if (e->d_type != DT_DIR || !entry.starts_with("cmd-")) continue;
    const std::uint64_t n = std::strtoull(e->d_name + 4, nullptr, 10);
    // An empty one goes (rmdir refuses one with a process: EBUSY).
    if (::unlinkat(commands.get(), e->d_name, AT_REMOVEDIR) != 0) next_command = std::max(next_command, n + 1);
  }
  ::closedir(dir);
  return cgroup;
}

UniqueFd SandboxCgroup::make_delegated(int parent, const std::string& name, const char* step) const {
  if (::mkdirat(parent, name.c_str(), 0755) != 0) {
    // the sandbox ended under us: its cgroup is gone
    if (errno == ENOENT) throw SandboxError(Reason::GONE, "the sandbox has ended");
    fail_step(step, errno);
  }
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd || ::fchownat(fd.get(), "cgroup.procs", owner_, group_, 0) != 0) {
    const int e = errno;
    ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
    fail_step(step, e);
  }
  return fd;
}

UniqueFd SandboxCgroup::open_dir(const std::string& below) const {
  UniqueFd fd(::open((path_ + below).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) throw SandboxError(Reason::GONE, "the sandbox has ended");
    fail_step("opening the sandbox's cgroup", errno);
  }
  return fd;
}

UniqueFd SandboxCgroup::make_command(const std::string& name) const {
  return make_delegated(open_dir("/commands").get(), name, "making a command's cgroup");
}

UniqueFd SandboxCgroup::take_command(std::string& name) const {
  std::string spare;
  if (spare_) {
    std::lock_guard lock(spare_->mutex);
    spare.swap(spare_->name);
  }
  // Taken under its own name: cgroup2 has no rename (EPERM), and a cgroup
  // made afresh costs an rmdir, a mkdir and a chown on every exec.
  if (!spare.empty()) {
    UniqueFd fd(::open((path_ + "/commands/" + spare).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd) {
      name = std::move(spare);
      return fd;
    }
    // Not opened but still there (the open-file limit, say): it stays the
    // spare, with the process that may wait in it, for the next command.
    const int error = errno;
    if (error != ENOENT) {
      give_back_command(spare);
      fail_step("opening a command's cgroup", error);
    }
  }
  return make_command(name);
}

void SandboxCgroup::retire_command(const std::string& name, bool reusable,
                                   const std::function<void(int dir)>& on_kept) const noexcept {
  const std::string path = path_ + "/commands/" + name;
  try {
    if (reusable && spare_ && !populated(path)) {
      std::lock_guard lock(spare_->mutex);
      if (spare_->name.empty()) {
        if (on_kept) {
          try {
            on_kept(UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)).get());
          } catch (...) {
            // the next command starts the usual way
          }
        }
        spare_->name = name;
        return;
      }
    }
  } catch (...) {
    // unreadable: removed below, like one that is not empty
  }
  ::rmdir(path.c_str());
}

void SandboxCgroup::give_back_command(const std::string& name) const noexcept {
  if (spare_) {
    std::lock_guard lock(spare_->mutex);
    if (spare_->name.empty()) {
      try {
        spare_->name = name;
        return;
      } catch (...) {
        // no memory for the name: removed below
      }
    }
  }
  kill_and_remove(path_ + "/commands/" + name);
}

void SandboxCgroup::renice_command(const std::string& name, int nice) const noexcept {
  try {
    std::istringstream procs(read_path(path_ + "/commands/" + name + "/cgroup.procs"));
    pid_t pid;
    while (procs >> pid) ::setpriority(PRIO_PROCESS, static_cast<id_t>(pid), nice);  // ESRCH: gone meanwhile
  } catch (...) {
    // unreadable: gone with the sandbox
  }
}

void SandboxCgroup::kill_command(const std::string& name) const noexcept {
  // Returns once every process of it is gone (bounded): a caller told "timed
  // out" may count on nothing of the command running any more.
  kill_tree(path_ + "/commands/" + name, std::chrono::seconds(2));
}

void SandboxCgroup::kill_command_again(const std::string& name) const noexcept {
  kill_tree(path_ + "/commands/" + name, std::chrono::milliseconds(0));
}

int SandboxCgroup::set_cpu_weight(std::uint32_t weight) const noexcept {
  if (host_.cpu.v2) {
    const int error = write_at(AT_FDCWD, (path_ + "/cpu.weight").c_str(), std::to_string(weight));
    if (error) return error;
  }
  return v1_.set_cpu_shares(weight);
}

void SandboxCgroup::apply(const Limits& limits) {
  if (applied_ == limits) return;
  applied_.reset();  // unknown until every write is done
  apply_v2(open_dir("").get(), open_dir("/commands").get(), host_, limits, commands_limited_);
  v1_.apply(limits);
  applied_ = limits;
}

void SandboxCgroup::bound_io(const std::vector<dev_t>& devices, const IoBounds& bounds) const {
  if (devices.empty()) return;
  const UniqueFd dir = open_dir("");
  for (dev_t device : devices) apply_v2_io(dir.get(), device, bounds);
}

void SandboxCgroup::settle() {
  dir_.reset();  // the init is in: from here every use opens what it needs
  if (commands_limited_ || !host_.pids.v2) return;
  // Only the commands' bound is new: memory and cpu were written by apply().
  enable_v2_command_limits(open_dir("").get(), host_);
  apply_v2_command_limit(open_dir("/commands").get(), applied_.value_or(Limits{}));
  commands_limited_ = true;
}

std::uint64_t SandboxCgroup::oom_kills() const {
  if (!host_.memory.v2) return v1_.oom_kills();
  return read_oom_kills(UniqueFd(::open((path_ + "/memory.events").c_str(), O_RDONLY | O_CLOEXEC)).get());
}

void SandboxCgroup::freeze(bool frozen, std::chrono::milliseconds bound) const {
  const UniqueFd dir = open_dir("");
  if (const int error = write_at(dir.get(), "cgroup.freeze", frozen ? "1" : "0")) {
    if (error == ENOENT) throw SandboxError(Reason::GONE, "the sandbox has ended");
    fail_step(frozen ? "freezing the sandbox's cgroup" : "thawing the sandbox's cgroup", error);
  }
  const UniqueFd events(::openat(dir.get(), "cgroup.events", O_RDONLY | O_CLOEXEC));
  if (!events) fail_step("opening the sandbox's cgroup.events", errno);
  // The kernel wakes a poll for POLLPRI on each change of cgroup.events.
  const std::string want = frozen ? "frozen 1" : "frozen 0";
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (read_from(events.get()).find(want) == std::string::npos) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(give_up - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      if (frozen) write_at(dir.get(), "cgroup.freeze", "0");
      throw SandboxError(Reason::INTERNAL, std::string("the sandbox's processes did not all ") +
                                               (frozen ? "stop" : "go on") + " within " +
                                               std::to_string(bound.count()) + " ms");
    }
    pollfd p{events.get(), POLLPRI, 0};
    ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left.count(), 100)));
  }
}

bool SandboxCgroup::kill_all() const noexcept {
  if (path_.empty() || destroyed_) return false;
  const UniqueFd kill(::open((path_ + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC));
  return kill && ::write(kill.get(), "1", 1) == 1;
}

void SandboxCgroup::destroy() noexcept {
  if (path_.empty() || destroyed_) return;
  destroyed_ = true;
  kill_and_remove(path_);
  v1_.destroy();  // empty now: everything in it was in the cgroup2 tree
}

bool is_frozen(const std::string& path) { return read_path(path + "/cgroup.freeze").rfind('1', 0) == 0; }

bool has_processes(const std::string& path) noexcept {
  try {
    return populated(path);
  } catch (...) {
    return true;  // unread: kept, for a later look
  }
}

bool process_in(pid_t pid, const std::string& path) {
  std::string own = own_cgroup(read_path("/proc/" + std::to_string(pid) + "/cgroup"));
  // A sandbox's init is in its `init` leaf where there is one.
  if (own.ends_with("/init")) own.resize(own.size() - 5);
  // `own` is relative to the hierarchy's root; `path` has the mount in front.
  return !own.empty() && path.ends_with(own);
}

bool looks_like_sandbox_cgroup(const std::string& path, const std::string& engine_root) {
  if (path.empty() || path.front() != '/' || path.find("/..") != std::string::npos) return false;
  const std::string name = path.substr(path.rfind('/') + 1);
  if (name.size() != 16 || name.find_first_not_of("0123456789abcdef") != std::string::npos) return false;
  if (path.rfind(engine_root + "/", 0) == 0) return true;
  struct statfs fs {};
  return ::statfs(path.c_str(), &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC;
}

bool kill_and_remove(const std::string& path) noexcept {
  if (::access(path.c_str(), F_OK) != 0) return true;
  kill_tree(path, std::chrono::seconds(10));
  try {
    return remove_tree(path);
  } catch (...) {
    return false;
  }
}

}  // namespace mayura::cgroups
