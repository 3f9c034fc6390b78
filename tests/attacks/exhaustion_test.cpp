// Exhaustion: memory, processes, cpu, tmpfs bytes and inodes, and output are
// bounded per sandbox, and a sandbox at its bound leaves the others and the
// engine answering.

#include <chrono>
#include <future>
#include <thread>

#include "attack.hpp"

namespace mayura::testing {
namespace {

using ExhaustionTest = AttackTest;

// Processes of the options' id range running `comm`. A zombie runs nothing:
// a killed command's processes are gone from its cgroup at once, but the
// sandbox's init reaps them a moment later.
int running(const NativeOptions& o, const std::string& comm) {
  int n = 0;
  for (pid_t pid : processes_in_range(o)) {
    const std::string proc = "/proc/" + std::to_string(pid);
    const std::string stat = read_host(proc + "/stat");
    const auto close = stat.rfind(')');
    const bool zombie = close != std::string::npos && stat.compare(close + 1, 3, " Z ") == 0;
    if (!zombie && read_host(proc + "/comm") == comm + "\n") ++n;
  }
  return n;
}

TEST_F(ExhaustionTest, AMemoryBombIsKilledAndTheRestAnswers) {
  CreateOptions o;
  o.memory_mib = 64;
  auto bomb = create(o);
  auto other = create();
  install_probe(bomb);
  auto during = std::async(std::launch::async, [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return other.exec({"/bin/sh", "-c", "echo other"});
  });
  ExecOptions eo;
  eo.timeout_ms = 15000;
  const ExecResult r = bomb.exec({"/workspace/probe", "mem"}, eo);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 137);
  EXPECT_TRUE(r.oom_killed);
  EXPECT_EQ(during.get().stdout, "other\n");
  EXPECT_EQ(sh(bomb, "echo after"), "after\n");
  EXPECT_EQ(sh(other, "echo after"), "after\n");
  EXPECT_EQ(running(options(), "probe"), 0);
}

TEST_F(ExhaustionTest, AForkBombHitsItsPidsBound) {
  CreateOptions o;
  o.pids = 64;
  auto bomb = create(o);
  auto other = create();
  install_probe(bomb);
  bomb.write_file("/workspace/note", "readable during the bomb");
  ExecOptions eo;
  eo.timeout_ms = 3000;
  auto bombing = std::async(std::launch::async, [&] { return bomb.exec({"/workspace/probe", "forkbomb"}, eo); });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  // the bound holds while it runs
  EXPECT_LE(running(options(), "probe"), 64);
  // the file helper is outside the commands' bound
  EXPECT_EQ(bomb.read_file("/workspace/note"), "readable during the bomb");
  // another sandbox runs a command meanwhile
  EXPECT_EQ(sh(other, "echo other"), "other\n");
  const ExecResult r = bombing.get();
  EXPECT_TRUE(r.timed_out);
  // nothing of it runs once the exec returned
  EXPECT_EQ(running(options(), "probe"), 0);
  EXPECT_EQ(sh(bomb, "echo after"), "after\n");
}

TEST_F(ExhaustionTest, CpuIsBoundedAndTheOthersRun) {
  CreateOptions o;
  o.cpus = 0.5;
  auto busy = create(o);
  auto other = create();
  install_probe(busy);
  auto spinning = std::async(std::launch::async, [&] { return probe(busy, {"busy", "1500", "2"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(sh(other, "echo other"), "other\n");
  auto r = spinning.get();
  ASSERT_EQ(r.count("cpu_ms"), 1u);
  // two spinning threads for 1.5 s would use 3 s unbounded; half a cpu is
  // 0.75 s, plus a period of slack. Only an upper bound.
  EXPECT_LE(std::stol(r["cpu_ms"]), 1100) << r["cpu_ms"];
}

TEST_F(ExhaustionTest, TheWorkspaceHoldsOnlyItsBytes) {
  options().workdir_mib = 8;
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"fill", "/workspace/big", std::to_string(20u << 20)});
  EXPECT_EQ(r["fill"], "ENOSPC");
  EXPECT_LE(std::stoull(r["written"]), 8ull << 20);
  sh(s, "rm /workspace/big");
  EXPECT_EQ(sh(s, "echo ok > /workspace/small && cat /workspace/small"), "ok\n");
}

TEST_F(ExhaustionTest, TheWorkspaceHoldsOnlyItsInodes) {
  options().tmpfs_inodes = 300;
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"files", "/workspace/many", "1000"});
  EXPECT_EQ(r["files"], "ENOSPC");
  EXPECT_LE(std::stoi(r["created"]), 300);
}

TEST_F(ExhaustionTest, AnOutputFloodIsTruncated) {
  auto s = create();
  ExecOptions eo;
  eo.timeout_ms = 1500;
  eo.max_output_bytes = 1u << 20;
  const ExecResult r = s.exec({"/bin/sh", "-c", "yes & yes >&2; wait"}, eo);
  EXPECT_TRUE(r.truncated);
  EXPECT_LE(r.stdout.size(), 1u << 20);
  EXPECT_LE(r.stderr.size(), 1u << 20);
  EXPECT_GT(r.stdout.size(), 0u);
  EXPECT_EQ(running(options(), "yes"), 0);
  EXPECT_EQ(sh(s, "echo after"), "after\n");
}

}  // namespace
}  // namespace mayura::testing
