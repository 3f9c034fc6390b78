// exec: results, output, timeouts and cancellation that kill everything a
// command started, stdin, env, cwd, and many callers at once.

#include <signal.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_future.hpp>

#include "tests/support/output_event.hpp"
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
  const auto start = std::chrono::steady_clock::now();
  auto r = s.exec({"/bin/sh", "-c", "echo out; echo err >&2; sleep 0.3; exit 3"});
  const auto call_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout, "out\n");
  EXPECT_EQ(r.stderr, "err\n");
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.truncated);
  // duration_ms is the command's run: at least the 300 ms it slept, and no
  // more than the whole call took (bounds that hold however slow the host)
  EXPECT_GE(r.duration_ms, 300);
  EXPECT_LE(r.duration_ms, call_ms);
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
  // long enough for the five to be up even on an emulated cpu under load
  o.timeout_ms = 5000;
  auto r = s.exec({"/bin/sh", "-c",
                   "sleep 1000 & "                          // a child
                   "setsid sleep 1000 & "                   // a new session
                   "(sleep 1000 &) ; "                      // double-forked
                   "sh -c 'trap \"\" TERM; sleep 1000' & "  // ignoring SIGTERM
                   "sleep 1000 & kill -STOP $! ; "          // stopped
                   "echo started; wait"},
                  o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_EQ(r.stdout, "started\n");
  EXPECT_EQ(other_processes(s), 0);
}

// The host pids of sandbox inits in the options' id range: pid 1 of a pid
// namespace below the host's.
std::vector<pid_t> sandbox_inits(const NativeOptions& options) {
  std::vector<pid_t> inits;
  for (pid_t pid : processes_in_range(options)) {
    const std::string status = read_host("/proc/" + std::to_string(pid) + "/status");
    const auto at = status.find("\nNSpid:");
    if (at == std::string::npos) continue;
    const std::string ids = status.substr(at + 8, status.find('\n', at + 1) - at - 8);
    if (ids.size() > 2 && ids.compare(ids.size() - 2, 2, "\t1") == 0) inits.push_back(pid);
  }
  return inits;
}

// A loaded host can let a command's timeout pass before the init has even
// cloned it: the kill then finds an empty cgroup, and what lands in it later
// must still be killed (seen in the v1 VM, where a command that a sandbox
// process kept stopping then stayed stopped, and the exec failed INTERNAL).
TEST_F(ExecTest, ACommandWhoseTimeoutPassesBeforeItStartsIsStillKilled) {
  auto s = create();
  sh(s, "true");
  // Exactly one (the fixture makes none ahead): the one stopped below is
  // this sandbox's, or the test would prove nothing.
  const std::vector<pid_t> inits = sandbox_inits(options());
  ASSERT_EQ(inits.size(), 1u);
  const pid_t init = inits.front();
  // The init held by the host until well past the timeout (even an emulated
  // cpu's): the request waits in its socket.
  ASSERT_EQ(::kill(init, SIGSTOP), 0);
  std::thread resume([init] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    ::kill(init, SIGCONT);
  });
  ExecOptions o;
  o.timeout_ms = 100;
  std::optional<ExecResult> r;
  std::string failure;
  try {
    r = s.exec({"sleep", "1000"}, o);
  } catch (const SandboxError& e) {
    failure = e.what();
  }
  resume.join();
  ASSERT_TRUE(r.has_value()) << failure;
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->exit_code.has_value());
  EXPECT_EQ(other_processes(s), 0);
}

TEST_F(ExecTest, ACommandThatExitsLeavesWhatItStartedWithSetsidRunning) {
  auto s = create();
  auto r = s.exec({"/bin/sh", "-c", "setsid sleep 1000 >/dev/null 2>&1 </dev/null & echo $!"});
  EXPECT_EQ(r.exit_code, 0);
  const std::string pid = r.stdout.substr(0, r.stdout.size() - 1);
  // (it may still be between fork and exec for a moment)
  EXPECT_EQ(sh(s, "for i in $(seq 100); do [ \"$(cat /proc/" + pid +
                      "/comm)\" = sleep ] && break; sleep 0.01; done; cat /proc/" + pid + "/comm"),
            "sleep\n");
  // Output a child holds open does not keep the exec waiting: what the child
  // writes after the command exited is not part of the result.
  auto held = s.exec({"/bin/sh", "-c", "(sleep 2; echo late) & echo done"});
  EXPECT_EQ(held.exit_code, 0);
  EXPECT_EQ(held.stdout, "done\n");
}

// A command running when its sandbox is released fails GONE, never with
// the 137 of the release's kill: the init may still report the command's
// death before its own. Twenty times, each released once the command runs.
TEST_F(ExecTest, ACommandRunningAtReleaseFailsGone) {
  for (int round = 0; round < 20; ++round) {
    auto s = create();
    OutputEvent out;
    ExecOptions o;
    o.timeout_ms = 60'000;
    o.on_stdout = out.sink();
    bool said_started = false;
    std::thread releaser([&] {
      said_started = out.wait_for("started\n");
      s.release();
    });
    EXPECT_EQ(reason_of([&] {
                s.exec({"/bin/sh", "-c", "echo started; exec sleep 1000"}, o);
              }),
              Reason::GONE)
        << "round " << round;
    releaser.join();
    ASSERT_TRUE(said_started) << out.seen();
  }
}

TEST_F(ExecTest, CancellationKillsAndFailsCancelled) {
  auto s = create();
  std::stop_source stop;
  ExecOptions o;
  o.cancellation = stop.get_token();
  // The command says "started" once its session leader runs sleep; the
  // cancellation comes only after that, and after the test saw both.
  OutputEvent out;
  o.on_stdout = out.sink();
  bool said_started = false;
  int running_before = 0;
  std::thread canceller([&] {
    said_started = out.wait_for("started\n");
    if (said_started) running_before = other_processes(s);
    stop.request_stop();
  });
  EXPECT_EQ(reason_of([&] {
              s.exec(
                  {"/bin/sh", "-c",
                   "setsid sleep 1000 & until [ \"$(cat /proc/$!/comm 2>/dev/null)\" = sleep ]; do sleep 0.01; done; "
                   "echo started; exec sleep 1000"},
                  o);
            }),
            Reason::CANCELLED);
  canceller.join();
  ASSERT_TRUE(said_started) << "the command never said it started: " << out.seen();
  EXPECT_EQ(running_before, 2) << "the setsid sleep and the command's own sleep, before the cancellation";
  EXPECT_EQ(other_processes(s), 0);
  // a cancelled token refuses at once
  EXPECT_EQ(reason_of([&] { s.exec({"true"}, o); }), Reason::CANCELLED);
}

TEST_F(ExecTest, AsioCancellationSlotCancels) {
  auto s = create();
  boost::asio::cancellation_signal signal;
  OutputEvent out;
  ExecOptions o;
  o.on_stdout = out.sink();
  auto f = s.async_exec({"/bin/sh", "-c", "echo started; exec sleep 1000"}, o,
                        boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::use_future));
  // cancelled only once the command runs, and the test saw it
  const bool said_started = out.wait_for("started\n");
  const int running_before = said_started ? other_processes(s) : 0;
  signal.emit(boost::asio::cancellation_type::terminal);
  EXPECT_EQ(reason_of([&] { f.get(); }), Reason::CANCELLED);
  ASSERT_TRUE(said_started) << "the command never said it started: " << out.seen();
  EXPECT_EQ(running_before, 1) << "the command's sleep, before the cancellation";
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
  // The command runs until the test has looked at every host process; the
  // look starts once the command said it runs, and must find the command
  // itself (by its environment, where the values belong) or it proved
  // nothing.
  OutputEvent out;
  o.on_stdout = out.sink();
  ExecResult ran;
  std::thread runner([&] {
    ran = s.exec({"/bin/sh", "-c", "echo started; until [ -e /workspace/looked ]; do sleep 0.05; done"}, o);
  });
  const bool said_started = out.wait_for("started\n");
  bool found = false;
  bool seen_in_environ = false;
  const std::string exec_value = "OTHER=" + secret + "-exec";
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string cmdline = read_host(e.path() / "cmdline");
    if (cmdline.find(secret) != std::string::npos) found = true;
    const std::string environ = read_host(e.path() / "environ");
    if (environ.find(exec_value + std::string(1, '\0')) != std::string::npos) seen_in_environ = true;
  }
  s.write_file("/workspace/looked", "");
  runner.join();
  ASSERT_TRUE(said_started) << out.seen();
  EXPECT_EQ(ran.exit_code, 0);
  EXPECT_TRUE(seen_in_environ) << "the look at the host's processes did not find the running command";
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
  threads.reserve(8);
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
  // Five processes whose parent is gone, each waiting for the test: they are
  // shown to be the init's before they may end.
  const std::string pids = sh(s,
                              "for i in 1 2 3 4 5; do "
                              "(sh -c 'until [ -e /tmp/go ]; do sleep 0.01; done' & echo $!) ; done");
  std::vector<std::string> orphans;
  for (std::size_t at = 0, end; (end = pids.find('\n', at)) != std::string::npos; at = end + 1) {
    orphans.push_back(pids.substr(at, end - at));
  }
  ASSERT_EQ(orphans.size(), 5u) << pids;
  for (const auto& pid : orphans) {
    // field 4 of stat, after the command name in parentheses, is the parent
    EXPECT_EQ(sh(s, "s=$(cat /proc/" + pid + "/stat) && s=${s##*) } && set -- $s && echo $2"), "1\n") << pid;
  }
  sh(s, "touch /tmp/go");
  // Each one's end is the event: a zombie nobody reaps keeps its /proc entry,
  // so every entry must go (the bound only keeps a test that fails from
  // hanging).
  for (const auto& pid : orphans) {
    EXPECT_EQ(sh(s, "i=0; while [ -e /proc/" + pid +
                        " ] && [ $i -lt 6000 ]; do sleep 0.01; i=$((i+1)); done; "
                        "if [ -e /proc/" +
                        pid + " ]; then cut -d' ' -f3 /proc/" + pid + "/stat; else echo reaped; fi"),
              "reaped\n")
        << pid;
  }
}

}  // namespace
}  // namespace mayura::testing
