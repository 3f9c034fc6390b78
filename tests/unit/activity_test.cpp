// When the pool may build: after a quiet spell of the callers, at once
// after another build, after its longest wait, never after its stop. (Times
// are bounds that a slow machine can only exceed the right way: a wait is at
// least its quiet after the last call.)

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stop_token>
#include <thread>

#include "activity.hpp"

namespace mayura::native {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
constexpr auto kNever = 600'000ms;

// A call now, then a wait for a turn: it lasts at least the quiet.
void expect_the_quiet_after_a_call(Activity& activity, std::chrono::milliseconds quiet,
                                   std::chrono::milliseconds warm) {
  std::stop_source stop;
  const auto called = Clock::now();
  activity.mark();
  EXPECT_TRUE(activity.wait_turn(quiet, warm, kNever, stop.get_token()));
  EXPECT_GE(Clock::now() - called, quiet);
}

TEST(Activity, ABuildWaitsForTheCallersToBeQuiet) {
  Activity activity;
  expect_the_quiet_after_a_call(activity, 50ms, 0ms);
}

TEST(Activity, ALaterCallStartsTheQuietAgain) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  std::this_thread::sleep_for(60ms);
  const auto second = Clock::now();
  activity.mark();
  // Counted from the first call, the quiet would end 40 ms after the second.
  EXPECT_TRUE(activity.wait_turn(100ms, 0ms, kNever, stop.get_token()));
  EXPECT_GE(Clock::now() - second, 100ms);
}

TEST(Activity, CallsMeanwhileStartTheQuietAgain) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  std::atomic<Clock::rep> last_call{Clock::now().time_since_epoch().count()};
  std::jthread caller([&] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(20ms);
      last_call = Clock::now().time_since_epoch().count();
      const ActivityMark call(activity);
    }
  });
  EXPECT_TRUE(activity.wait_turn(100ms, 0ms, kNever, stop.get_token()));
  const auto returned = Clock::now();
  // However the machine stretches the caller's pauses: the wait ended a
  // quiet spell after the last call it had seen. If the caller is done,
  // that is its last one.
  caller.join();
  const auto last = Clock::time_point(Clock::duration(last_call.load()));
  // (Only a caller stalled past the quiet between two calls makes the wait
  // end before its last call; then that call is not the one to count from.)
  EXPECT_TRUE(returned < last || returned - last >= 100ms) << "the wait ended within the quiet after a call";
}

TEST(Activity, ABuildRightAfterAnotherNeedsNoQuiet) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  activity.built();
  // Ten minutes of quiet asked, and none needed: a bound the slowest
  // machine meets.
  EXPECT_TRUE(activity.wait_turn(kNever, 60'000ms, kNever, stop.get_token()));
}

TEST(Activity, ABuildMeanwhileEndsTheWait) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  std::jthread builder([&] {
    std::this_thread::sleep_for(20ms);
    activity.built();
  });
  // A caller's own build warms the kernel's lock as the pool's does: the
  // pool builds right after it, not ten minutes later.
  EXPECT_TRUE(activity.wait_turn(kNever, 60'000ms, kNever, stop.get_token()));
}

TEST(Activity, ABuildLongAgoNeedsTheQuietAgain) {
  Activity activity;
  activity.built();
  std::this_thread::sleep_for(30ms);
  expect_the_quiet_after_a_call(activity, 50ms, 20ms);
}

TEST(Activity, CallersThatNeverPauseHoldABuildOffNoLongerThanItsLongestWait) {
  Activity activity;
  std::stop_source stop;
  std::atomic<bool> done{false};
  activity.mark();
  std::jthread caller([&] {
    while (!done) {
      activity.mark();
      std::this_thread::sleep_for(1ms);
    }
  });
  const auto started = Clock::now();
  EXPECT_TRUE(activity.wait_turn(kNever, 0ms, 100ms, stop.get_token()));
  done = true;
  EXPECT_GE(Clock::now() - started, 100ms);
}

TEST(Activity, TheStopEndsTheWait) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(20ms);
    stop.request_stop();
  });
  EXPECT_FALSE(activity.wait_turn(kNever, 0ms, kNever, stop.get_token()));
  stopper.join();
  EXPECT_FALSE(activity.wait_turn(0ms, 0ms, 0ms, stop.get_token()));
}

}  // namespace
}  // namespace mayura::native
