#include "cgroup_host.hpp"

#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace mayura::cgroups {
namespace {

constexpr const char* kCgroupRoot = "/sys/fs/cgroup";
constexpr const char* kUnified = "/sys/fs/cgroup/unified";

struct Mount {
  std::string root;  // of the hierarchy, as this process sees it
  std::string mount_point;
  std::string fstype;
  std::string super_options;
};

// mountinfo: id parent major:minor root mount-point options [optional...] - fstype source super-options
std::vector<Mount> parse_mountinfo(const std::string& text) {
  std::vector<Mount> mounts;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    Mount m;
    std::istringstream head(line.substr(0, dash));
    std::string id, parent, devno;
    head >> id >> parent >> devno >> m.root >> m.mount_point;
    std::istringstream tail(line.substr(dash + 3));
    std::string source;
    tail >> m.fstype >> source >> m.super_options;
    mounts.push_back(std::move(m));
  }
  return mounts;
}

bool has_option(const std::string& options, const std::string& name) {
  std::istringstream items(options);
  std::string item;
  while (std::getline(items, item, ',')) {
    if (item == name) return true;
  }
  return false;
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (w == word) return true;
  }
  return false;
}

// The first v1 hierarchy that carries `controller`, mounted at its root.
std::string v1_mount(const std::vector<Mount>& mounts, const std::string& controller) {
  for (const auto& m : mounts) {
    if (m.fstype == "cgroup" && m.root == "/" && has_option(m.super_options, controller)) return m.mount_point;
  }
  return {};
}

}  // namespace

std::string_view layout_name(Layout layout) {
  switch (layout) {
    case Layout::unified: return "unified";
    case Layout::hybrid: return "hybrid";
    case Layout::legacy: return "legacy";
  }
  return "unknown";
}

Host detect(const Probe& probe) {
  Host host;
  const auto mounts = parse_mountinfo(probe.mountinfo);
  if (probe.fs_type(kCgroupRoot) == CGROUP2_SUPER_MAGIC) {
    host.layout = Layout::unified;
    host.v2 = kCgroupRoot;
  } else {
    host.layout = Layout::legacy;
    if (probe.fs_type(kUnified) == CGROUP2_SUPER_MAGIC) host.v2 = kUnified;
    for (const auto& m : mounts) {
      if (host.v2.empty() && m.fstype == "cgroup2" && m.root == "/") host.v2 = m.mount_point;
    }
    // The hierarchy an engine mounted for itself makes no hybrid host.
    if (!host.v2.empty() && host.v2 != kEngineCgroup2) host.layout = Layout::hybrid;
  }

  // A controller is on cgroup2 if the root offers it there, else on the v1
  // hierarchy that carries it (one controller is never on both).
  const std::string offered = host.v2.empty() ? std::string() : probe.read(host.v2 + "/cgroup.controllers");
  auto place = [&](Controller& c, const std::string& name) {
    if (has_word(offered, name)) c.v2 = true;
    else if (host.layout != Layout::unified) c.v1 = v1_mount(mounts, name);
  };
  place(host.memory, "memory");
  place(host.cpu, "cpu");
  place(host.pids, "pids");
  host.io.v2 = has_word(offered, "io");
  for (const auto& m : mounts) {
    if ((m.fstype == "cgroup" || m.fstype == "cgroup2") && has_option(m.super_options, "favordynmods"))
      host.favor_dynmods = true;
  }
  // memory.swap.max comes with the memory controller on cgroup2
  if (host.memory.v2) host.swap_limit = true;
  else if (!host.memory.v1.empty()) host.swap_limit = probe.exists(host.memory.v1 + "/memory.memsw.limit_in_bytes");
  return host;
}

Host detect_host() {
  Probe probe;
  {
    std::ifstream in("/proc/self/mountinfo");
    std::stringstream ss;
    ss << in.rdbuf();
    probe.mountinfo = ss.str();
  }
  probe.fs_type = [](const std::string& path) -> std::int64_t {
    struct statfs fs {};
    return ::statfs(path.c_str(), &fs) == 0 ? static_cast<std::int64_t>(fs.f_type) : 0;
  };
  probe.exists = [](const std::string& path) { return ::access(path.c_str(), F_OK) == 0; };
  probe.read = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  return detect(probe);
}

std::string Host::describe() const {
  std::string line = "cgroups: ";
  line += layout_name(layout);
  switch (layout) {
    case Layout::unified: line += " (cgroup2 at " + v2 + ")"; break;
    case Layout::hybrid:
      line += " (cgroup2 at " + v2 + " tracks and kills; limits on cgroup v1 where cgroup2 lacks them)";
      break;
    case Layout::legacy: line += " (cgroup v1 only; the engine mounts a cgroup2 of its own to track and kill)"; break;
  }
  auto where = [](const Controller& c) -> std::string {
    if (c.v2) return "cgroup2";
    return "v1 " + c.v1;
  };
  std::string enforced, missing;
  auto add = [&](const Controller& c, const std::string& what) {
    if (c.available()) enforced += (enforced.empty() ? "" : ", ") + what + " [" + where(c) + "]";
    else missing += (missing.empty() ? "" : ", ") + what;
  };
  add(cpu, "cpus");
  add(memory, swap_limit ? "memory (no swap)" : "memory");
  add(pids, "pids");
  add(io, "disk I/O");
  line += "; enforces " + (enforced.empty() ? std::string("no limit") : enforced);
  if (!missing.empty()) line += "; cannot enforce " + missing;
  if (moves_on_create() && !favor_dynmods) {
    line +=
        "\ncgroup moves: each create moves its init by a write to cgroup.procs, which after a quiet spell waits "
        "for an RCU grace period (about 10 ms) while no cgroup hierarchy is mounted with favordynmods (see the "
        "host tuning in docs/operations.md)";
    if (moves_on_exec()) {
      line +=
          "; so does each command, which joins the commands' pids group on cgroup v1 (ahead of the command, while "
          "the sandbox is quiet, unless commands ahead are off)";
    }
  }
  return line;
}

}  // namespace mayura::cgroups
