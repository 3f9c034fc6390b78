// Lifetimes, release, and what a dead engine leaves behind.

#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <sstream>
#include <fstream>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_future.hpp>

#include "harness.hpp"
#include "tests/support/runtime_threads.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using LifetimeTest = NativeTest;

int cgroups_under(const std::string& root) {
  int n = 0;
  if (!fs::exists(root)) return 0;
  for (const auto& e : fs::directory_iterator(root)) n += e.is_directory() ? 1 : 0;
  return n;
}

// A process's nice value (field 19 of its stat; "" once it is gone).
std::string nice_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string stat((std::istreambuf_iterator<char>(in)), {});
  const std::size_t name_end = stat.rfind(')');
  if (name_end == std::string::npos) return "";
  std::istringstream fields(stat.substr(name_end + 1));  // after the name: field 3 on
  std::string f;
  for (int i = 3; i <= 19 && fields >> f; ++i) {
  }
  return f;
}

TEST_F(LifetimeTest, ReleaseEndsEverythingAndLaterCallsAreGone) {
  options().prepared = 0;  // no sandbox is being made ahead meanwhile
  auto s = create();
  sh(s, "setsid sleep 1000 >/dev/null 2>&1 </dev/null &");
  // And one that forks as fast as it can, which a kill by listing would miss.
  sh(s, "setsid sh -c 'while :; do /bin/true; done' >/dev/null 2>&1 </dev/null &");
  EXPECT_EQ(cgroups_under(options().cgroup_root), 1);
  EXPECT_FALSE(processes_in_range(options()).empty());
  s.release();
  // Release returns once nothing of the sandbox can run: every process has
  // exited or has SIGKILL pending. The removal finishes off the caller's path.
  EXPECT_EQ(processes_able_to_run(options()), std::vector<pid_t>{});
  EXPECT_TRUE(eventually([&] { return processes_in_range(options()).empty(); }));
  EXPECT_TRUE(eventually([&] { return cgroups_under(options().cgroup_root) == 0; }));
  EXPECT_EQ(reason_of([&] { s.exec({"true"}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.read_file("x"); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.write_file("x", "y"); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.list("."); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { s.remove("x"); }), Reason::GONE);
  s.release();
}

TEST_F(LifetimeTest, TheProviderEndsASandboxAtItsLifetime) {
  CreateOptions c;
  // Long enough for the first command to start on a slow machine (the test
  // VMs emulate their cpu; 2 s was once too short there, on a loaded host):
  // the second one is what the lifetime ends.
  c.lifetime_ms = 5000;
  auto s = create(c);
  sh(s, "setsid sleep 1000 >/dev/null 2>&1 </dev/null &");
  // a command running when the lifetime ends fails GONE
  EXPECT_EQ(reason_of([&] { s.exec({"sleep", "1000"}); }), Reason::GONE);
  // nothing of it can run once GONE is said, and the provider removes it,
  // without anyone calling release (the removal may finish just after)
  EXPECT_EQ(processes_able_to_run(options()), std::vector<pid_t>{});
  EXPECT_TRUE(eventually([&] { return processes_in_range(options()).empty(); }));
  EXPECT_TRUE(eventually([&] { return cgroups_under(options().cgroup_root) == 0; }));
  EXPECT_EQ(reason_of([&] { s.exec({"true"}); }), Reason::GONE);
  EXPECT_EQ(sandboxes().size(), 0u);
}

TEST_F(LifetimeTest, CloseReleasesEverySandbox) {
  options().prepared = 0;  // no sandbox is being made ahead meanwhile
  auto a = create();
  auto b = create();
  sandboxes().close();
  EXPECT_EQ(processes_able_to_run(options()), std::vector<pid_t>{});
  EXPECT_TRUE(eventually([&] { return processes_in_range(options()).empty(); }));
  EXPECT_EQ(reason_of([&] { a.exec({"true"}); }), Reason::GONE);
  EXPECT_EQ(reason_of([&] { create(); }), Reason::GONE);
}

TEST_F(LifetimeTest, AnEngineStartedAfterOneWasKilledRemovesWhatItLeft) {
  // The doomed engine runs in a child process with our options. Its inits
  // exit when its sockets close; as on any host, whoever adopts orphans reaps
  // them (here: this test, not this machine's pid 1, which never does).
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const NativeOptions o = options();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    try {
      SandboxesOptions l;
      l.max_sandboxes = 2;
      auto sbs = create_sandboxes(native_sandboxes(o), l);
      CreateOptions c;
      c.lifetime_ms = 600'000;
      auto s1 = sbs.create(c);
      auto s2 = sbs.create(c);
      s1.exec({"/bin/sh", "-c", "setsid sleep 1000 >/dev/null 2>&1 </dev/null &"});
      [[maybe_unused]] auto n = ::write(ready[1], "r", 1);
      ::pause();
    } catch (...) {
    }
    ::_exit(1);
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1);
  ::close(ready[0]);
  EXPECT_EQ(cgroups_under(o.cgroup_root), 2);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // Its zygote and both inits end by themselves (reaped here, or the inits
  // by the zygote before it went).
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    const pid_t reaped = ::waitpid(-1, nullptr, WNOHANG | __WALL);
    if (reaped < 0 && processes_in_range(o).empty()) break;
    if (reaped <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(processes_in_range(o).empty());
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  // What it left: cgroups (its inits die with its socket, but nothing removes
  // their cgroups) and records. (Nothing of it runs any more, so no wait
  // could change this.)
  EXPECT_EQ(cgroups_under(o.cgroup_root), 2);
  // A new engine on the same state cleans up before it does anything else.
  sandboxes();
  EXPECT_EQ(cgroups_under(o.cgroup_root), 0);
  EXPECT_TRUE(processes_in_range(o).empty());
  auto s = create();
  EXPECT_EQ(sh(s, "echo alive"), "alive\n");
}

TEST_F(LifetimeTest, DroppingEveryHandleReleases) {
  options().prepared = 0;  // no sandbox is being made ahead meanwhile
  { auto s = create(); }
  EXPECT_EQ(processes_able_to_run(options()), std::vector<pid_t>{});
  EXPECT_TRUE(eventually([&] { return processes_in_range(options()).empty(); }));
  EXPECT_TRUE(eventually([&] { return cgroups_under(options().cgroup_root) == 0; }));
}

// Every thread the provider started is joined when it goes: its runtime's
// reactor and blocking threads, and its background loops.
TEST_F(LifetimeTest, DestroyingTheProviderLeavesNoThreadOfIt) {
  using boost::asio::use_future;
  // Asio's system executor, where completions go when no executor is named,
  // keeps its threads for the process: started before the count.
  std::promise<void> warm;
  boost::asio::post(boost::asio::system_executor(), [&] { warm.set_value(); });
  warm.get_future().wait();
  const auto before = threads_by_name();
  {
    CreateOptions create;
    create.lifetime_ms = 60'000;
    Sandbox s = sandboxes().async_create(create, use_future).get();
    EXPECT_EQ(s.async_exec({"/bin/sh", "-c", "echo hi"}, ExecOptions{}, use_future).get().stdout, "hi\n");
    s.async_write_file("f", "x", use_future).get();
    EXPECT_EQ(s.async_read_file("f", use_future).get(), "x");
    s.async_set_network(Network{}, use_future).get();
    s.async_release(use_future).get();
    EXPECT_TRUE(wait_for_named("mayura-reactor", 2, std::chrono::seconds(10)));
    EXPECT_TRUE(wait_for_named("mayura-blocking", 1, std::chrono::seconds(10)));
    auto during = threads_by_name();
    EXPECT_EQ(during["mayura-cleaner"], 1);
    EXPECT_EQ(during["mayura-network"], 1);
  }
  shutdown();
  EXPECT_TRUE(wait_for_threads(before, std::chrono::seconds(10))) << [&] {
    std::string left;
    for (const auto& [name, n] : threads_by_name()) left += name + " x" + std::to_string(n) + "; ";
    return left;
  }();
}

TEST_F(LifetimeTest, ManySandboxesAtOnceEachWithItsOwnIds) {
  limits_.max_sandboxes = 6;
  sandboxes();
  std::vector<Sandbox> all;
  std::vector<std::thread> threads;
  std::mutex m;
  threads.reserve(6);
  for (int i = 0; i < 6; ++i) {
    threads.emplace_back([&] {
      auto s = create();
      std::lock_guard lock(m);
      all.push_back(s);
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> maps;
  for (auto& s : all) maps.insert(sh(s, "cat /proc/self/uid_map"));
  EXPECT_EQ(maps.size(), 6u);
  EXPECT_EQ(reason_of([&] { create(); }), Reason::LIMIT_REACHED);
}

TEST_F(LifetimeTest, TwoEnginesOnOneHostNeverShareAnIdRange) {
  // A second engine with the same state directory, as two agent hosts on one
  // machine would have.
  SandboxesOptions l;
  l.max_sandboxes = 8;
  auto other = create_sandboxes(native_sandboxes(options()), l);
  limits_.max_sandboxes = 4;
  sandboxes();
  std::vector<Sandbox> all(8);
  std::vector<std::thread> threads;
  threads.reserve(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      CreateOptions c;
      c.lifetime_ms = 60'000;
      all[static_cast<std::size_t>(i)] = (i % 2 ? other : sandboxes()).create(c);
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> maps;
  for (auto& s : all) maps.insert(sh(s, "cat /proc/self/uid_map"));
  EXPECT_EQ(maps.size(), 8u);
  // every one of the 8 slots is taken now: a ninth fails, it does not share
  CreateOptions c;
  c.lifetime_ms = 1000;
  EXPECT_EQ(reason_of([&] { other.create(c); }), Reason::LIMIT_REACHED);
  other.close();
}

// A sandbox made ahead builds and waits at the lowest priority (it takes
// next to no cpu a caller could use); the create that takes it gives it nice
// 0 back, so the caller's commands run as any other process.
TEST_F(LifetimeTest, APreparedSandboxWaitsAtTheLowestPriorityAndRunsAtTheOrdinaryOne) {
  options().prepared = 1;
  sandboxes();
  // its init and its first command's process (LimitsTest has more of it)
  std::vector<pid_t> ahead;
  for (int i = 0; i < 1200 && ahead.size() < 2; ++i) {
    ahead = processes_in_range(options());
    if (ahead.size() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(ahead.size(), 2u) << "the pool made no sandbox";
  EXPECT_EQ(nice_of(ahead[0]), "19");
  EXPECT_EQ(nice_of(ahead[1]), "19");
  // A create takes it once it is ready (before, a create builds its own):
  // its init is at the ordinary policy from then, as is what it runs.
  bool taken = false;
  for (int i = 0; i < 600 && !taken; ++i) {
    auto s = create();
    taken = nice_of(ahead[0]) == "0" && nice_of(ahead[1]) == "0";
    // taken or built on this thread, it runs at the ordinary priority
    EXPECT_EQ(sh(s, "cut -d' ' -f19 /proc/1/stat; cut -d' ' -f19 /proc/self/stat"), "0\n0\n");
    s.release();
    if (!taken) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(taken) << "no create took the sandbox made ahead";
}

TEST_F(LifetimeTest, PreparedSandboxesAreHandedOutFreshAndEndedWithTheProvider) {
  options().prepared = 2;
  sandboxes();
  // the pool fills in the background, at the lowest priority: on a busy machine
  // (the suite in parallel on an emulated cpu) it may wait a while for a cpu
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (cgroups_under(options().cgroup_root) < 2 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(cgroups_under(options().cgroup_root), 2);
  EXPECT_EQ(sandboxes().size(), 0u);  // made ahead is not alive for the caller
  CreateOptions c;
  c.env = {{"MINE", "a"}};
  auto a = create(c);
  c.env = {{"MINE", "b"}};
  auto b = create(c);
  EXPECT_EQ(sh(a, "echo $MINE"), "a\n");
  EXPECT_EQ(sh(b, "echo $MINE"), "b\n");
  EXPECT_NE(sh(a, "hostname"), sh(b, "hostname"));
  // (sh fails the test if an ls does, and the look sees a file once one is there)
  EXPECT_EQ(sh(a, "ls -A /workspace"), "");
  EXPECT_EQ(sh(a, "ls -A /tmp"), "");
  a.write_file("x", "1");
  EXPECT_EQ(sh(a, "ls -A /workspace"), "x\n");
  EXPECT_EQ(reason_of([&] { b.read_file("x"); }), Reason::NOT_FOUND);
  // a lifetime starts at create, not when the sandbox was made: once the
  // pool has made two more (the event) and they are older than the lifetime
  // asked for, one handed out still runs a command, and a command running
  // when its lifetime (from create) ends fails GONE
  const auto refilled_by = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (cgroups_under(options().cgroup_root) < 4 && std::chrono::steady_clock::now() < refilled_by) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(cgroups_under(options().cgroup_root), 4) << "the pool was not made again";
  c.lifetime_ms = 2000;
  std::this_thread::sleep_for(std::chrono::milliseconds(c.lifetime_ms + 500));  // the made-ahead ones age past it
  // What is made ahead waits at the lowest priority, and the create that takes a sandbox gives its processes the
  // ordinary one back: one of these going to nice 0 shows the create took an old one (one it built would prove
  // nothing of when a lifetime starts).
  std::vector<pid_t> made_ahead;
  for (const pid_t pid : processes_in_range(options())) {
    if (nice_of(pid) == "19") made_ahead.push_back(pid);
  }
  ASSERT_FALSE(made_ahead.empty()) << "nothing made ahead waits at the lowest priority";
  auto short_lived = create(c);
  EXPECT_TRUE(std::ranges::any_of(made_ahead, [](pid_t pid) { return nice_of(pid) == "0"; }))
      << "the create did not take a sandbox made ahead";
  EXPECT_EQ(sh(short_lived, "echo alive"), "alive\n");
  EXPECT_EQ(reason_of([&] { short_lived.exec({"sleep", "1000"}); }), Reason::GONE);
  // closing ends what was made ahead too (checked by the leak check)
}

}  // namespace
}  // namespace mayura::testing

namespace mayura::testing {
namespace {

// The engine's zygotes: its children named mayura-zygote (the inits are its
// children too, CLONE_PARENT, but named mayura-init).
std::vector<pid_t> zygotes() {
  std::vector<pid_t> found;
  const std::string parent = std::to_string(::getpid());
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string pid = e.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    if (read_host(e.path() / "comm") != "mayura-zygote\n") continue;
    // pid (comm) state ppid ...
    const std::string stat = read_host(e.path() / "stat");
    std::istringstream after_comm(stat.substr(std::min(stat.size(), stat.rfind(')') + 1)));
    std::string state, ppid;
    after_comm >> state >> ppid;
    if (ppid == parent) found.push_back(std::stoi(pid));
  }
  return found;
}

// A zygote forks so many inits and no more (every fork shares the reverse
// maps of the zygote's memory and program file: engine/launch.cpp), and a
// fresh one, from a fresh copy of the program, takes over: the old one is
// gone, reaped, and what it forked lives on.
TEST_F(LifetimeTest, AFreshZygoteTakesOverAndTheOldOnesSandboxesLiveOn) {
  options().prepared = 0;  // every create forks an init here
  auto first = create();
  const std::vector<pid_t> before = zygotes();
  ASSERT_EQ(before.size(), 1u);
  // the file it runs from (a memfd of the program)
  const auto program_of = [](pid_t pid) {
    struct stat st {};
    return ::stat(("/proc/" + std::to_string(pid) + "/exe").c_str(), &st) == 0 ? st.st_ino : 0;
  };
  const ino_t old_program = program_of(before[0]);
  ASSERT_NE(old_program, 0u);
  // held for the check that it is gone and reaped (its pid may be reused)
  const int old_zygote = static_cast<int>(::syscall(SYS_pidfd_open, before[0], 0));
  ASSERT_GE(old_zygote, 0);
  std::vector<pid_t> now = before;
  int made = 1;
  while (now == before && made < 300) {
    create().release();
    ++made;
    now = zygotes();
  }
  ASSERT_EQ(now.size(), 1u);
  EXPECT_NE(now, before) << "one zygote forked " << made << " inits";
  EXPECT_GE(made, 100) << "a zygote forks more than a handful";
  // reaped by the engine: nothing is left for a wait (WNOWAIT: nor taken by this one)
  siginfo_t info{};
  EXPECT_EQ(::waitid(P_PIDFD, static_cast<id_t>(old_zygote), &info, WEXITED | WNOHANG | WNOWAIT), -1)
      << "the old zygote is still there, or not reaped";
  EXPECT_EQ(errno, ECHILD);
  ::close(old_zygote);
  EXPECT_NE(program_of(now[0]), old_program) << "each zygote runs from a copy of its own";
  EXPECT_EQ(sh(first, "echo still here"), "still here\n");
  EXPECT_EQ(sh(create(), "echo fresh"), "fresh\n");
}

// An idle sandbox holds one descriptor in the engine, its control socket
// (its init's pid stands for the init): ten thousand sandboxes fit in an
// open-file limit of twenty thousand, which root may not raise on every
// host. Released, they give it back, and their inits are reaped (the leak
// check).
TEST_F(LifetimeTest, AnIdleSandboxHoldsOneDescriptorInTheEngine) {
  options().prepared = 0;  // nothing is made ahead meanwhile
  options().netns_pool = 0;
  auto first = create();  // the engine's own descriptors are open from here
  EXPECT_EQ(sh(first, "echo up"), "up\n");
  const int before = open_fds();
  std::vector<Sandbox> idle;
  idle.reserve(3);
  for (int i = 0; i < 3; ++i) idle.push_back(create());  // (4 at most: the harness's bound)
  EXPECT_EQ(open_fds() - before, 3);
  for (auto& s : idle) EXPECT_EQ(sh(s, "echo up"), "up\n");
  EXPECT_EQ(open_fds() - before, 3);
  for (auto& s : idle) s.release();
  // Their removal finishes off the caller's path, and opens descriptors of
  // its own meanwhile: the count is read once it is done (their cgroups
  // gone) and has held for a moment. (A count read while it ran matched
  // for an instant once, and then failed.)
  EXPECT_TRUE(eventually([&] { return cgroups_under(options().cgroup_root) == 1; }));
  EXPECT_TRUE(eventually([&] {
    if (open_fds() != before) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    return open_fds() == before;
  }));
  EXPECT_EQ(open_fds(), before);
}

TEST_F(LifetimeTest, ACreateAtTheOpenFileLimitIsLimitReachedNamingItAndLeavesNothing) {
  options().prepared = 0;    // every create builds its sandbox, on this thread
  options().netns_pool = 0;  // and no thread opens or closes one meanwhile
  auto first = create();
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Room for two more descriptors: a sandbox needs more than that.
  const rlimit tight{fd_limit_leaving(2), saved.rlim_max};
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  Reason reason = Reason::INTERNAL;
  std::string message;
  try {
    create();
  } catch (const SandboxError& e) {
    reason = e.reason();
    message = e.what();
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  EXPECT_EQ(reason, Reason::LIMIT_REACHED) << message;
  EXPECT_NE(message.find("RLIMIT_NOFILE"), std::string::npos) << message;
  EXPECT_EQ(sandboxes().size(), 1u);
  EXPECT_EQ(sh(first, "echo still here"), "still here\n");
}

}  // namespace
}  // namespace mayura::testing
