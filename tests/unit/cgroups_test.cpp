// Cgroup host detection and the engine's placement, for every kind of host,
// from descriptions of them; and the parsing and error paths of the limit
// code against scratch files. What the kernel enforces is proved on real
// hierarchies, in every layout (tests/integration/limits_test.cpp, run in
// the VMs of tests/vm).

#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cgroup_host.hpp"
#include "cgroup_limits.hpp"
#include "cgroup_placement.hpp"
#include "mayura/errors.hpp"
#include "tenant_shares.hpp"

namespace mayura::cgroups {
namespace {

namespace fs = std::filesystem;

// A described host: which paths are cgroup2, the mount table, the files.
struct FakeHost {
  std::set<std::string> cgroup2_paths;
  std::string mountinfo;
  std::map<std::string, std::string> files;

  Probe probe() const {
    Probe p;
    p.mountinfo = mountinfo;
    p.fs_type = [this](const std::string& path) -> std::int64_t {
      return cgroup2_paths.count(path) ? CGROUP2_SUPER_MAGIC : TMPFS_MAGIC;
    };
    p.exists = [this](const std::string& path) { return files.count(path) > 0; };
    p.read = [this](const std::string& path) {
      auto it = files.find(path);
      return it == files.end() ? std::string() : it->second;
    };
    return p;
  }
};

std::string v1_line(int id, const std::string& dir, const std::string& options) {
  return std::to_string(id) + " 31 0:" + std::to_string(id) + " / /sys/fs/cgroup/" + dir +
         " rw,relatime - cgroup cgroup rw," + options + "\n";
}

// This machine's kind: cgroup2 at /sys/fs/cgroup/unified with only hugetlb,
// every other controller on its own v1 hierarchy.
FakeHost hybrid_host() {
  FakeHost h;
  h.cgroup2_paths = {"/sys/fs/cgroup/unified"};
  h.mountinfo = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" + v1_line(32, "cpu", "cpu") +
                v1_line(33, "cpuacct", "cpuacct") + v1_line(34, "cpuset", "cpuset") + v1_line(35, "memory", "memory") +
                v1_line(39, "pids", "pids") + "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  h.files["/sys/fs/cgroup/unified/cgroup.controllers"] = "hugetlb\n";
  h.files["/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes"] = "";
  return h;
}

TEST(CgroupHost, UnifiedHostEnforcesEverythingOnCgroup2) {
  FakeHost h;
  h.cgroup2_paths = {"/sys/fs/cgroup"};
  h.mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  h.files["/sys/fs/cgroup/cgroup.controllers"] = "cpuset cpu io memory hugetlb pids rdma misc\n";
  const Host host = detect(h.probe());
  EXPECT_EQ(host.layout, Layout::unified);
  EXPECT_EQ(host.v2, "/sys/fs/cgroup");
  EXPECT_TRUE(host.memory.v2 && host.cpu.v2 && host.pids.v2);
  EXPECT_TRUE(host.memory.v1.empty() && host.cpu.v1.empty() && host.pids.v1.empty());
  EXPECT_TRUE(host.swap_limit);
  const std::string line = host.describe();
  EXPECT_EQ(line.rfind("cgroups: unified (cgroup2 at /sys/fs/cgroup)", 0), 0u) << line;
  EXPECT_NE(line.find("enforces cpus [cgroup2], memory (no swap) [cgroup2], pids [cgroup2], disk I/O [cgroup2]"),
            std::string::npos)
      << line;
  EXPECT_EQ(line.find("cannot"), std::string::npos) << line;
}

TEST(CgroupHost, UnifiedHostWithoutAControllerSaysWhatItCannotEnforce) {
  FakeHost h;
  h.cgroup2_paths = {"/sys/fs/cgroup"};
  h.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu memory\n";
  const Host host = detect(h.probe());
  EXPECT_FALSE(host.pids.available());
  EXPECT_NE(host.describe().find("cannot enforce pids"), std::string::npos) << host.describe();
}

TEST(CgroupHost, HybridHostLikeThisOneLimitsOnV1) {
  const Host host = detect(hybrid_host().probe());
  EXPECT_EQ(host.layout, Layout::hybrid);
  EXPECT_EQ(host.v2, "/sys/fs/cgroup/unified");
  EXPECT_FALSE(host.memory.v2);
  EXPECT_EQ(host.memory.v1, "/sys/fs/cgroup/memory");
  EXPECT_EQ(host.cpu.v1, "/sys/fs/cgroup/cpu");  // not cpuset or cpuacct
  EXPECT_EQ(host.pids.v1, "/sys/fs/cgroup/pids");
  EXPECT_TRUE(host.swap_limit);
  EXPECT_NE(host.describe().find("hybrid"), std::string::npos);
  // v1's blkio cannot bound buffered writes: no disk I/O bound on v1.
  EXPECT_FALSE(host.io.available());
  EXPECT_NE(host.describe().find("cannot enforce disk I/O"), std::string::npos) << host.describe();
}

// A move waits for an RCU grace period unless some hierarchy favours
// dynamic changes: the report says so where a create moves (a limit's
// controller is there), and only there.
TEST(CgroupHost, ReportSaysWhenACreatesMoveWaitsForTheKernel) {
  FakeHost h = hybrid_host();
  Host host = detect(h.probe());
  EXPECT_FALSE(host.favor_dynmods);
  EXPECT_TRUE(host.moves_on_create());
  EXPECT_NE(host.describe().find("favordynmods"), std::string::npos) << host.describe();
  // pids on v1: every command moves too
  EXPECT_TRUE(host.moves_on_exec());
  EXPECT_NE(host.describe().find("so does each command"), std::string::npos) << host.describe();

  const std::string plain = "/sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  h.mountinfo.replace(h.mountinfo.find(plain), plain.size(),
                      "/sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,favordynmods\n");
  host = detect(h.probe());
  EXPECT_TRUE(host.favor_dynmods);
  EXPECT_EQ(host.describe().find("favordynmods"), std::string::npos) << host.describe();

  FakeHost unified;
  unified.cgroup2_paths = {"/sys/fs/cgroup"};
  unified.mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  unified.files["/sys/fs/cgroup/cgroup.controllers"] = "cpu memory pids\n";
  host = detect(unified.probe());
  EXPECT_TRUE(host.moves_on_create());
  EXPECT_NE(host.describe().find("favordynmods"), std::string::npos) << host.describe();
  // cgroup2 clones each command into its cgroup: no move
  EXPECT_FALSE(host.moves_on_exec());
  EXPECT_EQ(host.describe().find("so does each command"), std::string::npos) << host.describe();
  unified.files["/sys/fs/cgroup/cgroup.controllers"] = "hugetlb\n";  // no limit: the init stays where it was cloned
  host = detect(unified.probe());
  EXPECT_FALSE(host.moves_on_create());
  EXPECT_EQ(host.describe().find("favordynmods"), std::string::npos) << host.describe();
}

TEST(CgroupHost, ControllersOnCgroup2WinOverNone) {
  FakeHost h = hybrid_host();
  // a hybrid host whose cgroup2 has pids (and no v1 pids hierarchy)
  h.mountinfo.erase(h.mountinfo.find(v1_line(39, "pids", "pids")), v1_line(39, "pids", "pids").size());
  h.files["/sys/fs/cgroup/unified/cgroup.controllers"] = "hugetlb pids\n";
  const Host host = detect(h.probe());
  EXPECT_TRUE(host.pids.v2);
  EXPECT_TRUE(host.pids.v1.empty());
  EXPECT_EQ(host.memory.v1, "/sys/fs/cgroup/memory");
}

TEST(CgroupHost, ComountedCpuHierarchyIsFoundByItsOptions) {
  FakeHost h;
  h.mountinfo = v1_line(32, "cpu,cpuacct", "cpu,cpuacct") + v1_line(34, "cpuset", "cpuset");
  const Host host = detect(h.probe());
  EXPECT_EQ(host.cpu.v1, "/sys/fs/cgroup/cpu,cpuacct");
}

TEST(CgroupHost, LegacyHostHasNoCgroup2AndSaysTheEngineMountsOne) {
  FakeHost h = hybrid_host();
  h.cgroup2_paths.clear();
  h.mountinfo.erase(h.mountinfo.find("41 31"));
  h.files.erase("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes");  // no swap accounting
  const Host host = detect(h.probe());
  EXPECT_EQ(host.layout, Layout::legacy);
  EXPECT_TRUE(host.v2.empty());
  EXPECT_EQ(host.memory.v1, "/sys/fs/cgroup/memory");
  EXPECT_FALSE(host.swap_limit);
  EXPECT_NE(host.describe().find("mounts a cgroup2 of its own"), std::string::npos) << host.describe();
  EXPECT_NE(host.describe().find("memory [v1"), std::string::npos) << host.describe();
}

TEST(CgroupHost, Cgroup2MountedElsewhereMakesAHybridHost) {
  FakeHost h = hybrid_host();
  h.cgroup2_paths.clear();
  h.mountinfo.replace(h.mountinfo.find("/sys/fs/cgroup/unified"), 22, "/run/cg2");
  const Host host = detect(h.probe());
  EXPECT_EQ(host.layout, Layout::hybrid);
  EXPECT_EQ(host.v2, "/run/cg2");
}

TEST(CgroupHost, TheHierarchyAnEngineMountedKeepsALegacyHostLegacy) {
  FakeHost h = hybrid_host();
  h.cgroup2_paths.clear();
  h.mountinfo.replace(h.mountinfo.find("/sys/fs/cgroup/unified"), 22, kEngineCgroup2);
  const Host host = detect(h.probe());
  EXPECT_EQ(host.layout, Layout::legacy);
  EXPECT_EQ(host.v2, kEngineCgroup2);
}

TEST(CgroupHost, AV1HierarchyMountedBelowItsRootIsNotUsed) {
  FakeHost h;
  // a container's view: the host's hierarchy from one of its cgroups down
  h.mountinfo = "35 31 0:32 /docker/abc /sys/fs/cgroup/memory ro,relatime - cgroup cgroup rw,memory\n";
  const Host host = detect(h.probe());
  EXPECT_FALSE(host.memory.available());
  EXPECT_NE(host.describe().find("cannot enforce cpus, memory, pids"), std::string::npos) << host.describe();
}

TEST(CgroupHost, ThisMachineIsDetectedAsItsFileSystemsSay) {
  auto fs_type = [](const char* path) -> std::int64_t {
    struct statfs fs {};
    return ::statfs(path, &fs) == 0 ? static_cast<std::int64_t>(fs.f_type) : 0;
  };
  const Host host = detect_host();
  EXPECT_EQ(host.layout == Layout::unified, fs_type("/sys/fs/cgroup") == CGROUP2_SUPER_MAGIC);
  if (host.layout == Layout::legacy) {
    EXPECT_TRUE(host.v2.empty() || host.v2 == kEngineCgroup2) << host.v2;
  } else {
    EXPECT_EQ(fs_type(host.v2.c_str()), CGROUP2_SUPER_MAGIC) << host.v2;
  }
  for (const Controller* c : {&host.memory, &host.cpu, &host.pids}) {
    if (!c->v1.empty()) {
      EXPECT_EQ(fs_type(c->v1.c_str()), CGROUP_SUPER_MAGIC) << c->v1;
    }
  }
}

// --- the limit code's parsing and errors, on scratch files --------------

class ScratchCgroupfs : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/mayura-scratch-cgroupfs-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    root_ = dir;
    // what the kernel shows for a sandbox's cgroup with every controller on
    sandbox_ = root_ / "mayura" / "0123456789abcdef";
    commands_ = sandbox_ / "commands";
    fs::create_directories(commands_);
    for (const char* f :
         {"cgroup.procs", "cgroup.subtree_control", "memory.max", "memory.swap.max", "cpu.max", "memory.events"}) {
      write(sandbox_ / f, "");
    }
    for (const char* f : {"cgroup.procs", "pids.max"}) write(commands_ / f, "");
    for (const fs::path& d : {root_, root_ / "mayura"}) write(d / "cgroup.subtree_control", "");
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  static std::string read(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static int open_dir(const fs::path& p) { return ::open(p.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); }

  static Host v2_host() {
    Host h;
    h.layout = Layout::unified;
    h.v2 = "/sys/fs/cgroup";
    h.memory.v2 = h.cpu.v2 = h.pids.v2 = true;
    h.swap_limit = true;
    return h;
  }

  fs::path root_, sandbox_, commands_;
};

TEST_F(ScratchCgroupfs, AKernelWithoutSwapAccountingNeedsNoSwapFile) {
  fs::remove(sandbox_ / "memory.swap.max");
  const UniqueFd sandbox(open_dir(sandbox_)), commands(open_dir(commands_));
  Limits limits;
  limits.memory_bytes = 1 << 24;
  EXPECT_NO_THROW(apply_v2(sandbox.get(), commands.get(), v2_host(), limits, true));
  EXPECT_EQ(read(sandbox_ / "memory.max"), "16777216");
}

TEST_F(ScratchCgroupfs, AMissingLimitFileIsAnErrorNamingIt) {
  fs::remove(sandbox_ / "cpu.max");
  const UniqueFd sandbox(open_dir(sandbox_)), commands(open_dir(commands_));
  try {
    apply_v2(sandbox.get(), commands.get(), v2_host(), Limits{}, true);
    FAIL() << "no error";
  } catch (const SandboxError& e) {
    EXPECT_NE(std::string(e.what()).find("cpu.max"), std::string::npos) << e.what();
  }
}

TEST_F(ScratchCgroupfs, OomKillsAreReadFromMemoryEvents) {
  write(sandbox_ / "memory.events", "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n");
  const UniqueFd sandbox(open_dir(sandbox_));
  EXPECT_EQ(v2_oom_kills(sandbox.get()), 2u);
  // opened for each read, so a later read sees the file as it is then
  write(sandbox_ / "memory.events", "low 0\nhigh 0\nmax 13\noom 4\noom_kill 3\noom_group_kill 0\n");
  EXPECT_EQ(v2_oom_kills(sandbox.get()), 3u);
  EXPECT_EQ(read_oom_kills(-1), 0u);
}

TEST_F(ScratchCgroupfs, V1GroupsMadeHalfWayAreRemovedWhenTheRestFails) {
  // memory's hierarchy is there, cpu's is not: making the groups fails
  // after memory's group was made, and that one must not be left.
  Host host;
  host.memory.v1 = (root_ / "memory").string();
  host.cpu.v1 = (root_ / "no-such-hierarchy").string();
  fs::create_directory(root_ / "memory");
  EXPECT_THROW(V1Groups(host, "mayura", "0123456789abcdef", RootTotals{}), SandboxError);
  EXPECT_FALSE(fs::exists(root_ / "memory" / "mayura" / "0123456789abcdef"));
}

// --- where the engine puts its sandboxes ----------------------------------

TEST(CgroupPlacement, OwnCgroupIsReadFromTheUnifiedLine) {
  EXPECT_EQ(own_cgroup("0::/system.slice/mayurad.service\n"), "/system.slice/mayurad.service");
  EXPECT_EQ(own_cgroup("12:pids:/user.slice\n4:memory:/x\n0::/user.slice/user-0.slice/session-1.scope\n"),
            "/user.slice/user-0.slice/session-1.scope");
  EXPECT_EQ(own_cgroup("0::/\n"), "");
  // outside our cgroup namespace: nothing to reason about below it
  EXPECT_EQ(own_cgroup("0::/../../x\n"), "");
  EXPECT_EQ(own_cgroup("0::/a/b (deleted)\n"), "/a/b");
  EXPECT_EQ(own_cgroup("4:memory:/x\n"), "");
}

auto delegated_at(std::set<std::string> dirs) {
  return [dirs = std::move(dirs)](const std::string& dir) { return dirs.count(dir) > 0; };
}

TEST(CgroupPlacement, TheRootCgroupPutsSandboxesAtTheTop) {
  const Placement p = plan_placement("/sys/fs/cgroup", "", "", delegated_at({}));
  EXPECT_EQ(p.root, "/sys/fs/cgroup/mayura");
  EXPECT_EQ(p.base, "/sys/fs/cgroup");
  EXPECT_EQ(p.home, "");
  EXPECT_NE(p.how.find("root cgroup"), std::string::npos) << p.how;
}

TEST(CgroupPlacement, ADelegatedServiceKeepsSandboxesInItsSubtreeAndTheEngineInALeaf) {
  const std::string service = "/sys/fs/cgroup/system.slice/mayurad.service";
  const Placement p = plan_placement("/sys/fs/cgroup", "/system.slice/mayurad.service", "", delegated_at({service}));
  EXPECT_EQ(p.root, service + "/mayura");
  EXPECT_EQ(p.base, service);
  EXPECT_EQ(p.home, service);
  EXPECT_NE(p.how.find(service + "/engine"), std::string::npos) << p.how;
  // started again after it moved: the same subtree, nothing more to move but what came since
  const Placement again =
      plan_placement("/sys/fs/cgroup", "/system.slice/mayurad.service/engine", "", delegated_at({service}));
  EXPECT_EQ(again.root, service + "/mayura");
  EXPECT_EQ(again.home, service);
}

TEST(CgroupPlacement, ALoginSessionThatIsNotDelegatedUsesTheTopOfTheHierarchy) {
  const Placement p =
      plan_placement("/sys/fs/cgroup", "/user.slice/user-0.slice/session-1.scope", "", delegated_at({}));
  EXPECT_EQ(p.root, "/sys/fs/cgroup/mayura");
  EXPECT_EQ(p.home, "");
  EXPECT_NE(p.how.find("not delegated"), std::string::npos) << p.how;
}

TEST(CgroupPlacement, AConfiguredRootIsUsedAsItIs) {
  Placement p =
      plan_placement("/sys/fs/cgroup", "/user.slice/s.scope", "/sys/fs/cgroup/elsewhere/sandboxes", delegated_at({}));
  EXPECT_EQ(p.root, "/sys/fs/cgroup/elsewhere/sandboxes");
  EXPECT_EQ(p.home, "");
  // below the engine's own cgroup: the engine must leave it for a leaf
  p = plan_placement("/sys/fs/cgroup", "/system.slice/x.service", "/sys/fs/cgroup/system.slice/x.service/sandboxes",
                     delegated_at({}));
  EXPECT_EQ(p.home, "/sys/fs/cgroup/system.slice/x.service");
  // moved into that cgroup's leaf already (by another engine started at once
  // there): the cgroup it was moved from is still the one to keep empty
  p = plan_placement("/sys/fs/cgroup", "/system.slice/x.service/engine",
                     "/sys/fs/cgroup/system.slice/x.service/sandboxes", delegated_at({}));
  EXPECT_EQ(p.home, "/sys/fs/cgroup/system.slice/x.service");
  // a leaf of that name elsewhere counts for nothing
  p = plan_placement("/sys/fs/cgroup", "/system.slice/x.service/engine", "/sys/fs/cgroup/elsewhere/sandboxes",
                     delegated_at({}));
  EXPECT_EQ(p.home, "");
  p = plan_placement("/sys/fs/cgroup", "/engine", "/sys/fs/cgroup/sandboxes", delegated_at({}));
  EXPECT_EQ(p.home, "");
  // below the root cgroup: the root may hold processes, nothing moves
  p = plan_placement("/sys/fs/cgroup", "", "/sys/fs/cgroup/sandboxes", delegated_at({}));
  EXPECT_EQ(p.home, "");
}

TEST(CgroupPlacement, TheNearestDelegatedAncestorCounts) {
  const std::string user = "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service";
  const Placement p =
      plan_placement("/sys/fs/cgroup", "/user.slice/user-1000.slice/user@1000.service/app.slice/agent.service", "",
                     delegated_at({user}));
  EXPECT_EQ(p.root, user + "/mayura");
  EXPECT_EQ(p.home, user);
}

TEST(CgroupLimits, CpuQuotaIsPerPeriodWithTheKernelsMinimum) {
  EXPECT_EQ(cpu_quota_us(1.5), 150000u);
  EXPECT_EQ(cpu_quota_us(2), 200000u);
  EXPECT_EQ(cpu_quota_us(0.001), 1000u);
}

// A tenant's weight halves each time its sandboxes pass a power of two, down
// to the kernel's least.
TEST(TenantShares, ASandboxWeighsItsTenantsShareOverItsCountRoundedUp) {
  using native::TenantShares;
  EXPECT_EQ(TenantShares::weight_for(0), 1024u);
  EXPECT_EQ(TenantShares::weight_for(1), 1024u);
  EXPECT_EQ(TenantShares::weight_for(2), 512u);
  EXPECT_EQ(TenantShares::weight_for(3), 256u);
  EXPECT_EQ(TenantShares::weight_for(4), 256u);
  EXPECT_EQ(TenantShares::weight_for(5), 128u);
  EXPECT_EQ(TenantShares::weight_for(1024), 1u);
  EXPECT_EQ(TenantShares::weight_for(100000), 1u);
}

// Members count in their tenant until they leave, by hand or by going; a
// sandbox with no tenant counts in none. (Cgroups of no host: nothing is
// written.)
TEST(TenantShares, MembersCountInTheirTenantUntilTheyLeave) {
  const auto shares = std::make_shared<native::TenantShares>();
  const SandboxCgroup a, b, c;
  native::TenantShares::Member first = shares->join("uid:1000", a);
  {
    native::TenantShares::Member second = shares->join("uid:1000", b);
    native::TenantShares::Member own = shares->join("", c);
    EXPECT_EQ(shares->count("uid:1000"), 2u);
    EXPECT_EQ(shares->count(""), 0u);
    native::TenantShares::Member moved = std::move(second);
    EXPECT_EQ(shares->count("uid:1000"), 2u);
  }
  EXPECT_EQ(shares->count("uid:1000"), 1u);
  first.leave();
  first.leave();
  EXPECT_EQ(shares->count("uid:1000"), 0u);
}

}  // namespace
}  // namespace mayura::cgroups
