// Resource limits as the kernel holds them: the values in the sandbox's cgroup
// files, on the hierarchy that carries each controller on this host, and the
// OOM flag of an exec result.

#include <linux/magic.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "../../engine/cgroups.hpp"
#include "harness.hpp"

namespace mayura::testing {
namespace {

namespace fs = std::filesystem;

class LimitsTest : public NativeTest {
 protected:
  // The one sandbox's directory on the hierarchy that carries `controller`.
  std::string sandbox_dir(const cgroups::Controller& controller) {
    const std::string base = controller.v2 ? options().cgroup_root
                                           : controller.v1 + "/" + fs::path(options().cgroup_root).filename().string();
    std::vector<std::string> dirs;
    for (const auto& e : fs::directory_iterator(base)) {
      if (e.is_directory()) dirs.push_back(e.path());
    }
    EXPECT_EQ(dirs.size(), 1u) << base;
    return dirs.empty() ? std::string() : dirs.front();
  }
  std::string value(const std::string& path) {
    std::string v = read_host(path);
    while (!v.empty() && v.back() == '\n') v.pop_back();
    return v;
  }
  const cgroups::Host host_ = cgroups::detect_host();
};

TEST_F(LimitsTest, TheCreatesLimitsAreInTheSandboxsCgroups) {
  ASSERT_TRUE(host_.memory.available() && host_.cpu.available() && host_.pids.available()) << host_.describe();
  CreateOptions c;
  c.memory_mib = 96;
  c.cpus = 0.5;
  c.pids = 77;
  auto s = create(c);
  const std::string mem = sandbox_dir(host_.memory);
  const std::string cpu = sandbox_dir(host_.cpu);
  const std::string pids = sandbox_dir(host_.pids);
  if (host_.memory.v2) {
    EXPECT_EQ(value(mem + "/memory.max"), std::to_string(96 << 20));
    EXPECT_EQ(value(mem + "/memory.swap.max"), "0");
  } else {
    EXPECT_EQ(value(mem + "/memory.limit_in_bytes"), std::to_string(96 << 20));
    if (host_.swap_limit) {
      EXPECT_EQ(value(mem + "/memory.memsw.limit_in_bytes"), std::to_string(96 << 20));
    }
  }
  if (host_.cpu.v2) {
    EXPECT_EQ(value(cpu + "/cpu.max"), "50000 100000");
  } else {
    EXPECT_EQ(value(cpu + "/cpu.cfs_quota_us"), "50000");
    EXPECT_EQ(value(cpu + "/cpu.cfs_period_us"), "100000");
  }
  // the process bound is on the commands, below the init
  EXPECT_EQ(value(pids + "/commands/pids.max"), "77");
  EXPECT_EQ(value(pids + "/pids.max"), "max");
  // a command is in it (as the sandbox sees it: its cgroup namespace)
  const std::string seen = sh(s, "cat /proc/self/cgroup");
  if (host_.pids.v2) {
    EXPECT_NE(seen.find("0::/commands/cmd-"), std::string::npos) << seen;
  } else {
    EXPECT_NE(seen.find(":pids:/commands\n"), std::string::npos) << seen;
  }
}

TEST_F(LimitsTest, TheEnginesDefaultsApplyWhenACreateSetsNone) {
  options().default_memory_mib = 300;
  options().default_pids = 500;
  options().default_cpus = 1.5;
  auto s = create();
  const std::string mem = sandbox_dir(host_.memory);
  EXPECT_EQ(value(mem + (host_.memory.v2 ? "/memory.max" : "/memory.limit_in_bytes")), std::to_string(300 << 20));
  EXPECT_EQ(value(sandbox_dir(host_.pids) + "/commands/pids.max"), "500");
  EXPECT_EQ(value(sandbox_dir(host_.cpu) + (host_.cpu.v2 ? "/cpu.max" : "/cpu.cfs_quota_us")),
            host_.cpu.v2 ? "150000 100000" : "150000");
}

TEST_F(LimitsTest, NoDefaultMeansNoBound) {
  options().default_memory_mib = 0;
  options().default_pids = 0;
  options().default_cpus = 0;
  auto s = create();
  if (!host_.memory.v2) {
    EXPECT_EQ(value(sandbox_dir(host_.memory) + "/memory.limit_in_bytes"), "9223372036854771712");
  }
  EXPECT_EQ(value(sandbox_dir(host_.pids) + "/commands/pids.max"), "max");
  if (!host_.cpu.v2) {
    EXPECT_EQ(value(sandbox_dir(host_.cpu) + "/cpu.cfs_quota_us"), "-1");
  }
}

TEST_F(LimitsTest, ASandboxMadeAheadTakesTheCreatesLimits) {
  options().prepared = 1;
  CreateOptions c;
  c.memory_mib = 64;
  c.pids = 33;
  // wait until the pool has one made, so this create takes it
  sandboxes();
  auto made = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(options().cgroup_root)) n += e.is_directory();
    return n;
  };
  for (int i = 0; i < 500 && made() == 0; ++i) ::usleep(10000);
  ASSERT_EQ(made(), 1);
  auto s = create(c);
  // the sandbox's cgroup is named after it: its hostname is mayura-<first 8 of the name>
  std::string prefix = sh(s, "hostname");
  prefix = prefix.substr(7, 8);
  std::string mem;
  const std::string base = host_.memory.v2 ? options().cgroup_root
                                           : host_.memory.v1 + "/" + fs::path(options().cgroup_root).filename().string();
  for (const auto& e : fs::directory_iterator(base)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) mem = e.path();
  }
  ASSERT_FALSE(mem.empty()) << prefix;
  EXPECT_EQ(value(mem + (host_.memory.v2 ? "/memory.max" : "/memory.limit_in_bytes")), std::to_string(64 << 20));
  EXPECT_EQ(sh(s, "echo ok"), "ok\n");
}

TEST_F(LimitsTest, OomKilledIsSaidOnlyWhenTheKernelKilledForMemory) {
  CreateOptions c;
  c.memory_mib = 48;
  auto s = create(c);
  ExecResult r = s.exec({"python3", "-c", "x = []\nwhile True: x.append(bytearray(1 << 20))"});
  EXPECT_EQ(r.exit_code, 137);
  EXPECT_TRUE(r.oom_killed);
  // a shell passes its child's death on as 137 too
  r = s.exec({"sh", "-c", "python3 -c 'x = bytearray(100 << 20)'; exit $?"});
  EXPECT_EQ(r.exit_code, 137);
  EXPECT_TRUE(r.oom_killed);
  // a SIGKILL that is not the OOM killer's is not an OOM
  r = s.exec({"sh", "-c", "kill -9 $$"});
  EXPECT_EQ(r.exit_code, 137);
  EXPECT_FALSE(r.oom_killed);
  // the sandbox lives on, and what fits still runs
  r = s.exec({"python3", "-c", "x = bytearray(8 << 20); print(len(x))"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
  EXPECT_FALSE(r.oom_killed);
}

TEST_F(LimitsTest, BadLimitsAreRefusedBeforeAnythingIsMade) {
  CreateOptions c;
  c.lifetime_ms = 10'000;
  c.memory_mib = 8;  // cannot even run a shell
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_INPUT);
  c.memory_mib.reset();
  c.pids = 0;
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_INPUT);
  c.pids.reset();
  c.cpus = -1;
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_INPUT);
  c.cpus.reset();
  c.seccomp_profile = "{not json";
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_INPUT);
  c.seccomp_profile = R"({"defaultAction": "SCMP_ACT_NOTIFY"})";
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_INPUT);
  EXPECT_EQ(sandboxes().size(), 0u);
  for (const auto& e : fs::directory_iterator(options().cgroup_root)) EXPECT_FALSE(e.is_directory()) << e.path();
}

TEST_F(LimitsTest, BadEngineDefaultsAreRefused) {
  NativeOptions o = options();
  o.default_memory_mib = 4;
  EXPECT_EQ(reason_of([&] { native_sandboxes(o); }), Reason::INVALID_CONFIG);
  o = options();
  o.default_cpus = -2;
  EXPECT_EQ(reason_of([&] { native_sandboxes(o); }), Reason::INVALID_CONFIG);
  o = options();
  o.default_pids = -1;
  EXPECT_EQ(reason_of([&] { native_sandboxes(o); }), Reason::INVALID_CONFIG);
}

}  // namespace
}  // namespace mayura::testing

namespace mayura::testing {
namespace {

// A legacy (v1 only) host has no cgroup2 to track and kill with: the engine
// mounts one of its own under its state directory. This host has a cgroup2,
// so the legacy path is taken by describing the host as legacy.
TEST(LegacyHost, TheEngineMountsACgroup2OfItsOwn) {
  // In a mount namespace of the test's own: the mount must not show in the
  // host's table, where a test running alongside checks for leaked mounts.
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
  cgroups::Host legacy = cgroups::detect_host();
  legacy.layout = cgroups::Layout::legacy;
  legacy.v2.clear();
  const std::string state = "/run/mayura-test-legacy-" + std::to_string(::getpid());
  const std::string root = cgroups::prepare_root("", legacy, state);
  EXPECT_EQ(root, state + "/cgroup2/mayura");
  struct statfs fs {};
  ASSERT_EQ(::statfs(root.c_str(), &fs), 0);
  EXPECT_EQ(fs.f_type, CGROUP2_SUPER_MAGIC);
  // a second engine finds it mounted and uses it as it is
  EXPECT_EQ(cgroups::prepare_root("", legacy, state), root);
  EXPECT_EQ(::rmdir(root.c_str()), 0);
  EXPECT_EQ(::umount2((state + "/cgroup2").c_str(), MNT_DETACH), 0);
  EXPECT_EQ(::rmdir((state + "/cgroup2").c_str()), 0);
  EXPECT_EQ(::rmdir(state.c_str()), 0);
}

}  // namespace
}  // namespace mayura::testing
