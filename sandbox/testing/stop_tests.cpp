// Stopping a command: at its timeout, or when the caller cancels, every
// process it started is stopped, the ones it left in the background
// included, and the call ends (the suite waits for that end, and judges
// what happened, never how fast).

#include <algorithm>
#include <exception>
#include <functional>
#include <future>
#include <optional>
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

// The timeout of the command that times out: long enough for its processes
// to say they are up (its stdout shows whether they did) on a loaded machine.
constexpr int kStopAfterMs = 2000;
// Once the checks are done, how long a process they missed gets to show
// itself by writing its marker. A wait, never a check: on a slow machine it
// can only let such a process go unseen.
constexpr auto kMarkerWait = milliseconds(2000);

// Processes started the usual ways: a child, a grandchild whose parent is
// gone, one that ignores SIGTERM, one in a session of its own (where there
// is setsid). Each first writes `up-NAME` in the current directory, then
// waits until the test writes `go` (after the command was stopped), then
// writes its marker NAME; the command writes `started` (to stdout and as a
// file) only once every one of them is up, then waits.
std::string leaves_processes_behind() {
  const std::string wait = wait_for_file("go");
  return "(touch up-child; " + wait +
         "; touch child) & "
         "( (touch up-grandchild; " +
         wait +
         "; touch grandchild) & ) ; "
         "sh -c 'trap \"\" TERM; touch up-ignores-term; " +
         wait +
         "; touch ignores-term' & "
         "up='up-child up-grandchild up-ignores-term'; "
         "if command -v setsid >/dev/null 2>&1; then setsid sh -c 'touch up-own-session; " +
         wait +
         "; touch own-session' & up=\"$up up-own-session\"; fi; "
         "for f in $up; do " +
         wait_for_file("$f") +
         "; done; "
         "touch started; echo started; sleep 600";
}

// What the command above writes besides the markers of processes that ran on.
bool written_while_running(const std::string& name) {
  return name == "go" || name == "started" || name.starts_with("up-");
}

// The options for the command above: in `dir`, its processes tagged.
ExecOptions in_dir_tagged(const Scratch& dir, const std::string& tag) {
  ExecOptions o;
  o.cwd = dir.relative();
  o.env = {{std::string(kTagVariable), tag}};
  return o;
}

// Returns once the command above says all its processes are up, and checks
// that the suite sees them running: stopping a command before its processes
// exist would make "nothing left" hold trivially, so a test that saw none
// fails instead. kHangBound only keeps a command that never starts from
// hanging the test.
void await_processes_up(const Sandbox& s, const Scratch& dir, const std::string& tag, const std::string& what) {
  const auto deadline = Clock::now() + kHangBound;
  for (;;) {
    const std::vector<std::string> names = names_of(s.list(dir.relative()));
    if (std::find(names.begin(), names.end(), "started") != names.end()) break;
    if (Clock::now() >= deadline) {
      fail(what + ": its processes never all said they were up (the suite gave up waiting after " +
           show(kHangBound.count()) + " s); it wrote " + show(names));
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  const std::string running = processes_tagged(s, tag, milliseconds(0));
  check(!running.empty(), what +
                              ": the suite saw none of its processes running before stopping it, so it could "
                              "not show that stopping them works");
}

// Runs `stop` when it goes, so that a test that fails before it stops its
// command (its processes never came up, say) leaves nothing running.
class StopOnExit {
 public:
  explicit StopOnExit(std::function<void()> stop) : stop_(std::move(stop)) {}
  ~StopOnExit() { stop_(); }
  StopOnExit(const StopOnExit&) = delete;
  StopOnExit& operator=(const StopOnExit&) = delete;

 private:
  std::function<void()> stop_;
};

// Nothing the command started is left: none of its processes now (they are
// given until kHangBound to leave /proc), and none writes its marker when
// told to go.
void check_nothing_left(const Sandbox& s, const Scratch& dir, const std::string& tag, const std::string& how) {
  const std::string left = processes_tagged(s, tag);
  check(left.empty(), "processes of a command " + how + " still run: " + show(left));
  s.write_file(dir.path("go"), "");
  std::this_thread::sleep_for(kMarkerWait);
  std::vector<std::string> markers = names_of(s.list(dir.relative()));
  std::erase_if(markers, written_while_running);
  check(markers.empty(),
        "processes a command " + how + " had left in the background ran on: they wrote " + show(markers));
}

// An exec on a blocking thread of the provider's runtime, holding its own
// handle, so that the test still ends if the exec never does: what it gave, or the reason it failed.
struct Outcome {
  std::optional<ExecResult> result;
  std::optional<Reason> reason;
  std::string message;
};

std::future<Outcome> exec_on_blocking_thread(const Sandbox& s, std::vector<std::string> argv, ExecOptions options) {
  auto promise = std::make_shared<std::promise<Outcome>>();
  auto future = promise->get_future();
  s.runtime()->run_blocking([sandbox = s, argv = std::move(argv), options = std::move(options), promise]() mutable {
    Outcome outcome;
    try {
      outcome.result = sandbox.exec(argv, options);
    } catch (const SandboxError& e) {
      outcome.reason = e.reason();
      outcome.message = e.what();
    } catch (const std::exception& e) {
      outcome.reason = Reason::INTERNAL;
      outcome.message = e.what();
    }
    promise->set_value(std::move(outcome));
  });
  return future;
}

// Waits for the exec to end, the event the test is about; kHangBound only
// keeps a provider that never ends it from hanging the test.
Outcome await_end(std::future<Outcome>& running, const std::string& what) {
  if (running.wait_for(kHangBound) != std::future_status::ready) {
    fail(what + " never ended (the suite gave up waiting after " + show(kHangBound.count()) + " s)");
  }
  return running.get();
}

void timeout_stops_everything(const Sandbox& s) {
  check_tag_listing_works(s);
  Scratch dir(s, "timeout");
  const std::string tag = unique_token();
  ExecOptions o = in_dir_tagged(dir, tag);
  o.timeout_ms = kStopAfterMs;
  const auto start = Clock::now();
  auto running = exec_on_blocking_thread(s, {"/bin/sh", "-c", leaves_processes_behind()}, o);
  const Outcome outcome = await_end(running, "an exec with a timeout of " + show(kStopAfterMs) + " ms");
  const std::int64_t took = ms_between(start, Clock::now());
  if (!outcome.result) fail("an exec that timed out failed " + show(outcome.reason) + " (" + outcome.message + ")");
  const ExecResult& r = *outcome.result;
  check_eq(r.timed_out, true, "timed_out of a command still running at its timeout");
  check_eq(r.exit_code, std::optional<int>(), "exit_code of a command that timed out");
  check_eq(r.stdout, "started\n", "stdout written before the timeout");
  check(took >= kStopAfterMs - 50,
        "exec with a timeout of " + show(kStopAfterMs) + " ms returned after " + show(took) + " ms");
  check(r.duration_ms >= kStopAfterMs - 50,
        "duration_ms of a command that timed out after " + show(kStopAfterMs) + " ms is " + show(r.duration_ms));
  check_nothing_left(s, dir, tag, "that timed out");
}

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
  auto running = exec_on_blocking_thread(s, {"/bin/sh", "-c", leaves_processes_behind()}, o);
  const StopOnExit stop_anyway([&] { stop.request_stop(); });
  await_processes_up(s, dir, tag, "a command to cancel");
  stop.request_stop();
  check_cancelled(await_end(running, "a cancelled exec"));
  check_nothing_left(s, dir, tag, "that was cancelled");
}

void async_cancellation_stops_everything(const Sandbox& s) {
  check_tag_listing_works(s);
  Scratch dir(s, "async-cancel");
  const std::string tag = unique_token();
  boost::asio::cancellation_signal signal;
  auto future = s.async_exec({"/bin/sh", "-c", leaves_processes_behind()}, in_dir_tagged(dir, tag),
                             boost::asio::bind_cancellation_slot(signal.slot(), boost::asio::use_future));
  const StopOnExit stop_anyway([&] { signal.emit(boost::asio::cancellation_type::terminal); });
  await_processes_up(s, dir, tag, "a command to cancel through its Asio cancellation slot");
  signal.emit(boost::asio::cancellation_type::terminal);
  if (future.wait_for(kHangBound) != std::future_status::ready) {
    fail("async_exec never ended after its cancellation (the suite gave up waiting after " + show(kHangBound.count()) +
         " s)");
  }
  Outcome outcome;
  try {
    outcome.result = future.get();
  } catch (const SandboxError& e) {
    outcome.reason = e.reason();
    outcome.message = e.what();
  }
  check_cancelled(outcome);
  check_nothing_left(s, dir, tag, "that was cancelled through its Asio cancellation slot");
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
