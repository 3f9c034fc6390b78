// Limits on cgroup v1 hierarchies (hybrid and legacy hosts): the init is put
// into the sandbox's group on each before it runs anything, and everything
// it starts inherits them; each command joins the pids `commands` group
// itself before it runs.

#include <sys/stat.h>

#include <chrono>
#include <thread>

#include "cgroup_files.hpp"
#include "cgroup_limits.hpp"
#include "sys_error.hpp"

namespace mayura::cgroups {
namespace {

// <mount>/<root_name>/<name>, made; its path and fd.
UniqueFd make_group(const std::string& mount, const std::string& root_name, const std::string& name, std::string& path) {
  const std::string root = mount + "/" + root_name;
  if (::mkdir(root.c_str(), 0755) != 0 && errno != EEXIST) fail_step("making the engine's cgroup " + root, errno);
  path = root + "/" + name;
  if (::mkdir(path.c_str(), 0755) != 0) {
    const int e = errno;
    path.clear();
    fail_step("making the sandbox's cgroup on " + mount, e);
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) fail_step("opening the sandbox's cgroup on " + mount, errno);
  return fd;
}

void set(int dir, const char* file, const std::string& value) {
  const int error = write_at(dir, file, value);
  if (error) fail_step(std::string("setting the sandbox's ") + file + " to " + value, error);
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

V1Groups::V1Groups(const Host& host, const std::string& root_name, const std::string& name) {
  // A plain try in the body (not a function-try-block, whose handler runs
  // after the members are gone): what was made before a failure is removed.
  try {
    if (!host.memory.v1.empty()) memory_ = make_group(host.memory.v1, root_name, name, memory_path_);
    if (!host.cpu.v1.empty()) cpu_ = make_group(host.cpu.v1, root_name, name, cpu_path_);
    if (!host.pids.v1.empty()) {
      pids_ = make_group(host.pids.v1, root_name, name, pids_path_);
      if (::mkdirat(pids_.get(), "commands", 0755) != 0) fail_step("making the commands' pids cgroup", errno);
      commands_.reset(::openat(pids_.get(), "commands", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!commands_) fail_step("opening the commands' pids cgroup", errno);
      // Opened by the engine: the kernel checks a v1 move against the
      // opener, so a command (no capability, in its user namespace) can
      // join with it.
      commands_procs_.reset(::openat(commands_.get(), "cgroup.procs", O_WRONLY | O_CLOEXEC));
      if (!commands_procs_) fail_step("opening the commands' pids cgroup", errno);
    }
  } catch (...) {
    destroy();
    throw;
  }
}

void V1Groups::place(pid_t pid) const {
  const std::string text = std::to_string(pid);
  for (const UniqueFd* group : {&memory_, &cpu_, &pids_}) {
    if (*group) set(group->get(), "cgroup.procs", text);
  }
}

void V1Groups::apply(const Limits& limits) const {
  if (memory_) {
    const bool swap = ::faccessat(memory_.get(), "memory.memsw.limit_in_bytes", F_OK, 0) == 0;
    const std::string bytes = limits.memory_bytes ? std::to_string(*limits.memory_bytes) : "-1";
    // memsw (memory + swap) may never be below the memory limit: lift it,
    // set the limit, then hold memsw at the same value so no swap is used.
    if (swap) set(memory_.get(), "memory.memsw.limit_in_bytes", "-1");
    set(memory_.get(), "memory.limit_in_bytes", bytes);
    if (swap) set(memory_.get(), "memory.memsw.limit_in_bytes", bytes);
    write_at(memory_.get(), "memory.swappiness", "0");  // refused on some kernels; memsw is the bound
  }
  if (cpu_) {
    set(cpu_.get(), "cpu.cfs_period_us", std::to_string(kCpuPeriodUs));
    set(cpu_.get(), "cpu.cfs_quota_us", limits.cpus ? std::to_string(cpu_quota_us(*limits.cpus)) : "-1");
  }
  if (commands_) set(commands_.get(), "pids.max", limits.pids ? std::to_string(*limits.pids) : "max");
}

OomCounter V1Groups::oom_counter() const {
  if (!memory_) return OomCounter();
  return OomCounter(UniqueFd(::openat(memory_.get(), "memory.oom_control", O_RDONLY | O_CLOEXEC)));
}

void V1Groups::destroy() noexcept {
  if (destroyed_) return;
  destroyed_ = true;
  commands_procs_.reset();
  commands_.reset();
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
