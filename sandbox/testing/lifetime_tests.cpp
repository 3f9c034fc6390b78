// A released sandbox: every call fails GONE, and a command running when it
// was released ends with it.

#include <algorithm>
#include <future>
#include <thread>

#include <boost/asio/use_future.hpp>

#include "areas.hpp"
#include "check.hpp"

namespace mayura::testing::conformance {
namespace {

using std::chrono::milliseconds;

void gone_after_release(const Sandbox& s) {
  // A file to read and remove, so that GONE cannot be NOT_FOUND in disguise.
  const std::string name = "conformance-gone-" + unique_token() + ".txt";
  s.write_file(name, "there");

  // On a blocking thread of the provider's runtime, holding its own handle:
  // if the exec never ends, the test still does. The command writes a file once it runs, and is
  // tagged so that the suite can see it running before the release.
  const std::string up = "conformance-up-" + unique_token();
  const std::string tag = unique_token();
  ExecOptions tagged;
  tagged.env = {{std::string(kTagVariable), tag}};
  std::promise<std::optional<Reason>> ended;
  auto running = ended.get_future();
  auto promised = std::make_shared<std::promise<std::optional<Reason>>>(std::move(ended));
  s.runtime()->run_blocking([sandbox = s, promised, up, tagged]() mutable {
    std::optional<Reason> how;
    {
      // The handle goes before the test hears of the end: a runner may check
      // right after that nothing of the provider is left.
      const Sandbox mine = std::move(sandbox);
      try {
        mine.exec({"/bin/sh", "-c", "touch " + up + " && exec sleep 600"}, tagged);
      } catch (const SandboxError& e) {
        how = e.reason();
      } catch (...) {
        how = Reason::INTERNAL;
      }
    }
    promised->set_value(how);
  });

  // Released only once the command provably runs: an exec released before
  // it started would make its end prove nothing. kHangBound only keeps a
  // command that never starts from hanging the test.
  const auto deadline = std::chrono::steady_clock::now() + kHangBound;
  for (;;) {
    const std::vector<std::string> names = names_of(s.list());
    if (std::find(names.begin(), names.end(), up) != names.end()) break;
    check(running.wait_for(milliseconds(0)) != std::future_status::ready,
          "a command meant to run until its sandbox was released ended before it wrote " + show(up));
    check(std::chrono::steady_clock::now() < deadline,
          "a command meant to run until its sandbox was released never wrote " + show(up) +
              " (the suite gave up waiting after " + show(kHangBound.count()) + " s)");
    std::this_thread::sleep_for(milliseconds(50));
  }
  check(!processes_tagged(s, tag, milliseconds(0)).empty(),
        "the suite saw no process of a command that had said it runs, so it could not show that a release ends it");

  s.release();
  check(s.released(), "released() is false after release()");
  s.release();  // again: nothing to do, and no error

  // The exec's end is the event; kHangBound only keeps a provider that never
  // ends it from hanging the test.
  check(running.wait_for(kHangBound) == std::future_status::ready,
        "an exec running when its sandbox was released never ended (the suite gave up waiting after " +
            show(kHangBound.count()) + " s)");
  const std::optional<Reason> how = running.get();
  check(how == Reason::GONE, "an exec running when its sandbox was released " +
                                 (how ? "failed " + show(*how) : std::string("gave a result")) + " (GONE expected)");

  check_fails(Reason::GONE, "exec after release", [&] { s.exec({"true"}); });
  check_fails(Reason::GONE, "read_file after release", [&] { s.read_file(name); });
  check_fails(Reason::GONE, "write_file after release", [&] { s.write_file(name, "again"); });
  check_fails(Reason::GONE, "list after release", [&] { s.list(); });
  check_fails(Reason::GONE, "remove after release", [&] { s.remove(name); });
  check_fails(Reason::GONE, "async_exec after release",
              [&] { s.async_exec({"true"}, {}, boost::asio::use_future).get(); });
  check_fails(Reason::GONE, "async_read_file after release",
              [&] { s.async_read_file(name, boost::asio::use_future).get(); });
}

// A pause stops the sandbox's processes, and a resume lets them go on where
// they were: a counter that ticks every 50 ms ticks at most a few times over
// a second's pause, and ticks on after it. Its own sandbox (or last): a
// pause would stall tests running beside it, and their calls would resume
// it. A provider without the feature refuses both INVALID_INPUT.
void pause_and_resume(const Sandbox& s) {
  if (!s.features().pause) {
    check_fails(Reason::INVALID_INPUT, "pause on a provider without the feature", [&] { s.pause(); });
    check_fails(Reason::INVALID_INPUT, "resume on a provider without the feature", [&] { s.resume(); });
    not_applicable("the provider does not claim pause (pause and resume failed INVALID_INPUT, as they must)");
  }
  Scratch dir(s, "pause");
  const std::string count = dir.absolute("count");
  s.exec({"/bin/sh", "-c",
          "setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i > " + count + ".new; mv " + count + ".new " + count +
              "; sleep 0.05; done' >/dev/null 2>&1 </dev/null &"});
  const auto ticks = [&] {
    for (int i = 0; i < 200; ++i) {
      try {
        const std::string text = s.read_file(count);
        if (!text.empty()) return std::stol(text);
      } catch (const SandboxError& e) {
        if (e.reason() != Reason::NOT_FOUND) throw;
      }
      std::this_thread::sleep_for(milliseconds(20));
    }
    fail("the counter never wrote " + show(count));
  };
  const long first = ticks();
  check(!s.paused(), "paused() is true before any pause");
  s.pause();
  check(s.paused(), "paused() is false after pause()");
  s.pause();  // again: nothing to do
  std::this_thread::sleep_for(std::chrono::seconds(1));
  s.resume();
  check(!s.paused(), "paused() is true after resume()");
  s.resume();  // again: nothing to do
  const long after_pause = ticks();
  // Running, the counter would have ticked about 20 times in that second.
  check(after_pause - first <= 8, "a counter ticking every 50 ms ticked " + show(after_pause - first) +
                                      " times across a pause of a second (a few at most expected)");
  check(after_pause >= first, "the counter went back from " + show(first) + " to " + show(after_pause));
  // It ticks on (its next tick is the event; kHangBound only keeps a
  // counter that never ticks again from hanging the test).
  const auto deadline = std::chrono::steady_clock::now() + kHangBound;
  while (ticks() <= after_pause) {
    check(std::chrono::steady_clock::now() < deadline, "the counter stopped ticking after resume()");
    std::this_thread::sleep_for(milliseconds(50));
  }
  // Calls resume a paused sandbox first.
  s.pause();
  check(s.exec({"true"}).exit_code == 0, "exec on a paused sandbox did not run");
  check(!s.paused(), "paused() is true after an exec on a paused sandbox");
  s.release();
}

}  // namespace

std::vector<ConformanceTest> lifetime_tests() {
  return {
      make_test("lifetime_gone_after_release", gone_after_release, /*ends_sandbox=*/true),
      make_test("pause_stops_and_resume_goes_on", pause_and_resume, /*ends_sandbox=*/true),
  };
}

}  // namespace mayura::testing::conformance
