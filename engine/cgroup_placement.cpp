#include "cgroup_placement.hpp"

#include <sys/stat.h>
#include <sys/xattr.h>

#include <cerrno>
#include <sstream>
#include <vector>

#include "cgroup_files.hpp"

namespace mayura::cgroups {
namespace {

constexpr const char* kRootName = "mayura";
constexpr const char* kEngineLeaf = "engine";

// True if `path` is `ancestor` or below it.
bool within(const std::string& path, const std::string& ancestor) {
  return path == ancestor || path.rfind(ancestor + "/", 0) == 0;
}
bool strictly_below(const std::string& path, const std::string& ancestor) {
  return path.size() > ancestor.size() && within(path, ancestor);
}

// systemd marks a cgroup it delegates with trusted.delegate (services and
// scopes of the system manager) or user.delegate (a user manager's).
bool marked_delegated(const std::string& dir) {
  for (const char* name : {"trusted.delegate", "user.delegate"}) {
    char value[8] = {};
    const ssize_t n = ::getxattr(dir.c_str(), name, value, sizeof value - 1);
    if (n == 1 && value[0] == '1') return true;
  }
  return false;
}

}  // namespace

std::string own_cgroup(const std::string& proc_self_cgroup) {
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    // A cgroup outside this process's cgroup namespace shows as /.. paths:
    // nothing below it can be reasoned about, so take the namespace's root.
    if (path.find("/..") != std::string::npos || path.empty() || path.front() != '/') return "";
    if (path == "/") return "";
    // " (deleted)" follows the path of a cgroup removed under a process.
    const auto deleted = path.find(" (deleted)");
    if (deleted != std::string::npos) path.resize(deleted);
    return path;
  }
  return "";
}

Placement plan_placement(const std::string& mount, const std::string& own, const std::string& configured,
                         const std::function<bool(const std::string&)>& delegated) {
  Placement p;
  const std::string own_dir = mount + own;
  // The nearest delegated cgroup at or above the engine's, below the mount.
  std::string subtree;
  for (std::string dir = own_dir; strictly_below(dir, mount); dir = dir.substr(0, dir.rfind('/'))) {
    if (delegated(dir)) {
      subtree = dir;
      break;
    }
  }
  p.base = subtree.empty() ? mount : subtree;
  p.root = configured.empty() ? p.base + "/" + kRootName : configured;
  if (!subtree.empty() && strictly_below(p.root, subtree)) {
    p.home = subtree;
  } else if (!own.empty() && strictly_below(p.root, own_dir)) {
    p.home = own_dir;
  } else if (const std::string moved_from = own_dir.substr(0, own_dir.rfind('/'));
             own_dir == moved_from + "/" + kEngineLeaf && strictly_below(moved_from, mount) &&
             strictly_below(p.root, moved_from)) {
    // Moved into an engine's leaf already, by an engine started at once from
    // the same cgroup (or by this one, started before): the cgroup it was
    // moved from is still its home, the one it must keep empty.
    p.home = moved_from;
  }

  if (!configured.empty()) {
    p.how = "sandboxes under " + p.root + " (configured)";
  } else if (!subtree.empty()) {
    p.how = "sandboxes under " + p.root + " (the engine's delegated subtree " + subtree + ")";
  } else if (own.empty()) {
    p.how = "sandboxes under " + p.root + " (the engine runs in the root cgroup)";
  } else {
    p.how =
        "sandboxes under " + p.root + " (the top of the hierarchy; the engine's cgroup " + own + " is not delegated)";
  }
  if (!p.home.empty()) p.how += "; the engine's processes in " + p.home + "/" + kEngineLeaf;
  return p;
}

Placement plan_placement_here(const std::string& mount, const std::string& configured) {
  return plan_placement(mount, own_cgroup(read_path("/proc/self/cgroup")), configured, marked_delegated);
}

std::size_t move_into_leaf(const std::string& home) {
  const std::string leaf = home + "/" + kEngineLeaf;
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) return 1;
  const int leaf_fd = ::open(leaf.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (leaf_fd < 0) return 1;
  auto listed = [&home] {
    std::istringstream procs(read_path(home + "/cgroup.procs"));
    std::vector<std::string> pids;
    for (std::string pid; procs >> pid;) pids.push_back(pid);
    return pids;
  };
  // Bounded: a process of `home` may fork while we move; its child is then
  // in `home` too, and the next pass moves it.
  for (int pass = 0; pass < 16; ++pass) {
    const auto pids = listed();
    if (pids.empty()) break;
    for (const auto& pid : pids) write_at(leaf_fd, "cgroup.procs", pid);  // ESRCH: it ended
  }
  ::close(leaf_fd);
  return listed().size();
}

}  // namespace mayura::cgroups
