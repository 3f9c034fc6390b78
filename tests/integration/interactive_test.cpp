// Commands an agent or a person talks to while they run: input streamed in
// as it comes, signals for the command's process group, and a terminal of
// the sandbox's own, with its size, its resizes and its line discipline.

#include <signal.h>

#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>

#include "tests/support/output_event.hpp"
#include "harness.hpp"

namespace mayura::testing {
namespace {

using InteractiveTest = NativeTest;

// A command running on another thread, with its control once it started.
struct Running {
  OutputEvent out;
  std::promise<std::shared_ptr<CommandControl>> started;
  std::shared_ptr<CommandControl> control;
  std::future<ExecResult> result;

  ExecResult end() {
    EXPECT_EQ(result.wait_for(std::chrono::seconds(60)), std::future_status::ready) << out.seen();
    return result.get();
  }
};

std::unique_ptr<Running> start(const Sandbox& s, std::vector<std::string> argv,
                               std::optional<TerminalSize> terminal = {}) {
  auto running = std::make_unique<Running>();
  ExecOptions o;
  o.terminal = terminal;
  o.timeout_ms = 60'000;
  o.on_stdout = running->out.sink();
  o.on_start = [promise = &running->started](std::shared_ptr<CommandControl> control) {
    promise->set_value(std::move(control));
  };
  auto started = running->started.get_future();
  running->result = std::async(std::launch::async, [s, argv = std::move(argv), o] { return s.exec(argv, o); });
  if (started.wait_for(std::chrono::seconds(60)) == std::future_status::ready) running->control = started.get();
  return running;
}

TEST_F(InteractiveTest, InputStreamsInAsItComesAndEndsWhenClosed) {
  auto s = create();
  auto run = start(s, {"/bin/sh", "-c", "while read -r line; do echo \"got $line\"; done; echo end"});
  ASSERT_TRUE(run->control);
  run->control->write("one\n");
  ASSERT_TRUE(run->out.wait_for("got one\n")) << run->out.seen();
  run->control->write("two");
  run->control->write(" three\n");
  ASSERT_TRUE(run->out.wait_for("got two three\n")) << run->out.seen();
  run->control->close_input();
  const ExecResult r = run->end();
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout, "got one\ngot two three\nend\n");
  // the command has ended: its control does nothing, and throws nothing
  run->control->write("late\n");
  run->control->signal(SIGTERM);
}

TEST_F(InteractiveTest, ASignalReachesTheCommandsProcessGroupOnly) {
  auto s = create();
  // A child in the command's group, and one that left it (setsid): the
  // shell's trap says what became of each.
  auto run = start(s, {"/bin/sh", "-c",
                       "sleep 300 & member=$!; setsid sleep 300 & other=$!; "
                       // (ready once the other has its session: a signal before would reach it)
                       "until [ \"$(cut -d' ' -f6 /proc/$other/stat)\" = $other ]; do sleep 0.01; done; "
                       "trap 'wait $member; echo \"member $?\"; kill -0 $other && echo other-alive; exit 3' TERM; "
                       "echo ready; while :; do sleep 0.05; done"});
  ASSERT_TRUE(run->control);
  ASSERT_TRUE(run->out.wait_for("ready\n")) << run->out.seen();
  run->control->signal(SIGTERM);
  const ExecResult r = run->end();
  EXPECT_EQ(r.exit_code, 3) << r.stdout << r.stderr;
  EXPECT_EQ(r.stdout, "ready\nmember 143\nother-alive\n");
}

TEST_F(InteractiveTest, ATerminalHasItsSizeTakesAResizeAndIsTheSandboxsOwn) {
  auto s = create();
  auto run =
      start(s,
            {"/bin/sh", "-c",
             "tty; test -t 0 && test -t 1 && test -t 2 && echo all-terminals; stty size; "
             "trap 'echo winch' WINCH; echo waiting; until read -r line; do :; done; stty size; echo \"read $line\""},
            TerminalSize{30, 100});
  ASSERT_TRUE(run->control);
  ASSERT_TRUE(run->out.wait_for("waiting")) << run->out.seen();
  run->control->resize(TerminalSize{40, 120});
  run->control->write("hello\n");
  const ExecResult r = run->end();
  EXPECT_EQ(r.exit_code, 0);
  // The sandbox's own devpts names it (/dev/pts/0: the first of its
  // instance), every stream is it, and output comes with a terminal's
  // line endings, the input echoed.
  EXPECT_NE(r.stdout.find("/dev/pts/0\r\n"), std::string::npos) << r.stdout;
  EXPECT_NE(r.stdout.find("all-terminals\r\n30 100\r\n"), std::string::npos) << r.stdout;
  EXPECT_NE(r.stdout.find("winch\r\n"), std::string::npos) << r.stdout;
  EXPECT_NE(r.stdout.find("hello\r\n"), std::string::npos) << r.stdout;  // the echo
  EXPECT_NE(r.stdout.find("40 120\r\nread hello\r\n"), std::string::npos) << r.stdout;
  EXPECT_TRUE(r.stderr.empty()) << r.stderr;
}

TEST_F(InteractiveTest, CtrlCStopsOnlyTheForegroundJob) {
  auto s = create();
  // A shell that survives ^C (its trap) with a job in the background (which a
  // shell without job control starts ignoring SIGINT) and one in the
  // foreground.
  auto run = start(s,
                   {"/bin/sh", "-c",
                    "trap 'echo interrupted' INT; sleep 300 & bg=$!; sh -c 'echo started; exec sleep 300'; "
                    "echo \"foreground ended $?\"; kill -0 $bg && echo background-alive; kill $bg"},
                   TerminalSize{});
  ASSERT_TRUE(run->control);
  ASSERT_TRUE(run->out.wait_for("started")) << run->out.seen();
  run->control->write("\x03");
  const ExecResult r = run->end();
  EXPECT_EQ(r.exit_code, 0) << r.stdout;
  EXPECT_NE(r.stdout.find("foreground ended 130"), std::string::npos) << r.stdout;
  EXPECT_NE(r.stdout.find("background-alive"), std::string::npos) << r.stdout;
}

TEST_F(InteractiveTest, ATerminalsCommandIsStoppedWithEverythingItStarted) {
  auto s = create();
  ExecOptions o;
  o.terminal = TerminalSize{};
  o.timeout_ms = 3000;  // room for a slow machine to print first
  const ExecResult r = s.exec({"/bin/sh", "-c", "sleep 300 & setsid sleep 300 & echo started; wait"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.stdout, "started\r\n");
  const ExecResult left = s.exec({"/bin/sh", "-c", "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$' || true"});
  EXPECT_EQ(left.stdout, "0\n");
}

TEST_F(InteractiveTest, BadTerminalsSignalsAndInputAreRefused) {
  auto s = create();
  ExecOptions o;
  for (const TerminalSize bad : {TerminalSize{0, 80}, TerminalSize{24, 0}, TerminalSize{1001, 80},
                                 TerminalSize{24, 1001}, TerminalSize{-1, -1}}) {
    o.terminal = bad;
    EXPECT_EQ(reason_of([&] { s.exec({"true"}, o); }), Reason::INVALID_INPUT);
  }
  auto run = start(s, {"/bin/sh", "-c", "cat >/dev/null; echo done"});
  ASSERT_TRUE(run->control);
  for (const int bad : {0, -1, 65, 1000}) {
    EXPECT_EQ(reason_of([&] { run->control->signal(bad); }), Reason::INVALID_INPUT);
  }
  EXPECT_EQ(reason_of([&] { run->control->resize(TerminalSize{0, 0}); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { run->control->write(std::string((std::size_t{64} << 20) + 1, 'x')); }),
            Reason::LIMIT_REACHED);
  run->control->resize(TerminalSize{10, 10});  // no terminal: nothing
  run->control->close_input();
  EXPECT_EQ(run->end().stdout, "done\n");

  // A writer that outpaces a command that does not read is refused past
  // what the engine queues (16 MiB), not held without bound.
  auto idle = start(s, {"sleep", "300"});
  ASSERT_TRUE(idle->control);
  idle->control->write(std::string(std::size_t{10} << 20, 'x'));
  EXPECT_EQ(reason_of([&] { idle->control->write(std::string(std::size_t{10} << 20, 'y')); }), Reason::LIMIT_REACHED);
  idle->control->signal(SIGKILL);
  EXPECT_EQ(idle->end().exit_code, 137);

  // A caller's on_start that throws fails the run, and stops its command.
  ExecOptions throwing;
  throwing.on_start = [](const std::shared_ptr<CommandControl>&) { throw std::runtime_error("no"); };
  EXPECT_EQ(reason_of([&] { s.exec({"sleep", "300"}, throwing); }), Reason::INTERNAL);
}

}  // namespace
}  // namespace mayura::testing
