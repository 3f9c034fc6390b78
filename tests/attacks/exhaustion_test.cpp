// Exhaustion: memory, processes, cpu, tmpfs bytes and inodes, and output are
// bounded per sandbox, and a sandbox at its bound leaves the others and the
// engine answering.

#include <chrono>
#include <filesystem>
#include <future>
#include <sstream>
#include <system_error>
#include <thread>

#include "engine/cgroups.hpp"
#include "tests/support/output_event.hpp"
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

// The commands' cgroup of the one sandbox there is, on the hierarchy that
// carries pids ("" unless there is exactly one).
std::string only_sandboxs_commands(const NativeOptions& o) {
  namespace fs = std::filesystem;
  const cgroups::Host host = cgroups::detect_host();
  const std::string base =
      host.pids.v2 ? o.cgroup_root : host.pids.v1 + "/" + fs::path(o.cgroup_root).filename().string();
  std::vector<std::string> sandboxes;
  for (const auto& e : fs::directory_iterator(base)) {
    if (e.is_directory()) sandboxes.push_back(e.path());
  }
  EXPECT_EQ(sandboxes.size(), 1u) << base;
  return sandboxes.size() == 1 ? sandboxes.front() + "/commands" : "";
}

// Forks refused by a pids bound ("max" in pids.events), summed over `dir`
// and every cgroup below it: on v1, on older kernels and with
// pids_localevents the kernel counts one in the forking process's cgroup (a
// command's, below `dir`); else in the cgroup whose bound was hit (`dir`) and
// those above. -1 if `dir` has no pids.events.
long pids_max_events(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::exists(dir + "/pids.events")) return -1;
  long n = 0;
  auto add = [&](const fs::path& cgroup) {
    std::istringstream in(read_host(cgroup / "pids.events"));
    std::string key;
    long count = 0;
    while (in >> key >> count) {
      if (key == "max") n += count;
    }
  };
  add(dir);
  std::error_code gone;  // a command's cgroup may go while this walks
  for (fs::recursive_directory_iterator it(dir, gone), end; !gone && it != end; it.increment(gone)) {
    if (it->is_directory(gone)) add(it->path());
  }
  return n;
}

TEST_F(ExhaustionTest, AMemoryBombIsKilledAndTheRestAnswers) {
  CreateOptions o;
  o.memory_mib = 64;
  auto bomb = create(o);
  auto other = create();
  install_probe(bomb);
  // The bomb first holds 48 of its 64 MiB and says so, then waits for the
  // test: the other sandbox answers while the bomb provably holds most of its
  // bound, and only then is the bomb let go to be killed.
  OutputEvent out;
  ExecOptions eo;
  eo.timeout_ms = 60000;
  eo.on_stdout = out.sink();
  auto bombing = std::async(std::launch::async, [&] {
    return bomb.exec({"/workspace/probe", "mem", "48", "/workspace/go"}, eo);
  });
  ASSERT_TRUE(out.wait_for("mem=holding\n")) << out.seen();
  EXPECT_EQ(sh(other, "echo other"), "other\n");
  EXPECT_EQ(bombing.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the bomb ended before the other sandbox was asked";
  bomb.write_file("/workspace/go", "");
  const ExecResult r = bombing.get();
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 137);
  EXPECT_TRUE(r.oom_killed);
  EXPECT_EQ(sh(bomb, "echo after"), "after\n");
  EXPECT_EQ(sh(other, "echo after"), "after\n");
  EXPECT_EQ(running(options(), "probe"), 0);
}

TEST_F(ExhaustionTest, AForkBombHitsItsPidsBound) {
  CreateOptions o;
  o.pids = 64;
  auto bomb = create(o);
  const std::string commands = only_sandboxs_commands(options());  // (made before the other's)
  const long refused_before = pids_max_events(commands);
  ASSERT_GE(refused_before, 0) << commands;
  auto other = create();
  install_probe(bomb);
  bomb.write_file("/workspace/note", "readable during the bomb");
  // A process of the bomb whose fork failed says so: the checks below run
  // once the bomb is at its bound, and must end before its timeout does.
  OutputEvent out;
  ExecOptions eo;
  eo.timeout_ms = 10000;
  eo.on_stdout = out.sink();
  auto bombing = std::async(std::launch::async, [&] { return bomb.exec({"/workspace/probe", "forkbomb"}, eo); });
  // a fork failed, and for want of pids: the kernel counted the refusal
  // against the bound (before the fork returned EAGAIN) in the bomb's cgroups
  ASSERT_TRUE(out.wait_for("fork=EAGAIN\n")) << out.seen();
  const long refused = pids_max_events(commands);
  RecordProperty("pids_max_events", static_cast<int>(refused - refused_before));
  EXPECT_GT(refused, refused_before) << "EAGAIN, but no fork refused at pids.max in " << commands;
  // the bound holds while it runs
  const int at_bound = running(options(), "probe");
  EXPECT_LE(at_bound, 64);
  EXPECT_GT(at_bound, 1);
  // the file helper is outside the commands' bound
  EXPECT_EQ(bomb.read_file("/workspace/note"), "readable during the bomb");
  // another sandbox runs a command meanwhile
  EXPECT_EQ(sh(other, "echo other"), "other\n");
  EXPECT_EQ(bombing.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the bomb ended before the checks meant to run during it were done";
  const ExecResult r = bombing.get();
  EXPECT_TRUE(r.timed_out);
  // every fork that failed failed so: nothing but the pids bound stopped it
  for (std::size_t at = 0, end; (end = r.stdout.find('\n', at)) != std::string::npos; at = end + 1) {
    EXPECT_EQ(r.stdout.substr(at, end - at), "fork=EAGAIN");
  }
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
  // Two threads spin until the test has had the other sandbox answer; they
  // say when they spin, and the exec must still run when the answer came.
  // (That the half cpu is enforced is shown by the cgroup's throttling in
  // limits_test, not by a clock here.)
  OutputEvent out;
  ExecOptions eo;
  eo.timeout_ms = 60000;
  eo.on_stdout = out.sink();
  auto spinning = std::async(std::launch::async, [&] {
    return busy.exec({"/workspace/probe", "busy-until", "/workspace/stop", "2"}, eo);
  });
  ASSERT_TRUE(out.wait_for("busy=spinning\n")) << out.seen();
  EXPECT_EQ(sh(other, "echo other"), "other\n");
  EXPECT_EQ(spinning.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the spinning ended before the other sandbox answered";
  busy.write_file("/workspace/stop", "");
  const ExecResult r = spinning.get();
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(parse_results(r.stdout).count("cpu_ms"), 1u) << r.stdout;
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

// A flood of a known size (4 MiB on each stream) is cut at the bound, with
// no timeout to race: an emulated cpu once spent the whole 1.5 s timeout of
// an endless flood before 1 MiB of it had come out.
TEST_F(ExhaustionTest, AnOutputFloodIsTruncated) {
  auto s = create();
  ExecOptions eo;
  eo.timeout_ms = 120'000;
  eo.max_output_bytes = 1u << 20;
  const ExecResult r = s.exec({"/bin/sh", "-c", "yes | head -c 4194304 & yes | head -c 4194304 >&2; wait"}, eo);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.stdout.size(), 1u << 20);
  EXPECT_EQ(r.stderr.size(), 1u << 20);
  EXPECT_EQ(r.stdout.substr(0, 4), "y\ny\n");
  EXPECT_EQ(sh(s, "echo after"), "after\n");
}

// An endless flood on both streams ends at its timeout, held to the bound,
// with every process it started gone.
TEST_F(ExhaustionTest, AnEndlessFloodEndsAtItsTimeoutWithinTheBound) {
  auto s = create();
  ExecOptions eo;
  eo.timeout_ms = 1500;
  eo.max_output_bytes = 1u << 20;
  const ExecResult r = s.exec({"/bin/sh", "-c", "yes & yes >&2; wait"}, eo);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_LE(r.stdout.size(), 1u << 20);
  EXPECT_LE(r.stderr.size(), 1u << 20);
  EXPECT_EQ(running(options(), "yes"), 0);
  EXPECT_EQ(sh(s, "echo after"), "after\n");
}

}  // namespace
}  // namespace mayura::testing
