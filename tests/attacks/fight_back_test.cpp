// A sandbox that fights back: its own processes work against what the
// engine is doing to it (ending it, listing and reading its files), and the
// engine's work still ends, in bounded time, exactly, with nothing left.

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "tests/support/output_event.hpp"
#include "attack.hpp"

namespace mayura::testing {
namespace {

using FightBackTest = AttackTest;
using Clock = std::chrono::steady_clock;

// Ends `sandbox` and says how long release() took.
std::chrono::milliseconds timed_release(const Sandbox& sandbox) {
  const auto start = Clock::now();
  sandbox.release();
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
}

// Waits (up to 60 s: on an emulated cpu each look through /proc is slow)
// until at least `n` of the sandbox's processes exist.
bool wait_for_processes(const NativeOptions& options, std::size_t n) {
  const auto until = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < until) {
    if (processes_in_range(options).size() >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(FightBackTest, ReleaseEndsAForkBombAtItsPidsBoundAtOnce) {
  CreateOptions o;
  o.pids = 64;
  auto bomb = create(o);
  install_probe(bomb);
  OutputEvent out;
  ExecOptions eo;
  eo.timeout_ms = 60000;
  eo.on_stdout = out.sink();
  auto bombing = std::async(std::launch::async, [&] { return bomb.exec({"/workspace/probe", "forkbomb"}, eo); });
  ASSERT_TRUE(out.wait_for("fork=EAGAIN\n")) << out.seen();  // at its bound, every process forking
  // What release must do is an effect, checked at its return: no process
  // of the bomb can run any more. Its time is recorded, not asserted.
  const auto took = timed_release(bomb);
  RecordProperty("release_ms", static_cast<int>(took.count()));
  EXPECT_TRUE(processes_able_to_run(options()).empty());
  // the exec ends with the sandbox, and not by its own timeout
  ASSERT_EQ(bombing.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  try {
    const ExecResult r = bombing.get();
    EXPECT_FALSE(r.timed_out);
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.reason(), Reason::GONE) << e.what();
  }
  EXPECT_TRUE(processes_able_to_run(options()).empty());
}

// No pids bound: processes multiply as fast as one shell can fork (not
// exponentially, and up to 3000, so the host's own limits stay far away),
// and release, once 300 are up (30 in the VMs) and the shell still forks,
// ends every one of them at once.
TEST_F(FightBackTest, ReleaseEndsAForkLoopWithNoPidsBoundAtOnce) {
  auto sandbox = create();
  ExecOptions eo;
  eo.timeout_ms = 60000;
  auto looping = std::async(std::launch::async, [&] {
    return sandbox.exec({"sh", "-c", "i=0; while [ $i -lt 3000 ]; do sleep 600 & i=$((i+1)); done; wait"}, eo);
  });
  // (an emulated cpu, in the VMs, forks some 90 a minute)
  const std::size_t up = test_layout() == "hybrid" ? 300 : 30;
  ASSERT_TRUE(wait_for_processes(options(), up)) << processes_in_range(options()).size() << " processes";
  const auto took = timed_release(sandbox);
  RecordProperty("release_ms", static_cast<int>(took.count()));
  EXPECT_TRUE(processes_able_to_run(options()).empty());
  ASSERT_EQ(looping.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  try {
    (void)looping.get();
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.reason(), Reason::GONE) << e.what();
  }
  EXPECT_TRUE(processes_able_to_run(options()).empty());
}

// Names the sandbox's processes make, which no caller would: bytes that are
// no UTF-8, a newline, a name of 255 bytes (the most a file system takes).
TEST_F(FightBackTest, NamesThatAreNoTextHoldANewlineOrAreTheLongestComeBackExactly) {
  auto sandbox = create();
  const std::string latin1 = "caf\xe9";
  const std::string broken = "\xff\xfe\x80";
  const std::string newline = "two\nlines";
  const std::string longest(255, 'n');
  sh(sandbox,
     "mkdir /workspace/odd && cd /workspace/odd && printf a > \"$(printf 'caf\\351')\" && "
     "printf b > \"$(printf '\\377\\376\\200')\" && printf c > \"$(printf 'two\\nlines')\" && "
     "printf d > " +
         longest);
  std::set<std::string> names;
  for (const auto& e : sandbox.list("/workspace/odd")) names.insert(e.name);
  EXPECT_EQ(names, (std::set<std::string>{latin1, broken, newline, longest}));
  EXPECT_EQ(sandbox.read_file("/workspace/odd/" + latin1), "a");
  EXPECT_EQ(sandbox.read_file("/workspace/odd/" + broken), "b");
  EXPECT_EQ(sandbox.read_file("/workspace/odd/" + newline), "c");
  EXPECT_EQ(sandbox.read_file("/workspace/odd/" + longest), "d");
  // and the other way: the engine writes such names, the sandbox sees them
  sandbox.write_file("/workspace/odd/" + broken + "2", "e");
  EXPECT_EQ(sh(sandbox, "cat /workspace/odd/\"$(printf '\\377\\376\\200')\"2"), "e");
  // one byte more than a name may have is refused, and makes nothing
  try {
    sandbox.write_file("/workspace/odd/" + longest + "n", "f");
    ADD_FAILURE() << "a 256-byte name was written";
  } catch (const SandboxError& e) {
    EXPECT_NE(e.reason(), Reason::INTERNAL) << e.what();
  }
  EXPECT_EQ(sandbox.list("/workspace/odd").size(), 5u);
}

// While the engine reads and writes a file over and over, the sandbox swaps
// it for a FIFO, a symlink, a directory and a file again, as fast as it can.
// Every call answers (no hang on the FIFO), with bytes the sandbox holds or
// a clear error. The symlink names a file that exists only on the host (the
// sandbox's /tmp is its own): resolved inside, as every path is, it leads
// nowhere, so the host file is never read nor written.
TEST_F(FightBackTest, AFileSwappedWhileReadAndWrittenNeverHangsNorLeavesTheSandbox) {
  const std::string host_dir = "/tmp/mayura-fight-back-" + std::to_string(::getpid());
  ASSERT_EQ(::mkdir(host_dir.c_str(), 0700), 0);
  const std::string host_file = host_dir + "/host-only";
  { std::ofstream(host_file) << "host secret"; }
  auto sandbox = create();
  sh(sandbox, "printf data > /workspace/f");
  // The swapper counts its rounds begun once the engine's calls have (go)
  // and before they end (stop), and says when it has finished one: the calls
  // go on until it has, so the race was run, not just started.
  // (No timeout: one that cut the swapper short would end the race unseen;
  // the sandbox's lifetime bounds it, and its end fails every call.)
  OutputEvent out;
  ExecOptions eo;
  eo.on_stdout = out.sink();
  auto swapping = std::async(std::launch::async, [&] {
    return sandbox.exec({"sh", "-c",
                         "cd /workspace; n=0; echo started; while [ ! -e stop ]; do counted=0; [ -e go ] && counted=1; "
                         "rm -rf f; mkfifo f; rm -f f; ln -s " +
                             host_file +
                             " f; rm -f f; mkdir f; rmdir f; printf data > f; "
                             "if [ $counted = 1 ]; then n=$((n+1)); [ $n = 1 ] && echo swapped; fi; done; "
                             "echo swaps=$n"},
                        eo);
  });
  ASSERT_TRUE(out.wait_for("started\n")) << out.seen();
  sandbox.write_file("/workspace/go", "");
  // What the swapping may do to a call is an answer it can give: a path
  // that is gone or a dangling symlink (NOT_FOUND), a FIFO, a directory, or
  // a directory made where the write renames to (INVALID_INPUT). Anything
  // else fails the test, and a failure not a SandboxError ends it.
  std::map<Reason, int> read_refused, write_refused;
  auto refused = [](std::map<Reason, int>& counts, const SandboxError& e) {
    ++counts[e.reason()];
    EXPECT_TRUE(e.reason() == Reason::NOT_FOUND || e.reason() == Reason::INVALID_INPUT)
        << reason_name(e.reason()) << ": " << e.what();
  };
  std::size_t calls = 0, read = 0;
  const auto until = Clock::now() + std::chrono::seconds(60);
  for (; calls < 300 || (out.seen().find("swapped\n") == std::string::npos && Clock::now() < until); ++calls) {
    try {
      const std::string got = sandbox.read_file("/workspace/f");
      EXPECT_TRUE(got == "data" || got.empty()) << "read " << got;
      ++read;
    } catch (const SandboxError& e) {
      refused(read_refused, e);
    }
    try {
      sandbox.write_file("/workspace/f", "data");
    } catch (const SandboxError& e) {
      refused(write_refused, e);
    }
  }
  sandbox.write_file("/workspace/stop", "");
  ASSERT_EQ(swapping.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const ExecResult swapped = swapping.get();
  EXPECT_EQ(swapped.exit_code, 0) << swapped.stderr;
  const auto said = parse_results(swapped.stdout);
  ASSERT_EQ(said.count("swaps"), 1u) << swapped.stdout;
  const int swaps = std::stoi(said.at("swaps"));
  RecordProperty("calls", static_cast<int>(calls));
  RecordProperty("swaps", swaps);
  RecordProperty("read", static_cast<int>(read));
  RecordProperty("read_not_found", read_refused[Reason::NOT_FOUND]);
  RecordProperty("read_invalid", read_refused[Reason::INVALID_INPUT]);
  RecordProperty("write_not_found", write_refused[Reason::NOT_FOUND]);
  RecordProperty("write_invalid", write_refused[Reason::INVALID_INPUT]);
  EXPECT_GT(swaps, 0) << "no round of swapping began while the engine's calls ran";
  sandbox.release();
  // the host's file is as it was, and nothing else appeared beside it
  EXPECT_EQ(read_host(host_file), "host secret");
  std::size_t entries = 0;
  for (const auto& e : std::filesystem::directory_iterator(host_dir)) {
    (void)e;
    ++entries;
  }
  EXPECT_EQ(entries, 1u);
  std::filesystem::remove_all(host_dir);
}

}  // namespace
}  // namespace mayura::testing
