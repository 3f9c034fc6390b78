// exec: results and exit codes, output (apart, large, bounded, streamed),
// arguments, env, cwd, stdin, and many callers at once.

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <stop_token>
#include <optional>

#include <boost/asio/use_future.hpp>
#include <utility>

#include "areas.hpp"
#include "check.hpp"
#include "mayura/runtime.hpp"

namespace mayura::testing::conformance {
namespace {

ExecResult run_sh(const Sandbox& s, const std::string& script, const ExecOptions& options = {}) {
  return s.exec({"/bin/sh", "-c", script}, options);
}

// An awk program printing `lines` numbered lines of `width` digits: output
// whose every byte is known, so that a dropped, doubled or reordered piece
// shows.
std::string numbered_lines_awk(int lines, int width, const std::string& to = "") {
  return "awk 'BEGIN { for (i = 0; i < " + std::to_string(lines) + "; i++) printf \"%0" + std::to_string(width) +
         "d\\n\", i" + (to.empty() ? "" : " > \"" + to + "\"") + " }'";
}

// What that program prints (`width` is more than the digits of `lines`).
std::string numbered_lines(int lines, int width) {
  std::string out;
  for (int i = 0; i < lines; ++i) {
    const std::string n = std::to_string(i);
    out.append(static_cast<std::size_t>(width) - n.size(), '0').append(n).append("\n");
  }
  return out;
}

void result_fields(const Sandbox& s) {
  const ExecResult r = run_sh(s, "printf out; printf err >&2; exit 3");
  check_eq(r.exit_code, 3, "exit_code");
  check_eq(r.stdout, "out", "stdout");
  check_eq(r.stderr, "err", "stderr");
  check_eq(r.truncated, false, "truncated");
  check_eq(r.timed_out, false, "timed_out");
  check_eq(r.oom_killed, false, "oom_killed");
  check(r.duration_ms >= 0, "duration_ms is negative: " + show(r.duration_ms));

  // duration_ms is the command's time: at least what it slept (and no upper
  // bound, which a slow or busy machine could pass)
  const ExecResult slept = s.exec({"sleep", "1"});
  check_eq(slept.exit_code, 0, "exit_code of sleep 1");
  check(slept.duration_ms >= 1000, "duration_ms of sleep 1 is " + show(slept.duration_ms));

  // a command that ends before its timeout is no timeout
  ExecOptions o;
  o.timeout_ms = 60'000;
  const ExecResult quick = run_sh(s, "exit 4", o);
  check_eq(quick.exit_code, 4, "exit_code of a command that ended before its timeout");
  check_eq(quick.timed_out, false, "timed_out of a command that ended before its timeout");
}

void exit_codes(const Sandbox& s) {
  for (const int code : {0, 1, 2, 3, 42, 126, 127, 128, 254, 255}) {
    const ExecResult r = run_sh(s, "exit " + std::to_string(code));
    check_eq(r.exit_code, code, "exit_code of sh -c 'exit " + std::to_string(code) + "'");
  }
  check_eq(s.exec({"true"}).exit_code, 0, "exit_code of true (found on PATH)");
  check_eq(s.exec({"false"}).exit_code, 1, "exit_code of false");
  // killed by a signal: 128 + its number, as a shell reports it
  check_eq(run_sh(s, "kill -KILL $$").exit_code, 137, "exit_code of a shell that killed itself with SIGKILL");
  check_eq(run_sh(s, "kill -TERM $$").exit_code, 143, "exit_code of a shell that killed itself with SIGTERM");
  // a command that does not exist still gives a result, not an error
  const ExecResult missing = s.exec({"conformance-no-such-command-" + unique_token()});
  check(missing.exit_code.has_value() && *missing.exit_code != 0 && !missing.timed_out,
        "a command that does not exist gave exit_code " + show(missing.exit_code) + ", timed_out " +
            show(missing.timed_out) + " (a failing exit code expected)");
}

void streams_apart(const Sandbox& s) {
  const ExecResult r = run_sh(s, "i=0; while [ $i -lt 200 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done");
  std::string out, err;
  for (int i = 0; i < 200; ++i) {
    out += "out" + std::to_string(i) + "\n";
    err += "err" + std::to_string(i) + "\n";
  }
  check_eq(r.exit_code, 0, "exit_code");
  check_eq(r.stdout, out, "stdout (only what went to stdout, in order)");
  check_eq(r.stderr, err, "stderr (only what went to stderr, in order)");
}

void argv_intact(const Sandbox& s) {
  const std::vector<std::string> args = {"two words",
                                         " leading",
                                         "trailing ",
                                         "'single'",
                                         "\"double\"",
                                         "back\\slash",
                                         "$HOME",
                                         "`id`",
                                         "$(id)",
                                         "semi;colon|pipe&amp",
                                         "a\nnewline",
                                         "tab\there",
                                         "*",
                                         "",
                                         "-n",
                                         "--",
                                         std::string("\xc3\xbcnic\xc3\xb8") + "de \xe2\x98\x83",
                                         std::string("\x01\x7f\xff", 3)};
  std::vector<std::string> argv = {"/bin/sh", "-c", "for a; do printf '[%s]' \"$a\"; done", "sh"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string expected;
  for (const auto& a : args) expected += "[" + a + "]";
  const ExecResult r = s.exec(argv);
  check_eq(r.exit_code, 0, "exit_code");
  check_eq(r.stdout, expected, "each argument, as given and apart (no shell between the caller and the command)");
}

void large_output(const Sandbox& s) {
  // 1 MiB on each stream at once: a provider that reads one stream to its
  // end before the other stalls here, as the command blocks on the other
  const std::string expected = numbered_lines(65536, 15);
  const ExecResult r =
      run_sh(s, numbered_lines_awk(65536, 15) + " & " + numbered_lines_awk(65536, 15, "/dev/stderr") + "; wait");
  check_eq(r.exit_code, 0, "exit_code");
  check_eq(r.stdout, expected, "1 MiB of stdout");
  check_eq(r.stderr, expected, "1 MiB of stderr");
  check_eq(r.truncated, false, "truncated (1 MiB is under the bound)");
}

void output_truncation(const Sandbox& s) {
  const std::string lines = numbered_lines(2000, 5);  // 12000 bytes
  ExecOptions o;
  o.max_output_bytes = 1000;
  ExecResult r = run_sh(s, numbered_lines_awk(2000, 5) + "; echo done >&2", o);
  check_eq(r.exit_code, 0, "exit_code of a command whose output went over max_output_bytes (it runs to its end)");
  check_eq(r.stdout, lines.substr(0, 1000), "stdout over max_output_bytes 1000 (its first 1000 bytes)");
  check_eq(r.stderr, "done\n", "stderr, under the bound, while stdout went over it");
  check_eq(r.truncated, true, "truncated");

  // the bound is of each stream: stderr over it, stdout under it
  r = run_sh(s, numbered_lines_awk(2000, 5) + " >&2; echo done", o);
  check_eq(r.stderr, lines.substr(0, 1000), "stderr over max_output_bytes 1000");
  check_eq(r.stdout, "done\n", "stdout, under the bound, while stderr went over it");
  check_eq(r.truncated, true, "truncated when only stderr went over");

  // exactly the bound is not over it
  o.max_output_bytes = lines.size();
  r = run_sh(s, numbered_lines_awk(2000, 5), o);
  check_eq(r.stdout, lines, "stdout of exactly max_output_bytes");
  check_eq(r.truncated, false, "truncated with output of exactly max_output_bytes");
}

// What the callbacks were given; they may be called from any thread.
struct Streamed {
  std::mutex mutex;
  std::condition_variable_any changed;  // waits can end on a stop_token
  std::string out, err;

  ExecOptions options() {
    ExecOptions o;
    o.on_stdout = [this](std::string_view chunk) {
      std::lock_guard lock(mutex);
      out.append(chunk);
      changed.notify_all();
    };
    o.on_stderr = [this](std::string_view chunk) {
      std::lock_guard lock(mutex);
      err.append(chunk);
    };
    return o;
  }
};

void streaming(const Sandbox& s) {
  {
    // As it arrives: the command writes its first part, then waits for a
    // file that the test writes only once on_stdout has given it that part,
    // so the part provably reached the caller while the command ran. If it
    // does not, the command waits until its timeout.
    Scratch dir(s, "streaming");
    Streamed streamed;
    ExecOptions o = streamed.options();
    o.cwd = dir.relative();
    o.timeout_ms = std::chrono::duration_cast<std::chrono::milliseconds>(kHangBound).count();
    std::string answer_failed;
    // Stopped (and joined) once exec has returned, however it did.
    OwnedThread answer("conformance", [&](std::stop_token returned) {
      std::unique_lock lock(streamed.mutex);
      if (!streamed.changed.wait(lock, std::move(returned), [&] { return streamed.out.size() >= 5; })) return;
      lock.unlock();
      try {
        s.write_file(dir.path("streamed"), "");
      } catch (const std::exception& e) {
        answer_failed = e.what();
      }
    });
    const ExecResult r =
        run_sh(s, "printf first; printf E1 >&2; " + wait_for_file("streamed") + "; printf second; printf E2 >&2", o);
    answer.request_stop();
    answer.join();
    check(answer_failed.empty(), "writing the file the command waits for failed: " + answer_failed);
    std::lock_guard lock(streamed.mutex);
    check(!r.timed_out, "on_stdout was not given the output written before the command waited for the caller (" +
                            show(streamed.out) + " so far), so the command was never told to go on and timed out");
    check_eq(r.exit_code, 0, "exit_code");
    check_eq(streamed.out, r.stdout, "what on_stdout was given, against the result's stdout");
    check_eq(streamed.err, r.stderr, "what on_stderr was given, against the result's stderr");
    check_eq(r.stdout, "firstsecond", "stdout");
    check_eq(r.stderr, "E1E2", "stderr");
  }
  // and large output whole
  Streamed streamed;
  const ExecResult big = run_sh(s, numbered_lines_awk(16384, 15), streamed.options());
  std::lock_guard lock(streamed.mutex);
  check_eq(streamed.out, big.stdout, "what on_stdout was given of 256 KiB, against the result's stdout");
  check_eq(big.stdout, numbered_lines(16384, 15), "256 KiB of stdout");
}

void env(const Sandbox& s) {
  const std::map<std::string, std::string> values = {
      {"CONF_SPACES", "two words  and  more "},
      {"CONF_QUOTES", "'single' \"double\""},
      {"CONF_NEWLINES", "line one\nline two\n"},
      {"CONF_SHELL", "$HOME `id` $(id) \\ ; | & * ~"},
      {"CONF_EMPTY", ""},
      {"CONF_UNICODE",
       "\xc3\xbcnic\xc3\xb8"
       "de \xe2\x98\x83"},
      {"CONF_EQUALS", "a=b=c"},
      {"CONF_CONTROL", "\x01\t\x7f"},
  };
  ExecOptions o;
  o.env = values;
  std::string script, expected;
  for (const auto& [name, value] : values) {
    script += "printf '%s=[%s]' " + name + " \"${" + name + "-unset}\"; ";
    expected += name + "=[" + value + "]";
  }
  const ExecResult r = run_sh(s, script, o);
  check_eq(r.exit_code, 0, "exit_code");
  check_eq(r.stdout, expected, "the options' env as the command sees it");

  // the env of one exec is that exec's only
  const ExecResult next = run_sh(s, "printf '%s' \"${CONF_SPACES-unset}\"");
  check_eq(next.stdout, "unset", "a variable of the previous exec's env, in the next exec without it");
}

void cwd(const Sandbox& s) {
  Scratch dir(s, "cwd");
  sh(s, "mkdir -p " + quote(dir.path("sub/deeper")) + " && printf here > " + quote(dir.path("sub/file")));
  // Compared as `pwd -P` sees them, so a workdir reached through a link is
  // still the workdir.
  const std::string workdir = sh(s, "cd " + quote(s.workdir()) + " && pwd -P");
  const std::string root = workdir.substr(0, workdir.size() - 1);

  check_eq(sh(s, "pwd -P"), workdir, "the directory of a command without cwd (the workdir)");
  ExecOptions o;
  o.cwd = dir.path("sub");
  check_eq(sh(s, "pwd -P", o), root + "/" + dir.path("sub") + "\n", "cwd " + o.cwd + " (relative to the workdir)");
  check_eq(s.exec({"cat", "file"}, o).stdout, "here", "a relative path in argv, from cwd " + o.cwd);
  o.cwd = dir.absolute("sub/deeper");
  check_eq(sh(s, "pwd -P", o), root + "/" + dir.path("sub/deeper") + "\n", "cwd " + o.cwd + " (absolute)");
  o.cwd = "/";
  check_eq(sh(s, "pwd -P", o), "/\n", "cwd / (outside the workdir)");
}

void stdin_input(const Sandbox& s) {
  // Without stdin a command reads an empty input, on every provider: it
  // must not wait for input that never comes.
  ExecOptions bounded;
  bounded.timeout_ms = 30'000;
  const ExecResult none = s.exec({"cat"}, bounded);
  check(!none.timed_out && none.exit_code == 0 && none.stdout.empty(),
        "cat without stdin gave exit_code " + show(none.exit_code) + ", timed_out " + show(none.timed_out) +
            ", stdout " + show(none.stdout) + " (an empty input expected)");

  if (!s.features().stdin) {
    Scratch dir(s, "stdin");
    ExecOptions o;
    o.stdin = std::string("x");
    check_fails(Reason::INVALID_INPUT, "exec with stdin on a provider without the feature", [&] {
      s.exec({"touch", dir.absolute("ran")}, o);
    });
    check(names_of(s.list(dir.relative())).empty(), "exec with stdin was refused, yet the command ran");
    not_applicable(
        "the provider does not claim stdin (exec with stdin failed INVALID_INPUT and ran nothing, as it must)");
  }

  std::string bytes;
  for (int round = 0; round < 4; ++round) {
    for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
  }
  bytes += "no newline at the end";
  ExecOptions o = bounded;
  o.stdin = bytes;
  const ExecResult echoed = s.exec({"cat"}, o);
  check_eq(echoed.exit_code, 0, "exit_code of cat with stdin");
  check_eq(echoed.stdout, bytes, "stdin (every byte value) as cat read it");

  o.stdin = std::string(1 << 20, 'x');
  const std::string counted = s.exec({"wc", "-c"}, o).stdout;
  check(counted.find("1048576") != std::string::npos, "wc -c of 1 MiB of stdin said " + show(counted));
  // a command that does not read its input neither hangs nor fails for it
  check_eq(s.exec({"true"}, o).exit_code, 0, "exit_code of true given 1 MiB of stdin it never reads");
  o.stdin = std::string();
  check_eq(s.exec({"cat"}, o).stdout, "", "cat with an empty stdin");
}

void exec_from_many_threads(const Sandbox& s) {
  constexpr int kThreads = 6, kEach = 4;
  std::mutex mutex;
  std::vector<std::string> wrong;
  std::vector<OwnedThread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back("conformance", [&, t] {
      for (int i = 0; i < kEach; ++i) {
        const std::string word = std::to_string(t) + "-" + std::to_string(i);
        std::string got;
        try {
          const ExecResult r = s.exec({"/bin/sh", "-c", "printf '%s' \"$1\"; printf '%s' \"$1\" >&2", "sh", word});
          if (r.exit_code == 0 && r.stdout == word && r.stderr == word) continue;
          got = "exit_code " + show(r.exit_code) + ", stdout " + show(r.stdout) + ", stderr " + show(r.stderr);
        } catch (const SandboxError& e) {
          got = "SandboxError " + show(e.reason()) + ": " + e.what();
        }
        std::lock_guard lock(mutex);
        wrong.push_back(word + ": " + got);
      }
    });
  }
  for (auto& t : threads) t.join();
  check(wrong.empty(), std::to_string(wrong.size()) + " of " + std::to_string(kThreads * kEach) + " execs from " +
                           std::to_string(kThreads) + " threads at once went wrong, first " +
                           (wrong.empty() ? "" : wrong.front()));
}

void async_forms(const Sandbox& s) {
  Scratch dir(s, "async");
  const ExecResult r = s.async_exec({"/bin/sh", "-c", "printf async; exit 5"}, {}, boost::asio::use_future).get();
  check_eq(r.exit_code, 5, "exit_code through async_exec");
  check_eq(r.stdout, "async", "stdout through async_exec");
  s.async_write_file(dir.path("f"), "async file", boost::asio::use_future).get();
  check_eq(s.async_read_file(dir.path("f"), boost::asio::use_future).get(), "async file", "async_read_file");
  check_eq(names_of(s.async_list(dir.relative(), boost::asio::use_future).get()), std::vector<std::string>{"f"},
           "async_list");
  s.async_remove(dir.path("f"), boost::asio::use_future).get();
  check(names_of(s.list(dir.relative())).empty(), "async_remove left the file");
  check_fails(Reason::NOT_FOUND, "async_read_file of a missing file",
              [&] { s.async_read_file(dir.path("f"), boost::asio::use_future).get(); });
}

}  // namespace

std::vector<ConformanceTest> exec_tests() {
  return {
      make_test("exec_result_fields", result_fields),
      make_test("exec_exit_codes", exit_codes),
      make_test("exec_streams_apart", streams_apart),
      make_test("exec_argv_intact", argv_intact),
      make_test("exec_large_output", large_output),
      make_test("exec_output_truncation", output_truncation),
      make_test("exec_streaming_callbacks", streaming),
      make_test("exec_env", env),
      make_test("exec_cwd", cwd),
      make_test("exec_stdin", stdin_input),
      make_test("exec_from_many_threads", exec_from_many_threads),
      make_test("exec_async_forms", async_forms),
  };
}

}  // namespace mayura::testing::conformance
