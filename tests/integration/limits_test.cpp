// Resource limits as the kernel holds them: the values in the sandbox's cgroup
// files, on the hierarchy that carries each controller on this host, and the
// OOM flag of an exec result.

#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/cgroups.hpp"
#include "harness.hpp"

namespace mayura::testing {
namespace {

namespace fs = std::filesystem;

// What a cgroup the engine hands its limits down from lists in its
// cgroup.subtree_control on a unified host: every limit's controller, and
// io (disk I/O bounds) where the host offers it.
std::string every_controller(const cgroups::Host& host) {
  return host.io.v2 ? "cpu io memory pids" : "cpu memory pids";
}

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
  // The one sandbox's commands' cgroups, in the cgroup2 tree ("" unless
  // there is exactly one sandbox).
  std::string commands_dir() {
    std::vector<std::string> sandboxes;
    for (const auto& e : fs::directory_iterator(options().cgroup_root)) {
      if (e.is_directory()) sandboxes.push_back(e.path());
    }
    EXPECT_EQ(sandboxes.size(), 1u);
    return sandboxes.size() == 1 ? sandboxes.front() + "/commands" : "";
  }
  // The one process in a spare command cgroup `dir`: the next command's,
  // made ahead once the last one ended (its request follows that end, and
  // it names itself once it runs, so both are waited for). -1 if there is
  // none or more than one.
  pid_t made_ahead(const std::string& dir) {
    std::string procs;
    std::string name;
    for (int i = 0; i < 5000; ++i, ::usleep(1000)) {
      procs = value(dir + "/cgroup.procs");
      if (procs.empty() || procs.find('\n') != std::string::npos) continue;
      name = read_host("/proc/" + procs + "/comm");
      if (name == "mayura-next\n") break;
    }
    if (procs.empty() || procs.find('\n') != std::string::npos) {
      ADD_FAILURE() << dir << " holds: " << procs;
      return -1;
    }
    EXPECT_EQ(name, "mayura-next\n");
    return static_cast<pid_t>(std::stol(procs));
  }
  // The host process `pid`'s number in the sandbox's pid namespace.
  std::string pid_inside(pid_t pid) {
    const std::string status = read_host("/proc/" + std::to_string(pid) + "/status");
    const std::size_t at = status.find("NSpid:");
    if (at == std::string::npos) return "";
    const std::string ids = status.substr(at, status.find('\n', at) - at);
    return ids.substr(ids.find_last_of(" \t") + 1);
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
  if (host_.pids.v2) {
    // The no-internal-processes rule: the sandbox's own cgroup holds no
    // process, the init is alone in its leaf, and pids is handed down.
    EXPECT_EQ(value(pids + "/cgroup.procs"), "");
    const std::string init = value(pids + "/init/cgroup.procs");
    EXPECT_EQ(read_host("/proc/" + init + "/comm"), "mayura-init\n") << init;
    EXPECT_EQ(value(pids + "/cgroup.subtree_control"), "pids");
  }
  // a command is in it (as the sandbox sees it: its cgroup namespace)
  const std::string seen = sh(s, "cat /proc/self/cgroup");
  if (host_.pids.v2) {
    EXPECT_NE(seen.find("0::/commands/cmd-"), std::string::npos) << seen;
  } else {
    EXPECT_NE(seen.find(":pids:/commands\n"), std::string::npos) << seen;
  }
}

// A command's cgroup outlives it only as the next command's: cgroup2 cannot
// rename one (EPERM), so the next command takes it under the name it has,
// instead of an rmdir, a mkdir and a chown on every exec.
TEST_F(LimitsTest, ACommandTakesTheCgroupTheLastOneLeftEmpty) {
  auto s = create();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(sh(s, "grep '^0::' /proc/self/cgroup"), "0::/commands/cmd-1\n") << i;
  const std::string commands = commands_dir();
  ASSERT_FALSE(commands.empty());
  auto names = [&] {
    std::vector<std::string> found;
    for (const auto& e : fs::directory_iterator(commands)) {
      if (e.is_directory()) found.push_back(e.path().filename().string());
    }
    std::sort(found.begin(), found.end());
    std::string all;
    for (const auto& n : found) all += n + " ";
    return all;
  };
  EXPECT_EQ(names(), "cmd-1 ");
  // It holds one process: the next command's, started ahead by the init,
  // and the next command is that process.
  const pid_t waiting = made_ahead(commands + "/cmd-1");
  ASSERT_GT(waiting, 0);
  EXPECT_EQ(sh(s, "echo $$; grep '^0::' /proc/self/cgroup"), pid_inside(waiting) + "\n0::/commands/cmd-1\n");
  // One that leaves a process running keeps its cgroup: the next is new.
  EXPECT_EQ(sh(s, "sleep 600 >/dev/null 2>&1 & grep '^0::' /proc/self/cgroup"), "0::/commands/cmd-1\n");
  EXPECT_EQ(sh(s, "grep '^0::' /proc/self/cgroup"), "0::/commands/cmd-6\n");
  EXPECT_NE(value(commands + "/cmd-1/cgroup.procs"), "");
  // One that was killed (its timeout) is not taken again, and the next runs:
  // a cgroup once written cgroup.kill kills what is cloned into it later.
  ExecOptions o;
  o.timeout_ms = 200;
  EXPECT_TRUE(s.exec({"sleep", "600"}, o).timed_out);
  EXPECT_EQ(sh(s, "grep '^0::' /proc/self/cgroup"), "0::/commands/cmd-8\n");
  EXPECT_EQ(names(), "cmd-1 cmd-8 ");
}

// The process made ahead is a saving, never a condition: a command still
// starts, in the same cgroup, when it has gone.
TEST_F(LimitsTest, ACommandStartsWhenTheProcessMadeAheadForItHasGone) {
  auto s = create();
  EXPECT_EQ(sh(s, "true"), "");
  const std::string commands = commands_dir();
  const pid_t waiting = made_ahead(commands + "/cmd-1");
  ASSERT_GT(waiting, 0);
  ASSERT_EQ(::kill(waiting, SIGKILL), 0);
  for (int i = 0; i < 2000 && !value(commands + "/cmd-1/cgroup.procs").empty(); ++i) ::usleep(1000);
  EXPECT_EQ(sh(s, "grep '^0::' /proc/self/cgroup"), "0::/commands/cmd-1\n");
  // and the next is made ahead again
  const pid_t next = made_ahead(commands + "/cmd-1");
  EXPECT_GT(next, 0);
  EXPECT_NE(next, waiting);
}

// An exec that fails before its request reaches the init (here at the
// open-file limit, making its pipes) leaves the cgroup and the process made
// ahead in it as they were, for the next command. (Not under the
// sanitizers, whose own checks need descriptors: scripts/test.sh.)
TEST_F(LimitsTest, AnExecAtTheOpenFileLimitLeavesTheProcessMadeAheadWaiting) {
  auto s = create();
  EXPECT_EQ(sh(s, "true"), "");
  const std::string commands = commands_dir();
  const pid_t waiting = made_ahead(commands + "/cmd-1");
  ASSERT_GT(waiting, 0);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // room for the cgroup's directory and not for the pipes
  const rlimit tight{fd_limit_leaving(2), saved.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  Reason reason = Reason::INTERNAL;
  try {
    s.exec({"true"});
    reason = Reason::INVALID_CONFIG;  // (not expected: it ran)
  } catch (const SandboxError& e) {
    reason = e.reason();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(reason, Reason::LIMIT_REACHED);
  EXPECT_EQ(made_ahead(commands + "/cmd-1"), waiting);
  EXPECT_EQ(sh(s, "echo $$; grep '^0::' /proc/self/cgroup"), pid_inside(waiting) + "\n0::/commands/cmd-1\n");
}

TEST_F(LimitsTest, NoCommandIsStartedAheadWhenTheEngineIsToldNot) {
  options().commands_ahead = false;
  auto s = create();
  EXPECT_EQ(sh(s, "grep '^0::' /proc/self/cgroup"), "0::/commands/cmd-1\n");
  EXPECT_EQ(sh(s, "grep '^0::' /proc/self/cgroup"), "0::/commands/cmd-1\n");
  const std::string commands = commands_dir();
  // The init would start one 5 ms after the engine asked (kQuietMs in
  // engine/init/standby.cpp), the ask sent before the exec above returned;
  // it serves requests one at a time, in order, and starts one that is due
  // after each. So: a request served shows any ask was taken; past its 5 ms,
  // two more served show the init has been through a start that was due.
  (void)s.list("/");
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  (void)s.list("/");
  (void)s.list("/");
  // the look sees the cgroup that one would be in, kept for the next command
  ASSERT_TRUE(fs::exists(commands + "/cmd-1/cgroup.procs")) << commands;
  EXPECT_EQ(value(commands + "/cmd-1/cgroup.procs"), "");
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
  if (host_.memory.v2) {
    EXPECT_EQ(value(sandbox_dir(host_.memory) + "/memory.max"), "max");
    EXPECT_EQ(value(sandbox_dir(host_.memory) + "/memory.swap.max"), "0");  // never swap
  } else {
    EXPECT_EQ(value(sandbox_dir(host_.memory) + "/memory.limit_in_bytes"), "9223372036854771712");
  }
  EXPECT_EQ(value(sandbox_dir(host_.pids) + "/commands/pids.max"), "max");
  if (host_.cpu.v2) {
    EXPECT_EQ(value(sandbox_dir(host_.cpu) + "/cpu.max"), "max 100000");
  } else {
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
  const std::string base = host_.memory.v2
                               ? options().cgroup_root
                               : host_.memory.v1 + "/" + fs::path(options().cgroup_root).filename().string();
  for (const auto& e : fs::directory_iterator(base)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) mem = e.path();
  }
  ASSERT_FALSE(mem.empty()) << prefix;
  EXPECT_EQ(value(mem + (host_.memory.v2 ? "/memory.max" : "/memory.limit_in_bytes")), std::to_string(64 << 20));
  EXPECT_EQ(sh(s, "echo ok"), "ok\n");
}

// The cpu is shared by tenant: each tenant's sandboxes split one weight
// (its share over its count, rounded up to a power of two), a sandbox of no
// tenant has a whole one, and as a tenant's sandboxes end the rest weigh
// more. A sandbox made ahead takes its tenant's weight with it.
TEST_F(LimitsTest, ATenantsSandboxesSplitOneCpuWeight) {
  ASSERT_TRUE(host_.cpu.available()) << host_.describe();
  options().prepared = 1;
  sandboxes();
  const auto made = [&] {
    int n = 0;
    for (const auto& e : fs::directory_iterator(options().cgroup_root)) n += e.is_directory();
    return n;
  };
  for (int i = 0; i < 500 && made() == 0; ++i) ::usleep(10000);
  ASSERT_EQ(made(), 1);
  const std::string base =
      host_.cpu.v2 ? options().cgroup_root : host_.cpu.v1 + "/" + fs::path(options().cgroup_root).filename().string();
  // The weight in the cgroup of the sandbox whose hostname is mayura-<first 8 of its name>.
  const auto weight = [&](Sandbox& s) {
    const std::string prefix = sh(s, "hostname").substr(7, 8);
    for (const auto& e : fs::directory_iterator(base)) {
      if (e.path().filename().string().rfind(prefix, 0) == 0)
        return value(e.path().string() + (host_.cpu.v2 ? "/cpu.weight" : "/cpu.shares"));
    }
    return std::string("no cgroup for ") + prefix;
  };
  const auto eventually = [&](Sandbox& s, const std::string& expected) {
    std::string now = weight(s);
    for (int i = 0; i < 1000 && now != expected; ++i, ::usleep(10000)) now = weight(s);
    return now;
  };
  CreateOptions alice;
  alice.tenant = "alice";
  std::vector<Sandbox> hers;
  hers.push_back(create(alice));  // the one made ahead
  EXPECT_EQ(weight(hers[0]), "1024");
  hers.push_back(create(alice));
  hers.push_back(create(alice));
  CreateOptions bob;
  bob.tenant = "bob";
  auto his = create(bob);  // (the test's contract layer allows 4 alive)
  for (Sandbox& s : hers) EXPECT_EQ(weight(s), "256");
  EXPECT_EQ(weight(his), "1024");
  // Two of hers end: the last has her whole share again.
  hers[0].release();
  EXPECT_EQ(eventually(hers[1], "512"), "512");
  hers[1].release();
  EXPECT_EQ(eventually(hers[2], "1024"), "1024");
  EXPECT_EQ(weight(his), "1024");
  auto own = create();
  EXPECT_EQ(weight(own), "1024");
}

// A sandbox made ahead has its first command's process made with it, at the
// pool's priority; the create that takes it gives the process (and the init)
// the ordinary priority back, and the first command is that process, in the
// cgroup made for it.
TEST_F(LimitsTest, TheFirstCommandOfASandboxMadeAheadIsAProcessMadeWithIt) {
  options().prepared = 1;
  sandboxes();
  std::string made;
  for (int i = 0; i < 1000 && made.empty(); ++i, ::usleep(10000)) {
    for (const auto& e : fs::directory_iterator(options().cgroup_root)) {
      if (e.is_directory() && fs::exists(e.path() / "commands" / "cmd-0")) made = e.path();
    }
  }
  ASSERT_FALSE(made.empty());
  const pid_t waiting = made_ahead(made + "/commands/cmd-0");
  ASSERT_GT(waiting, 0);
  // nice is field 19 of stat, counted after the name's closing parenthesis
  auto nice_of = [&](pid_t pid) {
    const std::string stat = read_host("/proc/" + std::to_string(pid) + "/stat");
    std::istringstream rest(stat.substr(stat.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 19; ++i) rest >> field;
    return field;
  };
  EXPECT_EQ(nice_of(waiting), "19");
  // The process is made before the sandbox joins the pool: a create may
  // come first and build its own, and one after takes this sandbox.
  std::optional<Sandbox> taken;
  for (int i = 0; i < 500 && !taken; ++i) {
    auto s = create();
    if (nice_of(waiting) == "0") {
      taken.emplace(std::move(s));
    } else {
      EXPECT_EQ(sh(s, "cut -d' ' -f19 /proc/1/stat; cut -d' ' -f19 /proc/self/stat"), "0\n0\n");
      s.release();
      ::usleep(10000);
    }
  }
  ASSERT_TRUE(taken) << "no create took the sandbox made ahead";
  Sandbox& s = *taken;
  EXPECT_EQ(
      sh(s, "echo $$; grep '^0::' /proc/self/cgroup; cut -d' ' -f19 /proc/self/stat; cut -d' ' -f19 /proc/1/stat"),
      pid_inside(waiting) + "\n0::/commands/cmd-0\n0\n0\n");
  // the next one is made by the init, at its priority now, in the same cgroup
  EXPECT_EQ(sh(s, "true"), "");
  const pid_t next = made_ahead(made + "/commands/cmd-0");
  ASSERT_GT(next, 0);
  EXPECT_EQ(nice_of(next), "0");
  EXPECT_EQ(sh(s, "echo $$"), pid_inside(next) + "\n");
}

// The cpu bound holds for real: the kernel throttles a busy command of a
// sandbox bounded to a fifth of a cpu (20 ms per 100 ms period), and counts
// it in cpu.stat, on whichever hierarchy carries cpu.
TEST_F(LimitsTest, TheCpuQuotaThrottlesABusyCommand) {
  ASSERT_TRUE(host_.cpu.available()) << host_.describe();
  CreateOptions c;
  c.cpus = 0.2;
  auto s = create(c);
  const std::string stat = sandbox_dir(host_.cpu) + "/cpu.stat";
  auto throttled = [&] {
    std::istringstream lines(read_host(stat));
    std::string key;
    std::uint64_t n = 0;
    while (lines >> key >> n) {
      if (key == "nr_throttled") return n;
    }
    ADD_FAILURE() << "no nr_throttled in " << stat;
    return std::uint64_t{0};
  };
  EXPECT_EQ(throttled(), 0u);
  // a few tenths of a second of cpu here: many times the 20 ms a period allows
  sh(s, "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done");
  EXPECT_GT(throttled(), 0u);
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

std::string own_cgroup_path() { return cgroups::own_cgroup(read_host("/proc/self/cgroup")); }

// Where the engine tracks and kills, and where it puts itself, in the layout
// this machine really has: each layout's own effects, checked on the real
// hierarchy.
TEST_F(LimitsTest, TheEngineIsPlacedAsTheLayoutRequires) {
  const std::string layout = test_layout();
  auto s = create();
  const cgroups::Host host = cgroups::detect_host();
  ASSERT_FALSE(host.v2.empty());
  struct statfs fs {};
  ASSERT_EQ(::statfs(options().cgroup_root.c_str(), &fs), 0) << options().cgroup_root;
  EXPECT_EQ(fs.f_type, CGROUP2_SUPER_MAGIC);
  // a command is in a cgroup of its own, below the sandbox's (its cgroup
  // namespace's root), in every layout
  const std::string seen = sh(s, "cat /proc/self/cgroup");
  EXPECT_NE(seen.find("0::/commands/cmd-"), std::string::npos) << seen;
  if (layout == "v1") {
    EXPECT_EQ(host.layout, cgroups::Layout::legacy) << host.describe();
    // no cgroup2 but the one the engine mounted, and the root on it
    EXPECT_EQ(host.v2, cgroups::kEngineCgroup2);
    EXPECT_EQ(options().cgroup_root.rfind(std::string(cgroups::kEngineCgroup2) + "/", 0), 0u) << options().cgroup_root;
    EXPECT_FALSE(host.memory.v2 || host.cpu.v2 || host.pids.v2);
    EXPECT_TRUE(host.memory.available() && host.cpu.available() && host.pids.available()) << host.describe();
  } else if (layout == "hybrid") {
    EXPECT_EQ(host.layout, cgroups::Layout::hybrid) << host.describe();
    EXPECT_EQ(options().cgroup_root.rfind(host.v2 + "/mayura-test-", 0), 0u) << options().cgroup_root;
  } else {
    EXPECT_EQ(host.layout, cgroups::Layout::unified) << host.describe();
    EXPECT_TRUE(host.memory.v2 && host.cpu.v2 && host.pids.v2) << host.describe();
    EXPECT_TRUE(host.swap_limit) << host.describe();
    // every limit is enforced on cgroup2: the engine's root has them all
    EXPECT_EQ(value(options().cgroup_root + "/cgroup.subtree_control"), every_controller(host));
    const std::string own = own_cgroup_path();
    if (layout == "v2-delegated") {
      // The engine left the service's own cgroup for a leaf, so the service
      // holds no process and hands its controllers down to the sandboxes.
      const std::string service = "/system.slice/mayurad.service";
      EXPECT_EQ(own, service + "/engine");
      EXPECT_EQ(value(host.v2 + service + "/cgroup.procs"), "");
      EXPECT_EQ(options().cgroup_root.rfind(host.v2 + service + "/mayura-test-", 0), 0u) << options().cgroup_root;
    } else if (layout == "v2-root") {
      EXPECT_EQ(own, "");
      EXPECT_EQ(options().cgroup_root.rfind(host.v2 + "/mayura-test-", 0), 0u) << options().cgroup_root;
    } else if (layout == "v2-login") {
      // not delegated: the engine stays in the session and makes its tree at
      // the top, as the cgroupfs drivers do
      EXPECT_EQ(own.rfind("/user.slice/", 0), 0u) << own;
      EXPECT_EQ(options().cgroup_root.rfind(host.v2 + "/mayura-test-", 0), 0u) << options().cgroup_root;
    } else {
      ADD_FAILURE() << "unknown layout " << layout;
    }
  }
}

}  // namespace
}  // namespace mayura::testing

namespace mayura::testing {
namespace {

// On pure cgroup2 only (the VMs' v2 layouts): where the engine's root lies
// below cgroups with processes of their own.
class UnifiedCgroupTest : public LimitsTest {
 protected:
  void SetUp() override {
    LimitsTest::SetUp();
    ASSERT_EQ(test_layout().rfind("v2-", 0), 0u) << "runs on pure cgroup2 only, not on " << test_layout();
    ASSERT_EQ(host_.layout, cgroups::Layout::unified) << host_.describe();
    home_ = host_.v2 + "/mayura-test-home-" + std::to_string(::getpid());
    ASSERT_EQ(::mkdir(home_.c_str(), 0755), 0) << std::strerror(errno);
  }
  void TearDown() override {
    shutdown();  // the engine's root goes before the cgroup it lies in
    if (sleeper_ > 0) {
      ::kill(sleeper_, SIGKILL);
      for (int i = 0; i < 1000 && ::kill(sleeper_, 0) == 0; ++i) ::usleep(1000);
    }
    for (const std::string& dir : {home_ + "/engine", home_}) {
      for (int i = 0; i < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(10000);
    }
    EXPECT_FALSE(fs::exists(home_)) << home_;
    LimitsTest::TearDown();
  }
  // A process that stays in `home_` (a shell that moved itself there, then
  // sleeps), as another process of a service would.
  void start_sleeper() {
    const std::string pid_file = options().state_dir + "-sleeper";
    const std::string command = "sh -c 'echo $$ > " + home_ +
                                "/cgroup.procs && exec sleep 600' </dev/null >/dev/null 2>&1 & echo $! > " + pid_file;
    ASSERT_EQ(std::system(command.c_str()), 0);
    std::istringstream(read_host(pid_file)) >> sleeper_;
    fs::remove(pid_file);
    ASSERT_GT(sleeper_, 0);
    for (int i = 0; i < 2000 && value(home_ + "/cgroup.procs") != std::to_string(sleeper_); ++i) ::usleep(1000);
    ASSERT_EQ(value(home_ + "/cgroup.procs"), std::to_string(sleeper_));
  }
  // mayura-run's environment for an engine with its root below `home_`; an
  // engine among several at once takes its own `slot`: a state directory, a
  // root and one slot of the test's ids.
  std::string engine_env(int slot = -1) {
    const std::string tag = slot < 0 ? std::string() : "-" + std::to_string(slot);
    const std::uint64_t id_base = options().id_base + (slot < 0 ? 0u : static_cast<std::uint64_t>(slot) * 65536u);
    return "env MAYURA_STATE_DIR=" + options().state_dir + tag + " MAYURA_CGROUP_ROOT=" + home_ + "/sandboxes" + tag +
           " MAYURA_ID_BASE=" + std::to_string(id_base) +
           " MAYURA_ID_SLOTS=" + std::to_string(slot < 0 ? options().id_slots : 1);
  }
  // mayura-run, started from a shell that moved itself into `home_` first,
  // with the engine's root below it.
  std::string mayura_run_in_home(const std::string& args, int& status) {
    const std::string out = options().state_dir + "-out";
    const std::string command = "sh -c 'echo $$ > " + home_ + "/cgroup.procs && exec " + engine_env() + " " +
                                MAYURA_RUN_PATH + " --local " + args + "' </dev/null >" + out + " 2>&1";
    const int raw = std::system(command.c_str());
    status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    std::string text = read_host(out);
    fs::remove(out);
    return text;
  }
  std::string home_;
  pid_t sleeper_ = -1;
};

// The issue's second row: the engine in a service's cgroup with its root below
// it (MAYURA_CGROUP_ROOT). The engine moves itself and the service's other
// processes into a leaf, hands every controller down, and the limits hold.
TEST_F(UnifiedCgroupTest, ARootBelowTheEnginesOwnCgroupMovesItsProcessesIntoALeaf) {
  start_sleeper();
  int status = -1;
  const std::string out = mayura_run_in_home("--pids 7 --memory 64 -- cat /proc/self/cgroup", status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_EQ(out, "0::/commands/cmd-1\n");
  // the other process of the "service" went into the leaf with the engine
  EXPECT_EQ(value(home_ + "/cgroup.procs"), "");
  EXPECT_EQ(value(home_ + "/engine/cgroup.procs"), std::to_string(sleeper_));
  EXPECT_EQ(value(home_ + "/cgroup.subtree_control"), every_controller(host_));
  // the engine's root is gone with its last sandbox
  EXPECT_FALSE(fs::exists(home_ + "/sandboxes"));
}

// Engines started at once by one process of a service's cgroup (a
// service's workers, a test runner's parallel tests): each moves the others,
// and their starter, while they keep forking, and hands the controllers down
// meanwhile. Every one still enforces every limit; none gives one up because
// another had just started.
TEST_F(UnifiedCgroupTest, EnginesStartedAtOnceInOneCgroupEachKeepEveryLimit) {
  constexpr int kEngines = 4;
  const std::string first_home = home_;
  // Once a controller is handed down, no process can join that cgroup again:
  // each round starts its engines from a fresh one.
  for (int round = 0; round < 4; ++round) {
    home_ = first_home + "-" + std::to_string(round);
    ASSERT_EQ(::mkdir(home_.c_str(), 0755), 0) << std::strerror(errno);
    // every other round delegated, as systemd marks a service with
    // Delegate=yes; else the engines' roots are just below their cgroup
    if (round % 2 == 1) {
      ASSERT_EQ(::setxattr(home_.c_str(), "trusted.delegate", "1", 1, 0), 0) << std::strerror(errno);
    }
    const std::string out = options().state_dir + "-out-";
    std::string starts;
    for (int i = 0; i < kEngines; ++i) {
      const std::string n = std::to_string(i);
      starts += "(" + engine_env(i) + " " + MAYURA_RUN_PATH +
                " --local --pids 7 --memory 64 -- cat /proc/self/cgroup >" + out + n + " 2>&1; echo $? >" + out + n +
                ".status) & ";
    }
    const std::string command = "sh -c 'echo $$ > " + home_ + "/cgroup.procs && { " + starts + "wait; }' </dev/null";
    ASSERT_EQ(std::system(command.c_str()), 0);
    for (int i = 0; i < kEngines; ++i) {
      const std::string n = std::to_string(i);
      EXPECT_EQ(read_host(out + n + ".status"), "0\n")
          << "round " << round << ", engine " << i << ": " << read_host(out + n);
      EXPECT_EQ(read_host(out + n), "0::/commands/cmd-1\n") << "round " << round << ", engine " << i;
      EXPECT_FALSE(fs::exists(home_ + "/sandboxes-" + n));
      fs::remove(out + n);
      fs::remove(out + n + ".status");
      fs::remove_all(options().state_dir + "-" + n);
    }
    EXPECT_EQ(value(home_ + "/cgroup.procs"), "");
    EXPECT_EQ(value(home_ + "/cgroup.subtree_control"), every_controller(host_));
    for (const std::string& dir : {home_ + "/engine", home_}) {
      for (int i = 0; i < 100 && ::rmdir(dir.c_str()) != 0 && errno == EBUSY; ++i) ::usleep(10000);
    }
    EXPECT_FALSE(fs::exists(home_)) << home_;
  }
  home_ = first_home;
}

// A root below a cgroup that holds a process the engine may not move (not its
// own, not delegated): no controller is handed past it, so no limit can be
// promised, and a create that asks for one is refused; a sandbox without
// limits still runs (the cgroup is never turned into a thread root).
TEST_F(UnifiedCgroupTest, ARootBelowAnotherProcesssCgroupOffersNoLimitAndStillRuns) {
  start_sleeper();
  options().cgroup_root = home_ + "/sandboxes";
  options().default_memory_mib = 0;
  options().default_pids = 0;
  const Features f = sandboxes().features();
  EXPECT_FALSE(f.memory);
  EXPECT_FALSE(f.cpus);
  EXPECT_FALSE(f.pids);
  EXPECT_EQ(value(home_ + "/cgroup.subtree_control"), "");
  EXPECT_EQ(value(home_ + "/cgroup.type"), "domain");
  CreateOptions c;
  c.memory_mib = 64;
  EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_INPUT);
  auto s = create();
  EXPECT_EQ(sh(s, "echo ok"), "ok\n");
  // the sleeper was left where it was
  EXPECT_EQ(value(home_ + "/cgroup.procs"), std::to_string(sleeper_));
  shutdown();
}

}  // namespace
}  // namespace mayura::testing
