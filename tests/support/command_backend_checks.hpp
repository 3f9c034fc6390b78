#pragma once
// What a sandbox of the command backend must do, through the Sandbox handle
// alone: the unit tests run these over host shells, the integration tests
// inside native sandboxes. Paths are relative (each test has a workdir of
// its own); every check leaves the sandbox usable.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "mayura/sandbox.hpp"
#include "output_event.hpp"
#include "reason_of.hpp"

namespace mayura::testing::command_checks {

// A deadline for a check that waits for an event (a timeout, a
// cancellation): its token is cancelled only if the check has not ended
// `bound` after the backstop was made, so that a backend missing the event
// fails the check instead of hanging it. Never a measure of speed.
class Backstop {
 public:
  explicit Backstop(std::chrono::seconds bound = std::chrono::seconds(30))
      : thread_([this, bound] {
          std::unique_lock lock(mutex_);
          if (!changed_.wait_for(lock, bound, [this] { return ended_; })) stop_.request_stop();
        }) {}
  ~Backstop() {
    {
      std::lock_guard lock(mutex_);
      ended_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }
  Backstop(const Backstop&) = delete;
  Backstop& operator=(const Backstop&) = delete;
  std::stop_token token() const { return stop_.get_token(); }

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  bool ended_ = false;
  std::stop_source stop_;
  std::thread thread_;  // last: it uses everything above
};

inline std::string every_byte(std::size_t repeat) {
  std::string s;
  for (std::size_t r = 0; r < repeat; ++r) {
    for (int i = 0; i < 256; ++i) s.push_back(static_cast<char>(i));
  }
  return s;
}

// What `fn` threw, as text; empty if it threw nothing. For calls made where
// an exception must not escape (another thread) or should read as a check.
template <class Fn>
std::string what_it_threw(Fn&& fn) {
  try {
    fn();
  } catch (const SandboxError& e) {
    return std::string(reason_name(e.reason())) + ": " + e.what();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

inline ExecResult sh(const Sandbox& s, const std::string& script, const ExecOptions& options = {}) {
  return s.exec({"sh", "-c", script}, options);
}

// Whether a process of the sandbox with this pid (written by a command into
// `pid_file`) is still there. A zombie is not: where nobody reaps orphans
// (a host whose pid 1 does not), a killed process stays one.
inline bool still_running(const Sandbox& s, const std::string& pid_file) {
  const std::string pid = s.read_file(pid_file);
  EXPECT_FALSE(pid.empty());
  return sh(s, "s=$(cat /proc/" + pid.substr(0, pid.find('\n')) +
                   "/stat 2>/dev/null) || exit 1; set -- ${s##*) }; [ \"$1\" != Z ]")
             .exit_code == 0;
}

inline void exit_codes_and_streams(const Sandbox& s) {
  const ExecResult r = sh(s, "echo out; echo err >&2; printf 'no newline'; exit 3");
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.stdout, "out\nno newline");
  EXPECT_EQ(r.stderr, "err\n");
  EXPECT_FALSE(r.truncated);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(s.exec({"true"}).exit_code, 0);
  EXPECT_EQ(s.exec({"false"}).exit_code, 1);
  EXPECT_EQ(sh(s, "exit 255").exit_code, 255);
  // like a shell: 127 not found, 126 not runnable, 128 + n killed by signal n
  EXPECT_EQ(s.exec({"no-such-command-here"}).exit_code, 127);
  s.write_file("not-runnable", "#!/bin/sh\n");
  EXPECT_EQ(s.exec({"./not-runnable"}).exit_code, 126);
  EXPECT_EQ(sh(s, "kill -9 $$").exit_code, 137);
  EXPECT_EQ(sh(s, "kill -TERM $$").exit_code, 143);
  // a command that kills its own process group (which holds the backend's
  // wrapper too) still has a result
  EXPECT_EQ(sh(s, "kill -9 0").exit_code, 137);
  // a name starting with '-' is a command, not an option
  EXPECT_EQ(s.exec({"-x"}).exit_code, 127);
}

inline void arguments_arrive_unchanged(const Sandbox& s) {
  const std::vector<std::string> args = {"it's",
                                         "a b",
                                         "new\nline",
                                         "$(id) `id` $HOME \\ \" ; & | * ?",
                                         "",
                                         "-n",
                                         "\xc3\xbc\xe2\x9c\x93",
                                         "'",
                                         every_byte(1).substr(1)};
  std::vector<std::string> argv = {"sh", "-c", "for a do printf '%s\\0' \"$a\"; done", "sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ExecResult r = s.exec(argv);
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
  std::string expected;
  for (const auto& a : args) expected += a + std::string(1, '\0');
  EXPECT_EQ(r.stdout, expected);
  // 100 KB of arguments: longer than a command line the transport takes
  const std::string big(100'000, 'x');
  const ExecResult b = s.exec({"sh", "-c", "printf %s \"$1\" | wc -c", "sh", big});
  EXPECT_EQ(b.exit_code, 0) << b.stderr;
  EXPECT_EQ(b.stdout.substr(b.stdout.find_first_not_of(' ')), "100000\n");
}

inline void env_cwd_and_stdin(const Sandbox& s) {
  ExecOptions o;
  o.env = {{"GREETING", "hello 'world'\n$HOME `id`"}, {"EMPTY", ""}, {"PPID", "7"}};
  EXPECT_EQ(sh(s, "printf '%s|%s' \"$GREETING\" \"${EMPTY-unset}\"", o).stdout, "hello 'world'\n$HOME `id`|");
  // a name a shell keeps read-only still reaches the command as given
  EXPECT_NE(("\n" + s.exec({"env"}, o).stdout).find("\nPPID=7\n"), std::string::npos);
  sh(s, "mkdir -p 'sub dir/deeper'");
  ExecOptions in_sub;
  in_sub.cwd = "sub dir";
  const std::string pwd = s.exec({"pwd"}, in_sub).stdout;
  EXPECT_EQ(pwd.substr(pwd.rfind('/') + 1), "sub dir\n");
  const std::string workdir = s.exec({"pwd"}).stdout;
  in_sub.cwd = workdir.substr(0, workdir.size() - 1) + "/sub dir/deeper";  // absolute
  EXPECT_EQ(s.exec({"pwd"}, in_sub).stdout, in_sub.cwd + "\n");
  ExecOptions missing;
  missing.cwd = "no such dir";
  const ExecResult m = s.exec({"true"}, missing);
  EXPECT_EQ(m.exit_code, 126);
  EXPECT_NE(m.stderr.find("cannot enter"), std::string::npos);

  ExecOptions input;
  input.stdin = every_byte(1000);
  const ExecResult c = s.exec({"cat"}, input);
  EXPECT_EQ(c.exit_code, 0);
  EXPECT_EQ(c.stdout, *input.stdin);
  input.stdin = "";
  EXPECT_EQ(s.exec({"cat"}, input).stdout, "");
  // no stdin: an empty input, at once
  const ExecResult none = s.exec({"cat"});
  EXPECT_EQ(none.exit_code, 0);
  EXPECT_EQ(none.stdout, "");
  // the tag that lets a timeout find the command is in its environment
  EXPECT_EQ(sh(s, "test -n \"$MAYURA_TAG\"").exit_code, 0);
}

inline void large_output_truncation_and_streaming(const Sandbox& s) {
  const ExecResult big = sh(s, "head -c 3000000 /dev/zero; head -c 2500000 /dev/zero >&2");
  EXPECT_EQ(big.exit_code, 0);
  EXPECT_EQ(big.stdout.size(), 3'000'000u);
  EXPECT_EQ(big.stderr.size(), 2'500'000u);
  EXPECT_FALSE(big.truncated);

  ExecOptions limited;
  limited.max_output_bytes = 10;
  std::string streamed;
  limited.on_stdout = [&](std::string_view chunk) { streamed += chunk; };
  const ExecResult t = sh(s, "head -c 100000 /dev/zero | tr '\\0' a; echo 0123456789abc >&2", limited);
  EXPECT_EQ(t.exit_code, 0);
  EXPECT_EQ(t.stdout, "aaaaaaaaaa");
  EXPECT_EQ(t.stderr, "0123456789");
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(streamed, "aaaaaaaaaa");
  limited.max_output_bytes = 6;
  EXPECT_FALSE(sh(s, "printf 123456", limited).truncated);
  EXPECT_TRUE(sh(s, "printf 1234567", limited).truncated);

  // output arrives while the command runs: the command goes on only once the
  // file it waits for is there, and the test writes that file only once
  // on_stdout has given it the first line, so the line provably streamed
  // before the command ended (if it did not, the command runs until its
  // timeout and the checks below fail)
  std::mutex m;
  std::condition_variable changed;
  std::vector<std::string> chunks;
  bool returned = false;
  ExecOptions streaming;
  streaming.timeout_ms = 30'000;
  streaming.on_stdout = [&](std::string_view chunk) {
    std::lock_guard lock(m);
    chunks.emplace_back(chunk);
    changed.notify_all();
  };
  std::string err;
  streaming.on_stderr = [&](std::string_view chunk) {
    std::lock_guard lock(m);
    err += chunk;
  };
  // when the test had the first line, and when it had written the file the
  // command waits for: the command ran across that span
  std::chrono::steady_clock::time_point had_first, wrote_file;
  std::thread answer([&] {
    std::unique_lock lock(m);
    changed.wait(lock, [&] { return returned || !chunks.empty(); });
    if (returned) return;
    had_first = std::chrono::steady_clock::now();
    lock.unlock();
    EXPECT_EQ(what_it_threw([&] { s.write_file("streamed", ""); }), "");
    wrote_file = std::chrono::steady_clock::now();
  });
  const auto start = std::chrono::steady_clock::now();
  const ExecResult r =
      sh(s, "echo first; echo e >&2; while [ ! -e streamed ]; do sleep 0.05; done; echo second", streaming);
  const auto end = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(m);
    returned = true;
  }
  changed.notify_all();
  answer.join();
  EXPECT_FALSE(r.timed_out) << "the first line was not streamed while the command ran";
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.stdout, "first\nsecond\n");
  EXPECT_EQ(err, "e\n");
  ASSERT_GE(chunks.size(), 2u);
  EXPECT_EQ(chunks.front(), "first\n");
  // duration_ms is the command's run: it began before its first line reached
  // the test and ended after the file it waited for was written, all within
  // the call (each bound a whole millisecond looser, for the rounding)
  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  EXPECT_GE(r.duration_ms, ms(wrote_file - had_first) - 1);
  EXPECT_LE(r.duration_ms, ms(end - start) + 1);
}

inline void timeout_kills_every_process(const Sandbox& s) {
  // The timeout is the event the checks wait for; the backstop only keeps a
  // backend that misses it from hanging the test (it cancels the command).
  const Backstop backstop;
  ExecOptions o;
  o.timeout_ms = 700;
  o.cancellation = backstop.token();
  // a child in the background, one in a session of its own, one ignoring
  // SIGTERM: the tag finds them all
  ExecResult r;
  EXPECT_EQ(what_it_threw([&] {
              r = sh(s,
                     "sleep 1000 & echo $! > bg.pid; setsid sleep 1000 & echo $! > session.pid;"
                     "sh -c 'trap \"\" TERM; sleep 1000' & echo $! > stubborn.pid; echo started; wait",
                     o);
            }),
            "")
      << "the command did not end at its timeout";
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.exit_code.has_value());
  EXPECT_EQ(r.stdout, "started\n");
  EXPECT_GE(r.duration_ms, 700);
  for (const char* pid : {"bg.pid", "session.pid", "stubborn.pid"}) EXPECT_FALSE(still_running(s, pid)) << pid;
  // what it wrote before the timeout is all in the result, however much
  o.timeout_ms = 1'000;
  const ExecResult wrote = sh(s, "sleep 0.3; head -c 3000000 /dev/zero; sleep 1000", o);
  EXPECT_TRUE(wrote.timed_out);
  EXPECT_EQ(wrote.stdout.size(), 3'000'000u);
  // a command that ends in time is not timed out
  o.timeout_ms = 30'000;
  const ExecResult quick = sh(s, "echo ok", o);
  EXPECT_FALSE(quick.timed_out);
  EXPECT_EQ(quick.exit_code, 0);
}

inline void cancellation_kills_every_process(const Sandbox& s) {
  std::stop_source stop;
  ExecOptions o;
  o.cancellation = stop.get_token();
  // The cancellation is the event; a command it misses ends at this
  // timeout with a result instead of CANCELLED, and the check fails.
  o.timeout_ms = 30'000;
  // The cancellation comes only once the command said its child runs and
  // the test saw that child running: a command cancelled before it started
  // anything would leave nothing running whether or not the cancel kills.
  OutputEvent out;
  o.on_stdout = out.sink();
  bool running_before = false;
  std::thread canceller([&] {
    if (out.wait_for("started\n", std::chrono::seconds(20))) running_before = still_running(s, "cancelled.pid");
    stop.request_stop();
  });
  EXPECT_EQ(reason_of([&] { sh(s, "sleep 1000 & echo $! > cancelled.pid; echo started; wait", o); }),
            Reason::CANCELLED);
  canceller.join();
  ASSERT_TRUE(running_before) << "the command's child was not seen running before the cancellation; it printed "
                              << out.seen();
  EXPECT_FALSE(still_running(s, "cancelled.pid"));
  // the sandbox goes on
  EXPECT_EQ(s.exec({"true"}).exit_code, 0);
}

inline void binary_large_and_nested_files(const Sandbox& s) {
  const std::string binary = every_byte(64);
  s.write_file("bin.dat", binary);
  EXPECT_EQ(s.read_file("bin.dat"), binary);
  EXPECT_EQ(sh(s, "wc -c < bin.dat | tr -d ' '").stdout, "16384\n");
  s.write_file("empty", "");
  EXPECT_EQ(s.read_file("empty"), "");
  s.write_file("a/b/c/deep.txt", "deep");  // parents are made
  EXPECT_EQ(sh(s, "cat a/b/c/deep.txt").stdout, "deep");
  s.write_file("-rf", "dash");
  EXPECT_EQ(s.read_file("-rf"), "dash");
  s.write_file("with space 'and quotes'", "q");
  EXPECT_EQ(s.read_file("with space 'and quotes'"), "q");
  // an absolute path
  const std::string here = s.exec({"pwd"}).stdout;
  const std::string absolute = here.substr(0, here.size() - 1) + "/abs.txt";
  s.write_file(absolute, "abs");
  EXPECT_EQ(s.read_file("abs.txt"), "abs");

  // 2 MiB: two of the reads' 1 MiB chunks, and some 85 command lines of
  // 32 KiB where the transport takes no stdin (8 MiB took four times as
  // long and crossed no boundary these do not)
  std::string big;
  big.reserve(2u << 20);
  while (big.size() < (2u << 20)) big += every_byte(1);
  big.resize(2u << 20);
  big[12345] = 'x';
  s.write_file("big", big);
  EXPECT_EQ(sh(s, "wc -c < big | tr -d ' '").stdout, "2097152\n");
  const std::string back = s.read_file("big");
  EXPECT_EQ(back.size(), big.size());
  EXPECT_TRUE(back == big);

  // new files are 0644; an overwrite keeps the mode and leaves no
  // temporary file behind
  EXPECT_EQ(sh(s, "stat -c %a bin.dat").stdout, "644\n");
  sh(s, "chmod 750 bin.dat");
  s.write_file("bin.dat", "again");
  EXPECT_EQ(sh(s, "stat -c %a bin.dat; cat bin.dat").stdout, "750\nagain");
  EXPECT_EQ(sh(s, "ls -a | grep -c mayura-write").stdout, "0\n");

  ReadOptions small;
  small.max_bytes = 4;
  EXPECT_EQ(reason_of([&] { s.read_file("bin.dat", small); }), Reason::LIMIT_REACHED);
  small.max_bytes = 5;
  EXPECT_EQ(s.read_file("bin.dat", small), "again");
}

inline void listing_and_removal(const Sandbox& s) {
  sh(s, "mkdir -p d/sub && echo hi > d/f && ln -s f d/link && mkfifo d/fifo && chmod 640 d/f");
  // names a sandbox's processes make and no caller would: bytes that are no
  // UTF-8 and the longest name a file system takes among them
  const std::vector<std::string> awkward = {
      "with space", "new\nline", "quote'\"",     "\xc3\xbcnicode \xe2\x9c\x93", ".hidden", "-dash",
      "*",          "caf\xe9",   "\xff\xfe\x80", std::string(255, 'n')};
  for (const auto& name : awkward) s.write_file("d/" + name, name);
  const auto entries = s.list("d");
  std::vector<std::string> names;
  names.reserve(entries.size());
  for (const auto& e : entries) names.push_back(e.name);
  std::vector<std::string> expected = awkward;
  for (const char* n : {"f", "fifo", "link", "sub"}) expected.emplace_back(n);
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
  for (const auto& e : entries) {
    if (e.name == "f") {
      EXPECT_EQ(e.type, FileType::file);
      EXPECT_EQ(e.size, 3u);
      EXPECT_EQ(e.mode, 0640u);
      // the mtime the sandbox's own stat gives (whole seconds on BusyBox)
      const std::string seconds = sh(s, "stat -c %Y d/f").stdout;
      EXPECT_EQ(e.mtime_ms / 1000, std::stoll(seconds));
    }
    if (e.name == "fifo") {
      EXPECT_EQ(e.type, FileType::other);
    } else if (e.name == "link") {
      EXPECT_EQ(e.type, FileType::symlink);
    } else if (e.name == "sub") {
      EXPECT_EQ(e.type, FileType::directory);
    } else if (e.name == "new\nline") {
      EXPECT_EQ(e.size, 8u);
    }
  }
  EXPECT_FALSE(s.list(".").empty());
  s.remove("d/f");
  EXPECT_EQ(s.list("d").size(), expected.size() - 1);
  sh(s, "mkdir keep && echo k > keep/file && ln -s ../keep d/sub/dirlink");
  s.remove("d");  // recursive, and not through the link
  EXPECT_EQ(s.read_file("keep/file"), "k\n");
  EXPECT_EQ(reason_of([&] { s.list("d"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.remove("d"); }), Reason::NOT_FOUND);
}

inline void errors_by_reason(const Sandbox& s) {
  sh(s, "mkdir -p adir && echo x > afile");
  EXPECT_EQ(reason_of([&] { s.read_file("nothing"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.list("nothing"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.remove("nothing"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.read_file("adir"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.list("afile"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.write_file("adir", "x"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.write_file("afile/x", "x"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.write_file("adir/", "x"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(s.read_file("afile"), "x\n");
}

}  // namespace mayura::testing::command_checks
