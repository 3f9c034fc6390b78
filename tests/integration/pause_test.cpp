// Pause and resume: every process of a sandbox stopped at once by the
// kernel's freezer, and going on where it was.

#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using PauseTest = NativeTest;

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The only sandbox's cgroup2 directory (the test makes one at a time).
std::string only_cgroup(const std::string& root) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(root)) {
    if (e.is_directory()) found.push_back(e.path().string());
  }
  return found.size() == 1 ? found.front() : "";
}

bool frozen(const std::string& cgroup) {
  return text_of(cgroup + "/cgroup.events").find("frozen 1") != std::string::npos;
}

// Every process in a cgroup tree, by pid.
std::vector<pid_t> processes_under(const std::string& cgroup) {
  std::vector<pid_t> pids;
  for (const auto& e : fs::recursive_directory_iterator(cgroup)) {
    if (e.path().filename() != "cgroup.procs") continue;
    std::istringstream in(text_of(e.path().string()));
    for (pid_t pid; in >> pid;) pids.push_back(pid);
  }
  return pids;
}

// The counter the test's command keeps in /tmp/count, read from the host
// through the counting process's root (no call into the sandbox, which
// would resume it); -1 if it cannot be read.
long count_seen_by(pid_t pid) {
  const std::string text = text_of("/proc/" + std::to_string(pid) + "/root/tmp/count");
  return text.empty() ? -1 : std::atol(text.c_str());
}

// The process that counts: the one whose command line names the counter.
pid_t counter_in(const std::string& cgroup) {
  for (const pid_t pid : processes_under(cgroup)) {
    if (text_of("/proc/" + std::to_string(pid) + "/cmdline").find("i=0;") != std::string::npos) return pid;
  }
  return -1;
}

constexpr const char* kCounter =
    "setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count.new; mv /tmp/count.new /tmp/count; done' "
    ">/dev/null 2>&1 </dev/null &";

TEST_F(PauseTest, APausedSandboxsProcessesStopAndGoOnWhereTheyWere) {
  auto s = create();
  ASSERT_TRUE(s.features().pause);
  sh(s, kCounter);
  const std::string cgroup = only_cgroup(options().cgroup_root);
  ASSERT_FALSE(cgroup.empty());
  pid_t counter = -1;
  ASSERT_TRUE(eventually([&] { return (counter = counter_in(cgroup)) > 0 && count_seen_by(counter) > 0; }));
  s.pause();
  EXPECT_TRUE(s.paused());
  EXPECT_TRUE(frozen(cgroup));
  const long stopped_at = count_seen_by(counter);
  ASSERT_GT(stopped_at, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(count_seen_by(counter), stopped_at) << "the counter ran on while paused";
  // The counter is there still, stopped (its mv children come and go with
  // the freeze's moment: one forked as it came shows a moment later, one
  // exiting finishes exiting).
  const std::vector<pid_t> paused = processes_under(cgroup);
  EXPECT_NE(std::find(paused.begin(), paused.end(), counter), paused.end());

  s.resume();
  EXPECT_FALSE(s.paused());
  EXPECT_FALSE(frozen(cgroup));
  // The same process counts on from where it stopped, not from zero.
  ASSERT_TRUE(eventually([&] { return count_seen_by(counter) > stopped_at; }));
  EXPECT_EQ(::kill(counter, 0), 0);
  EXPECT_GT(std::stol(sh(s, "cat /tmp/count")), stopped_at);
}

TEST_F(PauseTest, PausingTwiceOrResumingARunningSandboxDoesNothing) {
  auto s = create();
  const std::string cgroup = only_cgroup(options().cgroup_root);
  s.resume();
  EXPECT_FALSE(s.paused());
  EXPECT_FALSE(frozen(cgroup));
  s.pause();
  s.pause();
  EXPECT_TRUE(s.paused());
  EXPECT_TRUE(frozen(cgroup));
  s.resume();
  s.resume();
  EXPECT_FALSE(frozen(cgroup));
  EXPECT_EQ(sh(s, "echo on"), "on\n");
}

// exec, the file calls: each resumes a paused sandbox first.
TEST_F(PauseTest, CallsOnAPausedSandboxResumeItFirst) {
  auto s = create();
  const std::string cgroup = only_cgroup(options().cgroup_root);
  s.pause();
  ExecOptions quick;
  quick.timeout_ms = 10'000;
  EXPECT_EQ(s.exec({"echo", "awake"}, quick).stdout, "awake\n");
  EXPECT_FALSE(s.paused());
  EXPECT_FALSE(frozen(cgroup));

  s.pause();
  s.write_file("/tmp/note", "kept");
  EXPECT_FALSE(s.paused());
  s.pause();
  EXPECT_EQ(s.read_file("/tmp/note"), "kept");
  EXPECT_FALSE(s.paused());
  s.pause();
  EXPECT_EQ(s.list("/tmp").size(), 1u);
  s.pause();
  s.remove("/tmp/note");
  EXPECT_FALSE(frozen(cgroup));
}

// A paused sandbox ends as a running one does: by release, and at the end
// of its lifetime, which runs on while it is paused. Nothing of it is left
// (the leak check).
TEST_F(PauseTest, APausedSandboxEndsByReleaseAndByItsLifetime) {
  auto a = create();
  sh(a, kCounter);
  a.pause();
  a.release();
  EXPECT_TRUE(eventually([&] { return only_cgroup(options().cgroup_root).empty(); }));

  CreateOptions brief;
  brief.lifetime_ms = 1500;
  auto b = create(brief);
  sh(b, kCounter);
  b.pause();
  EXPECT_TRUE(eventually([&] { return !fs::exists(only_cgroup(options().cgroup_root)); }));
  try {
    b.resume();
    ADD_FAILURE() << "a sandbox past its lifetime resumed";
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.reason(), Reason::GONE) << e.what();
  }
}

}  // namespace
}  // namespace mayura::testing
