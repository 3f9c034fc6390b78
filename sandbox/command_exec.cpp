// A command run over a command transport: one call starts it in the
// background (and, a moment later, polls it once), then polls read its
// output files and look for its exit status, sleeping a little longer each
// time nothing has changed.

#include "command_exec.hpp"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <limits>
#include <mutex>

#include "command_exec_scripts.hpp"
#include "mayura/errors.hpp"
#include "mayura/random_id.hpp"
#include "mayura/sandbox_scripts.hpp"

namespace mayura::detail {
namespace {

using Clock = std::chrono::steady_clock;
namespace scripts = exec_scripts;

// After the poll in the starting call, the next comes this long after it;
// each quiet one after that waits half as long again as the one before, up
// to the longest wait.
constexpr auto kFirstPoll = std::chrono::milliseconds(5);
constexpr auto kLongestPoll = std::chrono::milliseconds(200);
constexpr double kPollGrowth = 1.5;
// A timeout beyond a year is no timeout (and must not overflow).
constexpr std::int64_t kYearMs = 365LL * 24 * 3600 * 1000;
// A wrapper that has not started by then never will (no sh in PATH, a
// sandbox out of processes).
constexpr auto kStartBound = std::chrono::seconds(30);
// A shell's way to say a process was killed by SIGKILL.
constexpr int kKilledExitCode = 128 + 9;
constexpr std::uint64_t kNoBound = std::numeric_limits<std::uint64_t>::max();

std::string random_tag() { return random_hex(32); }

[[noreturn]] void cancelled() { throw SandboxError(Reason::CANCELLED, "the command was cancelled"); }

[[noreturn]] void bad_poll() { throw SandboxError(Reason::INTERNAL, "the sandbox sent a malformed poll answer"); }

template <class T>
T field_number(std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc{} || end != text.data() + text.size()) bad_poll();
  return value;
}

// One poll's answer, read from its text.
struct PollAnswer {
  std::optional<int> exit_code;  // the status file was there
  enum class Wrapper { starting, running, gone } wrapper = Wrapper::starting;
  std::uint64_t out_size = 0;
  std::uint64_t err_size = 0;
  std::string out;
  std::string err;

  static PollAnswer parse(std::string_view text) {
    const auto newline = text.find('\n');
    if (newline == std::string_view::npos) bad_poll();
    std::string_view head = text.substr(0, newline);
    std::string_view fields[4];
    for (auto& f : fields) {
      const auto space = std::min(head.find(' '), head.size());
      f = head.substr(0, space);
      head.remove_prefix(std::min(space + 1, head.size()));
    }
    if (!head.empty()) bad_poll();
    PollAnswer a;
    if (fields[0] != "-") {
      a.exit_code = field_number<int>(fields[0]);
      if (*a.exit_code < 0 || *a.exit_code > 255) bad_poll();
    }
    if (fields[1] == "1") a.wrapper = Wrapper::running;
    else if (fields[1] == "0") a.wrapper = Wrapper::gone;
    else if (fields[1] != "-") bad_poll();
    a.out_size = field_number<std::uint64_t>(fields[2]);
    a.err_size = field_number<std::uint64_t>(fields[3]);
    // base64 has no '-': the first one is the line between the streams.
    const std::string_view rest = text.substr(newline + 1);
    const auto dash = rest.find('-');
    if (dash == std::string_view::npos || (dash > 0 && rest[dash - 1] != '\n') || rest.substr(dash + 1, 1) != "\n") {
      bad_poll();
    }
    a.out = decode_base64(rest.substr(0, dash));
    a.err = decode_base64(rest.substr(dash + 2));
    return a;
  }
};

// What of one output stream has been read, and where it goes.
struct Stream {
  std::size_t limit = 0;
  std::string& sink;
  const OutputCallback& callback;
  std::uint64_t read = 0;  // bytes of the file taken so far
  std::uint64_t size = 0;  // the file's size at the last poll

  scripts::StreamRequest next_request() const {
    const std::uint64_t want = read < limit ? std::min<std::uint64_t>(kChunkBytes, limit - read) : 0;
    return {read, want, read + want >= limit ? kNoBound : read + want};
  }
  // Past the limit nothing more is read, nor passed on.
  void take(const std::string& chunk, std::uint64_t file_size) {
    size = file_size;
    if (chunk.empty()) return;
    read += chunk.size();
    sink += chunk;
    if (callback) callback(chunk);
  }
  bool more_waiting() const { return size > read && read < limit; }
};

class CommandRun {
 public:
  CommandRun(CommandChannel& channel, const std::vector<std::string>& argv, const ExecOptions& options)
      : channel_(channel),
        argv_(argv),
        options_(options),
        tag_(random_tag()),
        dir_(scripts::directory_of(tag_)),
        out_{options.max_output_bytes.value_or(std::size_t{16} << 20), result_.stdout, options.on_stdout},
        err_{options.max_output_bytes.value_or(std::size_t{16} << 20), result_.stderr, options.on_stderr} {
    if (options_.timeout_ms && *options_.timeout_ms < kYearMs) {
      deadline_ = start_ + std::chrono::milliseconds(*options_.timeout_ms);
    }
  }

  ExecResult run() {
    try {
      supervise(start());
    } catch (...) {
      abandon();
      if (options_.cancellation.stop_requested()) cancelled();
      throw;
    }
    result_.duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start_).count();
    result_.truncated = out_.size > out_.limit || err_.size > err_.limit;
    return result_;
  }

 private:
  // The directory, standard input and the wrapper, in as few commands as
  // fit (arguments too long for a command line go through a file). The last
  // command waits a moment and polls, so a quick command takes one call.
  PollAnswer start() {
    std::vector<Fragment> fragments{{scripts::make_directory(dir_), std::nullopt}};
    if (options_.stdin) {
      auto input = channel_.upload(dir_ + "/in", *options_.stdin);
      fragments.insert(fragments.end(), input.begin(), input.end());
    }
    const std::string words = scripts::argument_words(options_.cwd, options_.env, tag_, argv_);
    std::string launch = scripts::launch(dir_, tag_, words);
    if (!channel_.fits(launch)) {
      auto args = channel_.upload(dir_ + "/args", scripts::arguments_file(words));
      fragments.insert(fragments.end(), args.begin(), args.end());
      launch = scripts::launch(dir_, tag_, std::nullopt);
    }
    fragments.push_back({std::move(launch), std::nullopt});
    fragments.push_back({scripts::wait_briefly(dir_) + poll_script(), std::nullopt});
    const TransportResult r = channel_.run_all(fragments, options_.cancellation);
    if (r.exit_code != 0) throw sandbox_scripts::failure(r.exit_code, "cannot start the command");
    return take(r.stdout);
  }

  // Polls until the status is there and every byte wanted is read; a poll
  // that brought nothing new makes the next wait longer.
  void supervise(PollAnswer a) {
    auto pause = std::chrono::duration<double, std::milli>(kFirstPoll);
    for (;;) {
      if (a.exit_code) {
        result_.exit_code = a.exit_code;
        // The poll removed the directory once it held every byte wanted.
        if (!out_.more_waiting() && !err_.more_waiting()) return;
      } else if (a.wrapper == PollAnswer::Wrapper::gone) {
        return lost_wrapper();
      } else if (a.wrapper == PollAnswer::Wrapper::starting && Clock::now() - start_ > kStartBound) {
        throw SandboxError(Reason::INTERNAL, "the command did not start in the sandbox");
      } else if (!out_.more_waiting() && !err_.more_waiting()) {
        sleep_until(std::min(Clock::now() + std::chrono::duration_cast<Clock::duration>(pause), deadline_));
        pause = std::min(pause * kPollGrowth, std::chrono::duration<double, std::milli>(kLongestPoll));
      }
      if (options_.cancellation.stop_requested()) cancelled();
      if (!result_.exit_code && Clock::now() >= deadline_) return stop_at_timeout();
      a = poll(options_.cancellation);
    }
  }

  std::string poll_script(bool ended = false) const {
    return scripts::poll(dir_, out_.next_request(), err_.next_request(), ended);
  }

  // A poll's answer, its output passed on.
  PollAnswer take(const std::string& answer) {
    PollAnswer a = PollAnswer::parse(answer);
    out_.take(a.out, a.out_size);
    err_.take(a.err, a.err_size);
    return a;
  }

  // `before`: a script to run first; `ended`: the command was killed, so
  // the directory goes once every byte wanted is read.
  PollAnswer poll(std::stop_token cancellation, std::string_view before = {}, bool ended = false) {
    const TransportResult r =
        channel_.run(std::string(before) + poll_script(ended), std::nullopt, std::move(cancellation));
    if (r.exit_code != 0) throw sandbox_scripts::failure(r.exit_code, "cannot follow the command");
    return take(r.stdout);
  }

  // Every process of the command is killed, and no cancellation stops
  // that; what it wrote by then is read to the end.
  void kill_and_drain() {
    poll({}, sandbox_scripts::kill(tag_), true);
    while (out_.more_waiting() || err_.more_waiting()) poll({}, {}, true);
  }

  void stop_at_timeout() {
    result_.timed_out = true;
    kill_and_drain();
    result_.exit_code.reset();
  }

  // The wrapper died before the command's status was written: it was
  // killed (a command that kills its own process group takes it along, as
  // it would take itself). Whatever is left of the command goes too.
  void lost_wrapper() {
    kill_and_drain();
    result_.exit_code = kKilledExitCode;
  }

  // After a failure or a cancellation nothing of the command may stay. Not
  // cancellable itself; a sandbox gone has nothing left to stop.
  void abandon() noexcept {
    if (!channel_.usable()) return;
    try {
      channel_.run(sandbox_scripts::kill(tag_) + scripts::remove_directory(dir_), std::nullopt, {});
    } catch (...) {
      // The failure that brought us here is the one to report.
    }
  }

  void sleep_until(Clock::time_point when) {
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait_until(lock, options_.cancellation, when, [] { return false; });
  }

  CommandChannel& channel_;
  const std::vector<std::string>& argv_;
  const ExecOptions& options_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point deadline_ = Clock::time_point::max();
  const std::string tag_;
  const std::string dir_;
  ExecResult result_;
  Stream out_;
  Stream err_;
};

}  // namespace

ExecResult run_command(CommandChannel& channel, const std::vector<std::string>& argv, const ExecOptions& options) {
  return CommandRun(channel, argv, options).run();
}

}  // namespace mayura::detail
