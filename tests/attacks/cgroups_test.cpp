// Cgroups: no hierarchy can be mounted (the v1 release_agent escape needs
// one), the command sees only its own cgroup, and it stays in the cgroup
// the engine put it in.

#include <filesystem>
#include <sstream>
#include <thread>

#include "engine/cgroups.hpp"
#include "attack.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using CgroupsTest = AttackTest;

TEST_F(CgroupsTest, NoHierarchyCanBeMounted) {
  auto s = create();
  install_probe(s);
  for (const char* controller : {"rdma", "memory", "none,name=x"}) {
    EXPECT_EQ(probe(s, {"mount", "cgroup", "/tmp/x", "cgroup", controller})["mount"], "EPERM") << controller;
  }
  EXPECT_EQ(probe(s, {"mount", "cgroup2", "/tmp/y", "cgroup2"})["mount"], "EPERM");
  EXPECT_EQ(probe(s, {"stat", "/sys/fs/cgroup"})["stat"], "ENOENT");
}

TEST_F(CgroupsTest, OnlyItsOwnViewShows) {
  auto s = create();
  const std::string view = sh(s, "cat /proc/self/cgroup");
  EXPECT_EQ(view.find("mayura"), std::string::npos) << view;
  EXPECT_EQ(view.find(fs::path(options().cgroup_root).filename().string()), std::string::npos) << view;
  // the unified line is always there (every kernel has cgroup2), and shows
  // the command's own cgroup below the namespace's root, nothing above
  std::istringstream in(view);
  std::string line;
  int unified = 0;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) {
      ++unified;
      EXPECT_EQ(line.rfind("0::/commands/cmd-", 0), 0u) << line;
    }
  }
  EXPECT_EQ(unified, 1) << view;
}

TEST_F(CgroupsTest, ACommandStaysInTheSandboxsCgroup) {
  auto s = create();
  install_probe(s);
  // every way it could move itself is closed: no cgroup file system is
  // there or can be mounted, and none is reachable through the init's root
  EXPECT_EQ(probe(s, {"open", "/proc/self/cgroup", "w"})["open"], "EACCES");
  EXPECT_EQ(probe(s, {"mount", "cgroup2", "/tmp/c", "cgroup2"})["mount"], "EPERM");
  EXPECT_EQ(probe(s, {"open", "/sys/fs/cgroup/cgroup.procs", "w"})["open"], "ENOENT");
  const std::string through_init = probe(s, {"open", "/proc/1/root/sys/fs/cgroup/cgroup.procs", "w"})["open"];
  EXPECT_TRUE(through_init == "EACCES" || through_init == "ENOENT") << through_init;
  sh(s, "setsid sleep 30 >/dev/null 2>&1 </dev/null &");
  const std::string mount = cgroups::detect_host().v2;
  const std::string root = options().cgroup_root.substr(mount.size());  // "/mayura-test-N"
  // the background sleep may not have exec'd yet when the shell returns
  std::vector<pid_t> found;
  for (int i = 0; i < 200 && found.empty(); ++i) {
    for (pid_t pid : processes_in_range(options())) {
      if (read_host("/proc/" + std::to_string(pid) + "/comm") == "sleep\n") found.push_back(pid);
    }
    if (found.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int sleeps = 0;
  for (pid_t pid : found) {
    const std::string proc = "/proc/" + std::to_string(pid);
    ++sleeps;
    std::istringstream in(read_host(proc + "/cgroup"));
    std::string line;
    bool unified = false;
    while (std::getline(in, line)) {
      if (line.rfind("0::", 0) == 0) {
        unified = true;
        EXPECT_EQ(line.rfind("0::" + root + "/", 0), 0u) << line;
      }
      // the v1 hierarchies that carry limits place it under the same root
      for (const char* c : {":memory:", ":pids:"}) {
        const auto at = line.find(c);
        if (at != std::string::npos) {
          EXPECT_EQ(line.substr(at + std::strlen(c)).rfind(root + "/", 0), 0u) << line;
        }
      }
    }
    EXPECT_TRUE(unified);
  }
  EXPECT_EQ(sleeps, 1);
}

}  // namespace
}  // namespace mayura::testing
