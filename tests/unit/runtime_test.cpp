// The runtime owns every thread it starts: its blocking threads grow with
// the calls in flight up to their bound, a failure on them is reported, and
// destroying it (on any thread, its own included) leaves no thread of it.

#include "mayura/runtime.hpp"

#include <dirent.h>
#include <gtest/gtest.h>

#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/support/runtime_threads.hpp"

namespace mayura {
namespace {

using namespace std::chrono_literals;
using testing::threads_by_name;
using testing::wait_for_named;
using testing::wait_for_threads;

// A gate the blocking calls wait at until the test opens it.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  int waiting = 0;
  void wait() {
    std::unique_lock lock(mutex);
    ++waiting;
    changed.notify_all();
    changed.wait(lock, [&] { return open; });
  }
  bool wait_for_waiting(int n) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, 10s, [&] { return waiting >= n; });
  }
  void let_through() {
    std::lock_guard lock(mutex);
    open = true;
    changed.notify_all();
  }
};

// Waits (up to `bound`) until `runtime` has `n` blocking threads.
bool wait_for_threads_of(const Runtime& runtime, std::size_t n, std::chrono::milliseconds bound) {
  const auto give_up = std::chrono::steady_clock::now() + bound;
  while (runtime.blocking_threads() != n) {
    if (std::chrono::steady_clock::now() > give_up) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

TEST(Runtime, BlockingThreadsGrowWithTheCallsUpToTheirBoundAndTheRestQueue) {
  auto runtime = Runtime::make({.reactor_threads = 1, .max_blocking = 3});
  Gate gate;
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) {
    runtime->run_blocking([&] {
      gate.wait();
      ++ran;
    });
  }
  ASSERT_TRUE(gate.wait_for_waiting(3));
  EXPECT_EQ(runtime->blocking_threads(), 3u);
  {
    std::lock_guard lock(gate.mutex);
    EXPECT_EQ(gate.waiting, 3);  // the other two wait their turn
  }
  gate.let_through();
  runtime.reset();  // drains the queue, then joins
  EXPECT_EQ(ran, 5);
}

TEST(Runtime, AFailureOnABlockingThreadIsReportedAndTheThreadGoesOn) {
  auto runtime = Runtime::make({.reactor_threads = 1, .max_blocking = 1});
  ::testing::internal::CaptureStderr();
  runtime->run_blocking([] { throw std::runtime_error("the disk is on fire"); });
  std::promise<void> after;
  runtime->run_blocking([&] { after.set_value(); });
  ASSERT_EQ(after.get_future().wait_for(10s), std::future_status::ready);
  EXPECT_EQ(runtime->blocking_threads(), 1u);
  runtime.reset();
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("a blocking call on the runtime threw"), std::string::npos) << said;
  EXPECT_NE(said.find("the disk is on fire"), std::string::npos) << said;
}

TEST(Runtime, AFailureOnTheReactorIsReportedAndTheReactorGoesOn) {
  auto runtime = Runtime::make({.reactor_threads = 1, .max_blocking = 1});
  ::testing::internal::CaptureStderr();
  boost::asio::post(runtime->executor(), [] { throw std::runtime_error("a handler broke"); });
  std::promise<void> after;
  boost::asio::post(runtime->executor(), [&] { after.set_value(); });
  ASSERT_EQ(after.get_future().wait_for(10s), std::future_status::ready);
  runtime.reset();
  const std::string said = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("a handler on the runtime's reactor threw"), std::string::npos) << said;
  EXPECT_NE(said.find("a handler broke"), std::string::npos) << said;
}

TEST(Runtime, DestroyingItJoinsEveryThreadOfIt) {
  const auto before = threads_by_name();
  auto runtime = Runtime::make({.reactor_threads = 2, .max_blocking = 4});
  std::promise<void> posted;
  boost::asio::post(runtime->executor(), [&] { posted.set_value(); });
  posted.get_future().wait();
  Gate gate;
  for (int i = 0; i < 3; ++i) runtime->run_blocking([&] { gate.wait(); });
  ASSERT_TRUE(gate.wait_for_waiting(3));
  const int reactors_before = before.count("mayura-reactor") ? before.at("mayura-reactor") : 0;
  EXPECT_TRUE(wait_for_named("mayura-reactor", reactors_before + 2, 10s));
  EXPECT_TRUE(wait_for_named("mayura-blocking", 3, 10s));
  gate.let_through();
  runtime.reset();
  // Joined; the kernel takes a joined thread's task away a moment later.
  EXPECT_TRUE(wait_for_threads(before, 10s));
}

TEST(Runtime, ACallThatEndsOthersGetsAThreadPastTheBound) {
  auto runtime = Runtime::make({.reactor_threads = 1, .max_blocking = 1});
  Gate gate;
  runtime->run_blocking([&] { gate.wait(); });
  ASSERT_TRUE(gate.wait_for_waiting(1));
  std::promise<void> queued_ran;
  runtime->run_blocking([&] { queued_ran.set_value(); });
  // The one thread the bound allows is held by a call that waits for the
  // end: the end runs all the same, and first.
  std::promise<void> ended;
  runtime->run_blocking([&] { ended.set_value(); }, Runtime::Turn::now);
  EXPECT_EQ(ended.get_future().wait_for(10s), std::future_status::ready);
  // The thread started past the bound takes nothing that waits its turn.
  auto queued = queued_ran.get_future();
  EXPECT_EQ(queued.wait_for(100ms), std::future_status::timeout);
  EXPECT_TRUE(wait_for_threads_of(*runtime, 1u, 10s));
  gate.let_through();
  EXPECT_EQ(queued.wait_for(10s), std::future_status::ready);
}

TEST(Runtime, ItsLastOwnerLettingGoOnItsOwnThreadLeavesNoThreadOfIt) {
  // Asio's system executor, which then destroys it, keeps its threads for
  // the process: started before the count.
  std::promise<void> warm;
  boost::asio::post(boost::asio::system_executor(), [&] { warm.set_value(); });
  warm.get_future().wait();
  const auto before = threads_by_name();
  {
    auto runtime = Runtime::make({.reactor_threads = 2, .max_blocking = 2});
    Runtime& on = *runtime;
    auto own = std::make_shared<std::promise<bool>>();
    auto told = own->get_future();
    // The call holds the runtime's last reference, and lets it go there.
    on.run_blocking([runtime = std::move(runtime), own]() mutable {
      own->set_value(runtime->on_own_thread());
      runtime.reset();
    });
    EXPECT_TRUE(told.get());
  }
  EXPECT_TRUE(wait_for_threads(before, 10s)) << "threads of the runtime left";
}

TEST(Runtime, IdleBlockingThreadsAreNotStartedAhead) {
  auto runtime = Runtime::make();
  EXPECT_EQ(runtime->blocking_threads(), 0u);
  EXPECT_GE(runtime->reactor_threads(), 2u);
}

TEST(OwnedThread, HasItsNameAndIsJoinedByItsOwner) {
  const auto before = threads_by_name();
  std::promise<std::string> name;
  {
    OwnedThread thread("mayura-test-nam", [&](const std::stop_token& stop) {
      std::ifstream comm("/proc/thread-self/comm");
      std::string n;
      std::getline(comm, n);
      name.set_value(n);
      while (!stop.stop_requested()) std::this_thread::sleep_for(1ms);
    });
    EXPECT_EQ(name.get_future().get(), "mayura-test-nam");
  }  // asks it to stop, and joins it
  EXPECT_TRUE(wait_for_threads(before, 10s));
}

}  // namespace
}  // namespace mayura
