// exec: results, output, timeouts and cancellation that kill everything a
// command started, stdin, env, cwd, and many callers at once.

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_future.hpp>

#include "harness.hpp"

namespace mayura::testing {
namespace {

using ExecTest = NativeTest;

// live pids inside the sandbox other than the init and the shell that asks
// (a zombie is dead; the init reaps it a moment later)
int other_processes(const Sandbox& s) {
  const ExecResult r = s.exec({"/bin/sh", "-c",
                               "n=0; for p in /proc/[0-9]*; do p=${p#/proc/}; [ $p = 1 ] || [ $p = $$ ] || "
                               "[ \"$(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)\" != Z ] || continue; "
                               "[ $p = 1 ] || [ $p = $$ ] || [ ! -e /proc/$p ] || n=$((n+1)); done; echo $n"});
  // the for-loop's own subshells are gone by the time it prints
  return std::stoi(r.stdout);
}

TEST_F(ExecTest, ExitCodesAndSeparateStreams) {
  auto s = create();
  auto r = s.exec({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout, "out\n");
  EXPECT_EQ(r.stderr, "err\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.truncated);
  EXPECT_GE(r.duration_ms, 0);
  EXPECT_EQ(s.exec({"/bin/sh", "-c", "kill -9 $$"}).exit_code, 137);
  EXPECT_EQ(s.exec({"true"}).exit_code, 0);  // PATH search
  auto missing = s.exec({"no-such-command"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.stderr.find("no-such-command"), std::string::npos);
  EXPECT_EQ(s.exec({"/etc/passwd"}).exit_code, 126);  // not executable
}

TEST_F(ExecTest, TimeoutKillsEverythingTheCommandStarted) {
  auto s = create();
  ExecOptions o;
  o.timeout_ms = 300;
  auto r = s.exec({"/bin/sh", "-c",
                   "sleep 1000 & "                                      // a child
                   "setsid sleep 1000 & "                               // a new session
                   "(sleep 1000 &) ; "                                  // double-forked
                   "sh -c 'trap \"\" TERM; sleep 1000' & "              // ignoring SIGTERM
                   "sleep 1000 & kill -STOP $! ; "                      // stopped
                   "echo started; wait"},
                  o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_EQ(r.stdout, "started\n");
  EXPECT_EQ(other_processes(s), 0);
}

TEST_F(ExecTest, ACommandThatExitsLeavesWhatItStartedWithSetsidRunning) {
  auto s = create();
  auto r = s.exec({"/bin/sh", "-c", "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!"});
  EXPECT_EQ(r.exit_code, 0);
  const std::string pid = r.stdout.substr(0, r.stdout.size() - 1);
  // (it may still be between fork and exec for a moment)
  EXPECT_EQ(sh(s, "for i in $(seq 100); do [ \"$(cat /proc/" + pid + "/comm)\" = sleep ] && break; sleep 0.01; done; cat /proc/" + pid + "/comm"), "sleep\n");
  // Output a child holds open does not keep the exec waiting: what the child
  // writes after the command exited is not part of the result.
  auto held = s.exec({"/bin/sh", "-c", "(sleep 2; echo late) & echo done"});
  EXPECT_EQ(held.exit_code, 0);
  EXPECT_EQ(held.stdout, "done\n");
}

TEST_F(ExecTest, CancellationKillsAndFailsCancelled) {
  auto s = create();
  std::stop_source stop;
  ExecOptions o;
  o.cancellation = stop.get_token();
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop.request_stop();
  });
  EXPECT_EQ(reason_of([&] { s.exec({"/bin/sh", "-c", "setsid sleep 1000 & sleep 1000"}, o); }), Reason::CANCELLED);
  canceller.join();
  EXPECT_EQ(other_processes(s), 0);
  // a cancelled token refuses at once
  EXPECT_EQ(reason_of([&] { s.exec({"true"}, o); }), Reason::CANCELLED);
}

TEST_F(ExecTest, AsioCancellationSlotCancels) {
  auto s = create();
  boost::asio::cancellation_signal signal;
  auto f = s.async_exec({"/bin/sh", "-c", "sleep 1000"}, {},
                        boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::use_future));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  signal.emit(boost::asio::cancellation_type::terminal);
  EXPECT_EQ(reason_of([&] { f.get(); }), Reason::CANCELLED);
  EXPECT_EQ(other_processes(s), 0);
  auto ok = s.async_exec({"echo", "hi"}, {}, boost::asio::use_future).get();
  EXPECT_EQ(ok.stdout, "hi\n");
}

TEST_F(ExecTest, OutputIsBoundedAndStreamed) {
  auto s = create();
  ExecOptions o;
  o.max_output_bytes = 1000;
  std::size_t streamed = 0;
  int chunks = 0;
  o.on_stdout = [&](std::string_view c) {
    streamed += c.size();
    ++chunks;
  };
  auto r = s.exec({"/bin/sh", "-c", "head -c 300000 /dev/zero; echo err >&2"}, o);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.truncated);
  EXPECT_EQ(r.stdout.size(), 1000u);
  EXPECT_EQ(streamed, 300000u);
  EXPECT_GE(chunks, 1);
  EXPECT_EQ(r.stderr, "err\n");
}

TEST_F(ExecTest, StdinEnvAndCwd) {
  CreateOptions c;
  c.env = {{"NODE_ENV", "test"}, {"SHARED", "sandbox"}};
  auto s = create(c);
  ExecOptions o;
  o.stdin = std::string("line one\nline two\n");
  EXPECT_EQ(s.exec({"wc", "-l"}, o).stdout, "2\n");
  o = {};
  o.env = {{"SHARED", "exec"}, {"EXTRA", "1"}};
  EXPECT_EQ(sh(s, "echo $NODE_ENV $SHARED $EXTRA $HOME", o), "test exec 1 /workspace\n");
  EXPECT_EQ(sh(s, "echo $NODE_ENV $SHARED $EXTRA"), "test sandbox\n");
  sh(s, "mkdir -p app/sub");
  o = {};
  o.cwd = "app";
  EXPECT_EQ(sh(s, "pwd", o), "/workspace/app\n");
  o.cwd = "/tmp";
  EXPECT_EQ(sh(s, "pwd", o), "/tmp\n");
  o.cwd = "missing";
  auto r = s.exec({"pwd"}, o);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_NE(r.stderr.find("cannot enter /workspace/missing"), std::string::npos) << r.stderr;
  // a big stdin the command does not read does not hang or kill the host
  o = {};
  o.stdin = std::string(4 << 20, 'x');
  EXPECT_EQ(s.exec({"true"}, o).exit_code, 0);
}

TEST_F(ExecTest, EnvValuesNeverReachAHostCommandLine) {
  const std::string secret = "mayura-secret-" + std::to_string(::getpid());
  CreateOptions c;
  c.env = {{"TOKEN", secret}};
  auto s = create(c);
  ExecOptions o;
  o.env = {{"OTHER", secret + "-exec"}};
  std::atomic<bool> found{false};
  std::thread runner([&] { s.exec({"/bin/sh", "-c", "sleep 1"}, o); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string cmdline = read_host(e.path() / "cmdline");
    if (cmdline.find(secret) != std::string::npos) found = true;
  }
  runner.join();
  EXPECT_FALSE(found);
  EXPECT_EQ(sh(s, "echo $TOKEN"), secret + "\n");
  // and in no file the engine keeps
  for (const auto& e : std::filesystem::recursive_directory_iterator(options().state_dir)) {
    if (e.is_regular_file()) {
      EXPECT_EQ(read_host(e.path()).find(secret), std::string::npos) << e.path();
    }
  }
}

TEST_F(ExecTest, ManyThreadsExecAtOnce) {
  auto s = create();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < 5; ++j) {
        auto r = s.exec({"/bin/sh", "-c", "echo " + std::to_string(i * 100 + j)});
        if (r.exit_code == 0 && r.stdout == std::to_string(i * 100 + j) + "\n") ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 40);
}

TEST_F(ExecTest, AHostThatIgnoresSigchldStillGetsExitStatuses) {
  struct sigaction old {};
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGCHLD, &ignore, &old);
  auto s = create();
  ExecOptions o;
  o.timeout_ms = 5000;
  auto r = s.exec({"/bin/sh", "-c", "exit 3"}, o);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(sh(s, "grep SigIgn /proc/self/status"), "SigIgn:\t0000000000000000\n");
  s.release();
  ::sigaction(SIGCHLD, &old, nullptr);
}

TEST_F(ExecTest, TheInitReapsOrphans) {
  auto s = create();
  sh(s, "for i in 1 2 3 4 5; do (sleep 0.1 &) ; done");
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(sh(s, "cat /proc/[0-9]*/stat 2>/dev/null | awk '{print $3}' | grep -c Z || true"), "0\n");
}

}  // namespace
}  // namespace mayura::testing
