// A sandbox that fights back through its standard streams: a command that
// closes them, duplicates them, floods them, leaves them open in a child
// after it exits, or writes faster than the caller takes. Each exec still
// ends when its command does, with its exit code, output within its bound
// and the engine's memory bounded.

#include <chrono>
#include <future>
#include <thread>

#include "attack.hpp"

namespace mayura::testing {
namespace {

using FightBackStreamsTest = AttackTest;

// How many of the sandbox's processes run `yes` (zombies run nothing).
const char* const kCountYes =
    "n=0; for p in /proc/[0-9]*; do s=$(cat $p/stat 2>/dev/null) || continue; "
    "case $s in *'(yes) '[!Z]*) n=$((n+1));; esac; done; echo $n";

TEST_F(FightBackStreamsTest, ClosedAndDuplicatedStreamsEndWithTheCommand) {
  auto sandbox = create();
  // every stream closed, stdin among them, before the command exits
  auto r = sandbox.exec({"sh", "-c", "exec 0<&- 1>&- 2>&-; sleep 0.2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout, "");
  EXPECT_EQ(r.stderr, "");
  // stderr made stdout, and stdout copied into a hundred descriptors that all
  // write
  r = sandbox.exec({"bash", "-c",
                    "exec 2>&1; echo out; echo err >&2; for i in $(seq 3 102); do eval \"exec $i>&1\"; "
                    "echo $i >&$i; done; exit 4"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.stderr, "");
  ASSERT_GT(r.stdout.size(), 8u);
  EXPECT_EQ(r.stdout.substr(0, 8), "out\nerr\n");
  EXPECT_NE(r.stdout.find("\n102\n"), std::string::npos) << r.stdout;
  // stdin given, and closed by the command before it is all read
  ExecOptions with_input;
  with_input.stdin = std::string(8u << 20, 'i');
  r = sandbox.exec({"sh", "-c", "head -c 10 >/dev/null; exec 0<&-; echo read"}, with_input);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout, "read\n");
}

// A child floods stdout and stderr without end after its parent, the
// command, exits: the exec ends with the command, its output bounded; the
// streams close behind it, so the children's next writes end them
// (SIGPIPE), and the sandbox answers on.
TEST_F(FightBackStreamsTest, AChildThatFloodsAfterTheCommandExitsDoesNotHoldTheExec) {
  auto sandbox = create();
  ExecOptions eo;
  eo.timeout_ms = 60'000;
  eo.max_output_bytes = 1u << 20;
  const auto r =
      sandbox.exec({"sh", "-c", "((sleep 0.1; exec yes out) &) ; ((sleep 0.1; exec yes err >&2) &) ; echo done"}, eo);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(r.timed_out);
  EXPECT_LE(r.stdout.size(), 1u << 20);
  EXPECT_LE(r.stderr.size(), 1u << 20);
  EXPECT_EQ(r.stdout.substr(0, 5), "done\n");
  EXPECT_EQ(sh(sandbox, std::string("for i in $(seq 500); do [ $(") + kCountYes +
                            ") = 0 ] && break; sleep 0.01; done; " + kCountYes),
            "0\n");
  EXPECT_EQ(sh(sandbox, "echo after"), "after\n");
  sandbox.release();
  EXPECT_TRUE(processes_able_to_run(options()).empty());
}

// The caller takes each chunk slowly (a sink that sleeps) while the command
// writes as fast as it can: the command is held back, not buffered without
// bound, and ends by its timeout with output at its bound.
TEST_F(FightBackStreamsTest, OutputFasterThanTheCallerTakesItIsHeldBackNotHoarded) {
  auto sandbox = create();
  ExecOptions eo;
  eo.timeout_ms = 3000;
  eo.max_output_bytes = 4u << 20;
  std::size_t streamed = 0;
  long peak = 0;
  const long before = memory_mib();
  eo.on_stdout = [&](std::string_view chunk) {
    streamed += chunk.size();
    peak = std::max(peak, memory_mib() - before);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  const auto r = sandbox.exec({"sh", "-c", "yes flood"}, eo);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LE(r.stdout.size(), 4u << 20);
  EXPECT_GT(streamed, 0u);
  RecordProperty("streamed_kib", static_cast<int>(streamed / 1024));
  RecordProperty("peak_mib", static_cast<int>(peak));
  EXPECT_LT(peak, 256) << "MiB more while the caller was slow";
  EXPECT_EQ(sh(sandbox, kCountYes), "0\n");
}

}  // namespace
}  // namespace mayura::testing
