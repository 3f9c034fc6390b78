// Limits on cgroup v1 hierarchies (hybrid and legacy hosts): the init is put
// into the sandbox's group on each before it runs anything, and everything
// it starts inherits them; each command joins the pids `commands` group
// itself before it runs.

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "cgroup_files.hpp"
#include "cgroup_limits.hpp"
#include "sys_error.hpp"

namespace mayura::cgroups {
namespace {

// <mount>/<root_name>/<name>, made; its path. `made_root`: whether the root
// had to be made too.
std::string make_group(const std::string& mount, const std::string& root_name, const std::string& name,
                       bool& made_root) {
  const std::string root = mount + "/" + root_name;
  const bool made = ::mkdir(root.c_str(), 0755) == 0;
  if (!made && errno != EEXIST) fail_step("making the engine's cgroup " + root, errno);
  made_root = made_root || made;
  std::string path = root + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0) fail_step("making the sandbox's cgroup on " + mount, errno);
  return path;
}

// A group's directory, opened for one use: an idle sandbox holds no
// descriptor of its groups (ten thousand of them would hold fifty thousand).
UniqueFd open_group(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) fail_step("opening the sandbox's cgroup " + path, errno);
  return fd;
}

// rmdir, retried for a moment: a group stays busy until its last process
// has been reaped.
bool remove_dir(const std::string& path) noexcept {
  if (path.empty()) return true;
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (::rmdir(path.c_str()) == 0 || errno == ENOENT) return true;
    if (errno != EBUSY) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

void bound_v1_roots(const Host& host, const std::string& root_name, const RootTotals& totals) {
  const auto bound = [&](const std::string& mount, const char* file, const std::optional<std::uint64_t>& value) {
    if (mount.empty() || !value) return;
    const std::string root = mount + "/" + root_name;
    if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) fail_step("making the engine's cgroup " + root, errno);
    const int error = write_at(AT_FDCWD, (root + "/" + file).c_str(), std::to_string(*value));
    if (error) fail_step("setting the engine's " + root + "/" + file, error);
  };
  bound(host.memory.v1, "memory.limit_in_bytes", totals.memory_bytes);
  bound(host.pids.v1, "pids.max", totals.pids);
}

V1Groups::V1Groups(const Host& host, const std::string& root_name, const std::string& name, const RootTotals& totals) {
  // A plain try in the body (not a function-try-block, whose handler runs
  // after the members are gone): what was made before a failure is removed.
  try {
    bool made_root = false;
    if (!host.memory.v1.empty()) memory_path_ = make_group(host.memory.v1, root_name, name, made_root);
    if (!host.cpu.v1.empty()) cpu_path_ = make_group(host.cpu.v1, root_name, name, made_root);
    if (!host.pids.v1.empty()) {
      pids_path_ = make_group(host.pids.v1, root_name, name, made_root);
      if (::mkdir((pids_path_ + "/commands").c_str(), 0755) != 0) fail_step("making the commands' pids cgroup", errno);
    }
    if (made_root) bound_v1_roots(host, root_name, totals);
  } catch (...) {
    destroy();
    throw;
  }
}

V1Groups V1Groups::existing(const Host& host, const std::string& root_name, const std::string& name) {
  V1Groups groups;
  const auto found = [&](const std::string& mount) {
    const std::string path = mount + "/" + root_name + "/" + name;
    return !mount.empty() && ::access(path.c_str(), F_OK) == 0 ? path : std::string();
  };
  groups.memory_path_ = found(host.memory.v1);
  groups.cpu_path_ = found(host.cpu.v1);
  groups.pids_path_ = found(host.pids.v1);
  return groups;
}

void V1Groups::place(pid_t pid) const {
  const std::string text = std::to_string(pid);
  for (const std::string* group : {&memory_path_, &cpu_path_, &pids_path_}) {
    if (!group->empty()) set_file(open_group(*group).get(), "cgroup.procs", text);
  }
}

void V1Groups::apply(const Limits& limits) const {
  if (!memory_path_.empty()) {
    const UniqueFd memory = open_group(memory_path_);
    const bool swap = ::faccessat(memory.get(), "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
    const std::string bytes = limits.memory_bytes ? std::to_string(*limits.memory_bytes) : "-1";
    // memsw (memory + swap) may never be below the memory limit: lift it,
    // set the limit, then hold memsw at the same value so no swap is used.
    if (swap) set_file(memory.get(), "memory.memsw.limit_in_bytes", "-1");
    set_file(memory.get(), "memory.limit_in_bytes", bytes);
    if (swap) set_file(memory.get(), "memory.memsw.limit_in_bytes", bytes);
    write_at(memory.get(), "memory.swappiness", "0");  // refused on some kernels; memsw is the bound
  }
  if (!cpu_path_.empty()) {
    const UniqueFd cpu = open_group(cpu_path_);
    set_file(cpu.get(), "cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
    set_file(cpu.get(), "cpu.cfs_quota_us", limits.cpus ? std::to_string(cpu_quota_us(*limits.cpus)) : "-1");
  }
  if (!pids_path_.empty()) {
    set_file(open_group(pids_path_ + "/commands").get(), "pids.max",
             limits.pids ? std::to_string(*limits.pids) : "max");
  }
}

int V1Groups::set_cpu_shares(std::uint32_t shares) const noexcept {
  if (cpu_path_.empty()) return 0;
  return write_at(AT_FDCWD, (cpu_path_ + "/cpu.shares").c_str(), std::to_string(std::max<std::uint32_t>(shares, 2)));
}

UniqueFd V1Groups::commands_procs() const {
  if (pids_path_.empty()) return UniqueFd();
  // Opened by the engine: the kernel checks a v1 move against the opener, so
  // a command (no capability, in its user namespace) can join with it.
  UniqueFd procs(::open((pids_path_ + "/commands/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
  if (!procs) fail_step("opening the commands' pids cgroup", errno);
  return procs;
}

std::uint64_t V1Groups::oom_kills() const {
  if (memory_path_.empty()) return 0;
  return read_oom_kills(UniqueFd(::open((memory_path_ + "/memory.oom_control").c_str(), O_RDONLY | O_CLOEXEC)).get());
}

void V1Groups::destroy() noexcept {
  if (destroyed_) return;
  destroyed_ = true;
  if (!pids_path_.empty()) remove_dir(pids_path_ + "/commands");
  for (const std::string* path : {&memory_path_, &cpu_path_, &pids_path_}) remove_dir(*path);
}

void remove_v1(const Host& host, const std::string& root_name, const std::string& name) noexcept {
  try {
    if (!host.pids.v1.empty()) remove_dir(host.pids.v1 + "/" + root_name + "/" + name + "/commands");
    for (const Controller* c : {&host.memory, &host.cpu, &host.pids}) {
      if (!c->v1.empty()) remove_dir(c->v1 + "/" + root_name + "/" + name);
    }
  } catch (...) {
  }
}

void remove_v1_roots_if_unused(const Host& host, const std::string& root_name) noexcept {
  try {
    for (const Controller* c : {&host.memory, &host.cpu, &host.pids}) {
      if (!c->v1.empty()) ::rmdir((c->v1 + "/" + root_name).c_str());
    }
  } catch (...) {
  }
}

}  // namespace mayura::cgroups
