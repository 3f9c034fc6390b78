// Stopping a command: at its timeout, or when the caller cancels, every
// process it started is stopped, the ones it left in the background
// included, and the call ends promptly.

#include <thread>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/use_future.hpp>

#include "areas.hpp"
#include "check.hpp"

namespace mayura::testing::conformance {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kStopAfterMs = 500;
// How long the call may take to end once its command is to stop: a provider
// may have to reach a remote machine to stop it.
constexpr std::int64_t kStopBoundMs = 20'000;
// The background processes write their markers this long after they start.
constexpr auto kMarkerDelay = milliseconds(2000);

// Processes started the usual ways: a child, a grandchild whose parent is
// gone, one that ignores SIGTERM, one in a session of its own (where there
// is setsid). Each would write a marker in the current directory two seconds
// on; then the command waits.
const char* const kLeavesProcessesBehind =
    "(sleep 2; touch child) & "
    "( (sleep 2; touch grandchild) & ) ; "
    "sh -c 'trap \"\" TERM; sleep 2; touch ignores-term' & "
    "if command -v setsid >/dev/null 2>&1; then setsid sh -c 'sleep 2; touch own-session' & fi; "
    "echo started; sleep 600";

// The options for the command above: in `dir`, its processes tagged.
ExecOptions in_dir_tagged(const Scratch& dir, const std::string& tag) {
  ExecOptions o;
  o.cwd = dir.relative();
  o.env = {{std::string(kTagVariable), tag}};
  return o;
}

// Nothing the command started is left: none of its processes now, and none
// wrote its marker once the time to write it has passed.
void check_nothing_left(const Sandbox& s, const Scratch& dir, const std::string& tag, Clock::time_point started,
                        const std::string& how) {
  const std::string left = processes_tagged(s, tag, milliseconds(2000));
  check(left.empty(), "processes of a command " + how + " still run: " + show(left));
  std::this_thread::sleep_until(started + kMarkerDelay + milliseconds(1000));
  const std::vector<std::string> markers = names_of(s.list(dir.relative()));
  check(markers.empty(), "processes a command " + how + " had left in the background ran on: they wrote " + show(markers));
}

void timeout_stops_everything(const Sandbox& s) {
  check_tag_listing_works(s);
  Scratch dir(s, "timeout");
  const std::string tag = unique_token();
  ExecOptions o = in_dir_tagged(dir, tag);
  o.timeout_ms = kStopAfterMs;
  const auto start = Clock::now();
  const ExecResult r = s.exec({"/bin/sh", "-c", kLeavesProcessesBehind}, o);
  const std::int64_t took = ms_between(start, Clock::now());
  check_eq(r.timed_out, true, "timed_out of a command still running at its timeout");
  check_eq(r.exit_code, std::optional<int>(), "exit_code of a command that timed out");
  check_eq(r.stdout, "started\n", "stdout written before the timeout");
  check(took >= kStopAfterMs - 50 && took <= kStopAfterMs + kStopBoundMs,
        "exec with a timeout of " + show(kStopAfterMs) + " ms took " + show(took) + " ms");
  check(r.duration_ms >= kStopAfterMs - 50, "duration_ms of a command that timed out after " + show(kStopAfterMs) +
                                                " ms is " + show(r.duration_ms));
  check_nothing_left(s, dir, tag, start, "that timed out");
}

// What an exec that is to be cancelled did: its result, or the reason it
// failed with.
struct Outcome {
  std::optional<ExecResult> result;
  std::optional<Reason> reason;
  std::string message;
};

void check_cancelled(const Outcome& outcome) {
  if (outcome.result) {
    fail("a cancelled exec gave a result (exit_code " + show(outcome.result->exit_code) + ", timed_out " +
         show(outcome.result->timed_out) + ", stdout " + show(outcome.result->stdout) +
         ") instead of failing CANCELLED");
  }
  check(outcome.reason == Reason::CANCELLED,
        "a cancelled exec failed " + show(outcome.reason) + " (" + outcome.message + "), not CANCELLED");
}

void cancellation_stops_everything(const Sandbox& s) {
  check_tag_listing_works(s);
  Scratch dir(s, "cancel");
  const std::string tag = unique_token();
  std::stop_source stop;
  ExecOptions o = in_dir_tagged(dir, tag);
  o.cancellation = stop.get_token();
  const auto start = Clock::now();
  Clock::time_point cancelled_at = Clock::time_point::max();
  Outcome outcome;
  {
    std::jthread canceller([&] {
      std::this_thread::sleep_for(milliseconds(kStopAfterMs));
      cancelled_at = Clock::now();
      stop.request_stop();
    });
    try {
      outcome.result = s.exec({"/bin/sh", "-c", kLeavesProcessesBehind}, o);
    } catch (const SandboxError& e) {
      outcome.reason = e.reason();
      outcome.message = e.what();
    }
  }
  const auto returned = Clock::now();
  check_cancelled(outcome);
  check(ms_between(cancelled_at, returned) <= kStopBoundMs,
        "a cancelled exec took " + show(ms_between(cancelled_at, returned)) + " ms to end");
  check_nothing_left(s, dir, tag, start, "that was cancelled");
}

void async_cancellation_stops_everything(const Sandbox& s) {
  check_tag_listing_works(s);
  Scratch dir(s, "async-cancel");
  const std::string tag = unique_token();
  boost::asio::cancellation_signal signal;
  const auto start = Clock::now();
  auto future = s.async_exec({"/bin/sh", "-c", kLeavesProcessesBehind}, in_dir_tagged(dir, tag),
                             boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::use_future));
  std::this_thread::sleep_for(milliseconds(kStopAfterMs));
  signal.emit(boost::asio::cancellation_type::terminal);
  if (future.wait_for(milliseconds(kStopBoundMs)) != std::future_status::ready) {
    fail("async_exec did not end within " + show(kStopBoundMs) + " ms of its cancellation");
  }
  Outcome outcome;
  try {
    outcome.result = future.get();
  } catch (const SandboxError& e) {
    outcome.reason = e.reason();
    outcome.message = e.what();
  }
  check_cancelled(outcome);
  check_nothing_left(s, dir, tag, start, "that was cancelled through its Asio cancellation slot");
}

}  // namespace

std::vector<ConformanceTest> stop_tests() {
  return {
      make_test("exec_timeout_stops_everything", timeout_stops_everything),
      make_test("exec_cancellation_stops_everything", cancellation_stops_everything),
      make_test("exec_async_cancellation_stops_everything", async_cancellation_stops_everything),
  };
}

}  // namespace mayura::testing::conformance
