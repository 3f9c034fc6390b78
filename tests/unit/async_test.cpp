// The Asio forms: futures, callbacks, and per-operation cancellation.

#include <gtest/gtest.h>

#include <chrono>
#include <future>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include "fake_provider.hpp"
#include "mayura/sandbox.hpp"
#include "tests/support/reason_of.hpp"

namespace asio = boost::asio;

namespace mayura {
namespace {

CreateOptions opts() {
  CreateOptions c;
  c.lifetime_ms = 60'000;
  return c;
}

TEST(Async, FutureCompletesWithTheResult) {
  auto provider = std::make_shared<testing::FakeProvider>();
  auto s = create_sandboxes(provider, {});
  auto sb = s.async_create(opts(), asio::use_future).get();
  auto r = sb.async_exec({"echo"}, {}, asio::use_future).get();
  EXPECT_EQ(r.stdout, "out");
  sb.async_write_file("f", "hello", asio::use_future).get();
  EXPECT_EQ(sb.async_read_file("f", asio::use_future).get(), "hello");
  sb.async_release(asio::use_future).get();
  auto gone = sb.async_exec({"echo"}, {}, asio::use_future);
  EXPECT_EQ(testing::reason_of([&] { gone.get(); }), Reason::GONE);
}

TEST(Async, CallbackRunsOnTheConfiguredExecutor) {
  asio::io_context io;
  auto provider = std::make_shared<testing::FakeProvider>();
  SandboxesOptions o;
  o.executor = io.get_executor();
  auto s = create_sandboxes(provider, o);
  bool done = false;
  std::thread::id where;
  s.async_create(opts(), [&](const std::exception_ptr& e, const Sandbox& sb) {
    ASSERT_FALSE(e);
    where = std::this_thread::get_id();
    sb.async_exec({"x"}, {}, [&](const std::exception_ptr& e2, const ExecResult& r) {
      EXPECT_FALSE(e2);
      EXPECT_EQ(r.exit_code, 0);
      done = true;
    });
  });
  io.run();
  EXPECT_TRUE(done);
  EXPECT_EQ(where, std::this_thread::get_id());
}

TEST(Async, CancellationSlotEndsTheOperationWithCancelled) {
  auto provider = std::make_shared<testing::FakeProvider>();
  provider->state->block_until_cancelled = true;
  auto s = create_sandboxes(provider, {});
  auto sb = s.create(opts());
  asio::cancellation_signal signal;
  auto f = sb.async_exec({"sleep"}, {}, asio::bind_cancellation_slot(signal.slot(), asio::use_future));
  // cancelled once the exec is blocked in the provider, which must see it
  ASSERT_TRUE(provider->state->wait_for_commands(1));
  signal.emit(asio::cancellation_type::terminal);
  EXPECT_EQ(testing::reason_of([&] { f.get(); }), Reason::CANCELLED);
  std::lock_guard lock(provider->state->mutex);
  EXPECT_EQ(provider->state->blocked_then_cancelled, 1);
}

TEST(Async, Coroutines) {
  asio::io_context io;
  auto provider = std::make_shared<testing::FakeProvider>();
  auto s = create_sandboxes(provider, {});
  std::string out;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        auto sb = co_await s.async_create(opts(), asio::use_awaitable);
        // (named arguments: GCC 12 miscompiles braced lists inside co_await)
        std::vector<std::string> argv{"x"};
        ExecOptions options;
        auto r = co_await sb.async_exec(argv, options, asio::use_awaitable);
        out = r.stdout;
        co_await sb.async_release(asio::use_awaitable);
      },
      asio::detached);
  io.run();
  EXPECT_EQ(out, "out");
}

// A provider may complete a call after the sandbox's release has returned
// (the native engine ends a sandbox's last calls on its own thread). close()
// returns only once such calls have completed and the provider holds nothing
// of the caller's handler, so the caller may then destroy its io_context: a
// server does, as it stops. (Under ASan, a handler held past that is a use
// after free of the context.)
TEST(Async, CloseReturnsOnceTheProvidersCallsHaveLetGoOfTheCallersContext) {
  auto provider = std::make_shared<testing::FakeProvider>();
  auto fake = provider->state;
  fake->hold_reads_until_release = true;
  auto s = create_sandboxes(provider, {});
  auto box = s.create(opts());
  auto ioc = std::make_unique<asio::io_context>();
  bool ran = false;
  box.async_read_file("f",
                      asio::bind_executor(*ioc, [&ran](const std::exception_ptr&, const std::string&) { ran = true; }));
  ASSERT_EQ(fake->reads_held(), 1u);
  EXPECT_TRUE(s.close());             // within its bound
  EXPECT_EQ(fake->reads_held(), 0u);  // completed before close() returned
  ioc.reset();                        // the caller's context goes, its queued completion with it
  EXPECT_FALSE(ran);
}

// A completion that closes its own Sandboxes does not wait for itself.
TEST(Async, ACompletionMayCloseItsOwnSandboxes) {
  auto provider = std::make_shared<testing::FakeProvider>();
  auto s = create_sandboxes(provider, {});
  auto box = s.create(opts());
  std::promise<bool> closing;
  box.async_read_file("f",
                      [&closing, s](const std::exception_ptr&, const std::string&) { closing.set_value(s.close()); });
  auto closed_in_time = closing.get_future();
  ASSERT_EQ(closed_in_time.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  // Every call under way completed: close() did not wait out its bound on
  // the very completion it ran in.
  EXPECT_TRUE(closed_in_time.get());
  EXPECT_TRUE(s.closed());
}

// An exec's output callbacks reach the provider through a cell its
// completion empties: a provider that calls a kept copy of them after the
// exec has completed reaches none of the caller's, and holds none of what
// they own (a server's channel, destroyed with its io_context).
TEST(Async, ACompletedExecsKeptOptionsReachNoneOfTheCallersCallbacks) {
  auto provider = std::make_shared<testing::FakeProvider>();
  auto fake = provider->state;
  fake->keep_completed_exec_options = true;
  auto s = create_sandboxes(provider, {});
  auto box = s.create(opts());
  auto owned = std::make_shared<int>(0);  // what the caller's callbacks own
  const std::weak_ptr<int> watch = owned;
  int calls = 0;
  ExecOptions options;
  options.on_stdout = [owned, &calls](std::string_view) { ++calls; };
  options.on_stderr = [owned, &calls](std::string_view) { ++calls; };
  options.on_output = [owned, &calls](OutputStream, std::string_view, const std::function<void()>& more) {
    ++calls;
    more();
  };
  owned.reset();
  std::promise<void> completed;
  box.async_exec({"true"}, std::move(options),
                 [&completed](const std::exception_ptr&, const ExecResult&) { completed.set_value(); });
  completed.get_future().wait();
  ASSERT_EQ(fake->kept_exec_options.size(), 1u);
  EXPECT_TRUE(watch.expired());  // let go of with the completion
  const ExecOptions& kept = fake->kept_exec_options[0];
  ASSERT_TRUE(kept.on_stdout && kept.on_stderr && kept.on_output);
  kept.on_stdout("late");
  kept.on_stderr("late");
  bool more = false;
  kept.on_output(OutputStream::out, "late", [&more] { more = true; });
  EXPECT_EQ(calls, 0);
  EXPECT_TRUE(more);  // a paced provider is never left waiting for a caller gone
  s.close();
  fake->kept_exec_options.clear();
}

// What a provider keeps of a completed call keeps nothing of the Sandboxes
// alive: once it is closed and its handles are dropped, the provider goes
// (and with it, in the native engine, the removals still waiting).
TEST(Async, ACompletedCallKeptByTheProviderDoesNotKeepTheProvider) {
  auto provider = std::make_shared<testing::FakeProvider>();
  auto fake = provider->state;
  fake->keep_completed_reads = true;
  const std::weak_ptr<testing::FakeProvider> watch = provider;
  {
    auto s = create_sandboxes(std::move(provider), {});
    auto box = s.create(opts());
    std::promise<void> completed;
    box.async_read_file("f", [&completed](const std::exception_ptr&, const std::string&) { completed.set_value(); });
    completed.get_future().wait();
    s.close();
  }
  EXPECT_EQ(fake->kept_reads.size(), 1u);
  EXPECT_TRUE(watch.expired());
  fake->kept_reads.clear();
}

}  // namespace
}  // namespace mayura
