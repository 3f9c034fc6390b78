// When the pool may build: after a quiet spell of the callers, at once
// after another build, never after its stop. (Times are bounds that a slow
// machine can only exceed the right way: a wait is at least its quiet.)

#include <gtest/gtest.h>

#include <chrono>
#include <stop_token>
#include <thread>

#include "activity.hpp"

namespace mayura::native {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(Activity, ABuildWaitsForTheCallersToBeQuiet) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  const auto started = Clock::now();
  EXPECT_TRUE(activity.wait_turn(50ms, 0ms, stop.get_token()));
  EXPECT_GE(Clock::now() - started, 50ms);
}

TEST(Activity, EveryCallStartsTheQuietAgain) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  const auto started = Clock::now();
  std::jthread caller([&] {
    for (int i = 0; i < 5; ++i) {
      std::this_thread::sleep_for(20ms);
      const ActivityMark call(activity);
    }
  });
  // Quiet far longer than the pauses between calls, however the machine
  // stretches them.
  EXPECT_TRUE(activity.wait_turn(300ms, 0ms, stop.get_token()));
  // The last call came at least 100 ms in, and the quiet after it is 300 ms.
  EXPECT_GE(Clock::now() - started, 400ms);
}

TEST(Activity, ABuildRightAfterAnotherNeedsNoQuiet) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  activity.built();
  // Ten minutes of quiet asked, and none needed: a bound the slowest
  // machine meets.
  EXPECT_TRUE(activity.wait_turn(600'000ms, 60'000ms, stop.get_token()));
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
  EXPECT_TRUE(activity.wait_turn(600'000ms, 60'000ms, stop.get_token()));
}

TEST(Activity, ABuildLongAgoNeedsTheQuietAgain) {
  Activity activity;
  std::stop_source stop;
  activity.built();
  std::this_thread::sleep_for(30ms);
  activity.mark();
  const auto started = Clock::now();
  EXPECT_TRUE(activity.wait_turn(50ms, 20ms, stop.get_token()));
  EXPECT_GE(Clock::now() - started, 50ms);
}

TEST(Activity, TheStopEndsTheWait) {
  Activity activity;
  std::stop_source stop;
  activity.mark();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(20ms);
    stop.request_stop();
  });
  EXPECT_FALSE(activity.wait_turn(600'000ms, 0ms, stop.get_token()));
  stopper.join();
  EXPECT_FALSE(activity.wait_turn(0ms, 0ms, stop.get_token()));
}

}  // namespace
}  // namespace mayura::native
