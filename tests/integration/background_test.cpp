// Commands left running (Sandbox::start): a server started in one step and
// its log read in a later one, output held past its bound, attachments from
// any point, input, signals, and a stop that leaves none of its processes.

#include <signal.h>

#include <chrono>
#include <future>
#include <thread>

#include "harness.hpp"

namespace mayura::testing {
namespace {

using BackgroundTest = NativeTest;

// How many processes named `name` run in the sandbox.
int running(const Sandbox& s, const std::string& name) {
  return std::stoi(
      s.exec({"/bin/sh", "-c", "cat /proc/[0-9]*/comm 2>/dev/null | grep -cx '" + name + "' || true"}).stdout);
}

// Waits (bounded) until the command's stdout (or `stream`) holds `text`.
bool printed(const Sandbox& s, const std::string& id, const std::string& text,
             OutputStream stream = OutputStream::out) {
  for (int i = 0; i < 600; ++i) {
    if (s.output(id, stream).data.find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_F(BackgroundTest, AServerStartedInOneStepIsReachedAndItsLogReadInALaterOne) {
  auto s = create();
  const CommandInfo server = s.start({"python3", "-u", "-m", "http.server", "8000", "--bind", "127.0.0.1"});
  EXPECT_EQ(server.id, "c1");
  EXPECT_EQ(server.state, CommandState::running);
  EXPECT_GT(server.started_ms, 0);
  ASSERT_TRUE(printed(s, server.id, "Serving HTTP")) << s.output(server.id, OutputStream::err).data;
  // a later step: the server answers, and its log has the request
  const ExecResult get = s.exec(
      {"python3", "-c", "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8000/').status)"});
  EXPECT_EQ(get.stdout, "200\n") << get.stderr;
  // (The server's log line and its answer leave by different pipes: the
  // answer can be read before the engine has read the line.)
  EXPECT_TRUE(printed(s, server.id, "\"GET / HTTP/1.1\" 200", OutputStream::err))
      << s.output(server.id, OutputStream::err).data;
  const OutputSlice log = s.output(server.id, OutputStream::err);
  const std::vector<CommandInfo> listed = s.commands();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].argv[0], "python3");
  EXPECT_EQ(listed[0].stderr_bytes, log.next);
  // stopped, with nothing of it left
  const CommandInfo stopped = s.stop(server.id);
  EXPECT_EQ(stopped.state, CommandState::stopped);
  EXPECT_TRUE(stopped.ended_ms.has_value());
  EXPECT_EQ(running(s, "python3"), 0);
  // and still there to read
  EXPECT_EQ(s.command(server.id).state, CommandState::stopped);
  EXPECT_NE(s.output(server.id, OutputStream::err).data.find("GET /"), std::string::npos);
}

TEST_F(BackgroundTest, OutputPastItsBoundKeepsTheNewestAndSaysHowMuchWasDropped) {
  auto s = create();
  StartOptions o;
  o.keep_bytes = 1u << 20;
  const CommandInfo c = s.start({"/bin/sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo last"}, o);
  const CommandInfo ended = s.wait(c.id);
  EXPECT_EQ(ended.state, CommandState::exited);
  EXPECT_EQ(ended.exit_code, 0);
  EXPECT_EQ(ended.stdout_bytes, 3000006u);
  const OutputSlice held = s.output(c.id, OutputStream::out, 0, 4u << 20);
  EXPECT_EQ(held.data.size(), 1u << 20);
  EXPECT_EQ(held.dropped, 3000006u - (1u << 20));
  EXPECT_EQ(held.offset, held.dropped);
  EXPECT_EQ(held.data.substr(held.data.size() - 6), "\nlast\n");
  // from an offset still held, bounded
  const OutputSlice tail = s.output(c.id, OutputStream::out, 3000000, 3);
  EXPECT_EQ(tail.data, "\nla");
  EXPECT_EQ(tail.dropped, 0u);
}

TEST_F(BackgroundTest, AnAttachmentGivesWhatIsHeldThenFollowsToTheEnd) {
  auto s = create();
  const CommandInfo c = s.start({"/bin/sh", "-c", "echo one; read -r x; echo \"two $x\"; echo err >&2; exit 4"});
  ASSERT_TRUE(printed(s, c.id, "one\n"));
  // one caller follows it from the start, on its own thread
  std::string out;
  std::string err;
  auto followed = std::async(std::launch::async, [&] {
    AttachOptions a;
    a.on_stdout = [&](std::string_view chunk) { out += chunk; };
    a.on_stderr = [&](std::string_view chunk) { err += chunk; };
    return s.attach(c.id, a);
  });
  // another, later, writes to it
  s.write_input(c.id, "hi\n");
  ASSERT_EQ(followed.wait_for(std::chrono::seconds(60)), std::future_status::ready);
  const CommandInfo ended = followed.get();
  EXPECT_EQ(ended.state, CommandState::exited);
  EXPECT_EQ(ended.exit_code, 4);
  EXPECT_EQ(out, "one\ntwo hi\n");
  EXPECT_EQ(err, "err\n");
  // an attachment from an offset, after the end: what is held from there
  AttachOptions later;
  later.stdout_from = 4;
  later.stderr_from = 100;  // past its end: nothing
  std::string rest;
  later.on_stdout = [&](std::string_view chunk) { rest += chunk; };
  later.on_stderr = [&](std::string_view chunk) { rest += "(err)" + std::string(chunk); };
  s.attach(c.id, later);
  EXPECT_EQ(rest, "two hi\n");
  // and without follow, on a running one: what is held now, then back
  const CommandInfo quiet = s.start({"/bin/sh", "-c", "echo up; sleep 300"});
  ASSERT_TRUE(printed(s, quiet.id, "up\n"));
  AttachOptions now;
  now.follow = false;
  std::string seen;
  now.on_stdout = [&](std::string_view chunk) { seen += chunk; };
  EXPECT_EQ(s.attach(quiet.id, now).state, CommandState::running);
  EXPECT_EQ(seen, "up\n");
  // an attachment's timeout ends it, not the command
  AttachOptions bounded;
  bounded.timeout_ms = 200;
  EXPECT_EQ(s.attach(quiet.id, bounded).state, CommandState::running);
  std::stop_source cancel;
  AttachOptions cancelled;
  cancelled.cancellation = cancel.get_token();
  auto waiting = std::async(std::launch::async, [&] { return reason_of([&] { s.attach(quiet.id, cancelled); }); });
  cancel.request_stop();
  EXPECT_EQ(waiting.get(), Reason::CANCELLED);
  EXPECT_EQ(s.command(quiet.id).state, CommandState::running);
  EXPECT_EQ(s.stop(quiet.id).state, CommandState::stopped);
}

TEST_F(BackgroundTest, StopEndsEverythingTheCommandStarted) {
  auto s = create();
  const CommandInfo c = s.start({"/bin/sh", "-c",
                                 "sleep 300 & setsid sleep 300 & (sleep 300 &); "
                                 "sh -c 'trap \"\" TERM; sleep 300' & echo started; wait"});
  ASSERT_TRUE(printed(s, c.id, "started"));
  for (int i = 0; i < 600 && running(s, "sleep") < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(running(s, "sleep"), 4);
  EXPECT_EQ(s.stop(c.id).state, CommandState::stopped);
  EXPECT_EQ(running(s, "sleep"), 0);
  // stopping it again changes nothing
  EXPECT_EQ(s.stop(c.id).state, CommandState::stopped);
}

TEST_F(BackgroundTest, SignalsReachItAndItsTimeoutStopsIt) {
  auto s = create();
  const CommandInfo c =
      s.start({"/bin/sh", "-c", "trap 'echo term; exit 5' TERM; echo ready; while :; do sleep 0.05; done"});
  ASSERT_TRUE(printed(s, c.id, "ready\n"));
  s.signal(c.id, SIGTERM);
  const CommandInfo ended = s.wait(c.id, 60'000);
  EXPECT_EQ(ended.state, CommandState::exited);
  EXPECT_EQ(ended.exit_code, 5);
  EXPECT_EQ(s.output(c.id, OutputStream::out).data, "ready\nterm\n");

  StartOptions o;
  o.timeout_ms = 300;
  const CommandInfo slow = s.start({"sleep", "300"}, o);
  EXPECT_EQ(s.wait(slow.id, 60'000).state, CommandState::timed_out);
  EXPECT_EQ(running(s, "sleep"), 0);
}

TEST_F(BackgroundTest, ATerminalCommandTakesInputAndAResize) {
  auto s = create();
  StartOptions o;
  o.terminal = TerminalSize{20, 70};
  const CommandInfo c = s.start({"/bin/sh", "-c", "stty size; read -r x; stty size; echo \"got $x\""}, o);
  EXPECT_TRUE(c.terminal);
  ASSERT_TRUE(printed(s, c.id, "20 70\r\n"));
  s.resize(c.id, TerminalSize{50, 132});
  s.write_input(c.id, "typed\n");
  EXPECT_EQ(s.wait(c.id, 60'000).exit_code, 0);
  const std::string out = s.output(c.id, OutputStream::out).data;
  EXPECT_NE(out.find("50 132\r\ngot typed\r\n"), std::string::npos) << out;
  EXPECT_EQ(s.output(c.id, OutputStream::err).data, "");
}

TEST_F(BackgroundTest, CommandsEndWithTheirSandbox) {
  auto s = create();
  const CommandInfo c = s.start({"sleep", "300"});
  s.release();
  const CommandInfo ended = s.wait(c.id, 60'000);
  EXPECT_EQ(ended.state, CommandState::failed);
  EXPECT_FALSE(ended.error.empty());
  EXPECT_EQ(reason_of([&] { s.start({"true"}); }), Reason::GONE);
}

TEST_F(BackgroundTest, BadIdsOptionsAndCallsAreRefusedBeforeAnythingRuns) {
  auto s = create();
  StartOptions o;
  o.keep_bytes = 10;
  EXPECT_EQ(reason_of([&] { s.start({"true"}, o); }), Reason::INVALID_INPUT);
  o.keep_bytes = (64u << 20) + 1;
  EXPECT_EQ(reason_of([&] { s.start({"true"}, o); }), Reason::INVALID_INPUT);
  o = {};
  o.terminal = TerminalSize{0, 10};
  EXPECT_EQ(reason_of([&] { s.start({"true"}, o); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.start({}); }), Reason::INVALID_INPUT);
  EXPECT_TRUE(s.commands().empty());  // none of those was made

  for (const std::string& bad : std::vector<std::string>{"", "C1", "c1/../x", std::string(17, 'c'), "c 1"}) {
    EXPECT_EQ(reason_of([&] { s.command(bad); }), Reason::INVALID_INPUT) << bad;
    EXPECT_EQ(reason_of([&] { s.stop(bad); }), Reason::INVALID_INPUT) << bad;
  }
  EXPECT_EQ(reason_of([&] { s.command("c99"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.output("c99", OutputStream::out); }), Reason::NOT_FOUND);

  const CommandInfo c = s.start({"cat"});
  EXPECT_EQ(reason_of([&] { s.signal(c.id, 0); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.signal(c.id, 65); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.resize(c.id, TerminalSize{}); }), Reason::INVALID_INPUT);  // no terminal
  EXPECT_EQ(reason_of([&] { s.output(c.id, OutputStream::out, 0, 0); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.wait(c.id, 0); }), Reason::INVALID_INPUT);
  s.close_input(c.id);
  EXPECT_EQ(s.wait(c.id, 60'000).exit_code, 0);
  EXPECT_EQ(reason_of([&] { s.write_input(c.id, "late"); }), Reason::INVALID_INPUT);
}

}  // namespace
}  // namespace mayura::testing
