// What a client may hold of the daemon, each within its share: connections
// and blocking-pool turns (PerClient), a streamed output's rate
// (ClientPace) and buffered request bytes (MemoryBudget).

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <variant>

#include "service/memory_budget.hpp"
#include "service/client_pace.hpp"
#include "service/per_client.hpp"

namespace mayura {
namespace {

// Each client holds at most its cap; a lease gives its one back however it
// goes (destroyed, or moved from and then destroyed), and other clients'
// shares are their own.
TEST(PerClient, EachClientHoldsItsCapAndLeasesGiveTheirsBack) {
  service::PerClient held;
  std::optional<service::PerClient::Lease> a1 = held.take("uid:1000", 2);
  std::optional<service::PerClient::Lease> a2 = held.take("uid:1000", 2);
  ASSERT_TRUE(a1 && a2);
  EXPECT_FALSE(held.take("uid:1000", 2));
  EXPECT_EQ(held.held_by("uid:1000"), 2u);
  const auto b = held.take("uid:1001", 2);
  EXPECT_TRUE(b);
  a1.reset();
  EXPECT_EQ(held.held_by("uid:1000"), 1u);
  service::PerClient::Lease moved = std::move(*a2);
  a2.reset();  // moved from: gives nothing back
  EXPECT_EQ(held.held_by("uid:1000"), 1u);
  EXPECT_TRUE(held.take("uid:1000", 2));  // (taken and given back at once)
  EXPECT_FALSE(held.take("uid:1000", 0));
  EXPECT_EQ(held.held_by("uid:1000"), 1u);
}

// A waiter past its cap is woken when one of its own client's leases goes
// (every such waiter, once each), never by another client's; one that
// stopped waiting is not woken at all.
TEST(PerClient, WaitersAreWokenByTheirOwnClientsLeasesOnly) {
  service::PerClient held;
  auto a = held.take("uid:1000", 1);
  ASSERT_TRUE(a);
  int woken_first = 0, woken_second = 0, woken_gone = 0;
  auto first = held.take_or_wait("uid:1000", 1, [&] { ++woken_first; });
  auto second = held.take_or_wait("uid:1000", 1, [&] { ++woken_second; });
  auto gone = held.take_or_wait("uid:1000", 1, [&] { ++woken_gone; });
  ASSERT_EQ(first.index(), 1u);
  ASSERT_EQ(second.index(), 1u);
  ASSERT_EQ(gone.index(), 1u);
  held.stop_waiting("uid:1000", std::get<1>(gone));
  { auto other = held.take("uid:1001", 1); }  // another client's lease, given back
  EXPECT_EQ(woken_first + woken_second, 0);
  a.reset();
  EXPECT_EQ(woken_first, 1);
  EXPECT_EQ(woken_second, 1);
  EXPECT_EQ(woken_gone, 0);
  auto again = held.take_or_wait("uid:1000", 1, [] {});
  EXPECT_EQ(again.index(), 0u);  // the woken ask again, and one gets it
  { auto more = held.take("uid:1000", 1); }
  EXPECT_EQ(woken_first, 1);  // woken once: they asked again, or are gone
}

// A client's output is paced to its rate after a second's burst: the wait
// grows with what it sent past that; its execs share one clock; another
// client's clock is its own; a client idle for a second owes nothing; no
// rate, no wait.
TEST(ClientPace, AClientsStreamsWaitPastItsBurstAndOthersDoNot) {
  using namespace std::chrono_literals;
  service::ClientPace pace(1000);  // bytes per second
  const auto t0 = service::ClientPace::Clock::now();
  EXPECT_EQ(pace.sent("uid:1000", 1000, t0), 0s);  // the burst
  EXPECT_EQ(pace.sent("uid:1000", 500, t0), 500ms);
  EXPECT_EQ(pace.sent("uid:1000", 500, t0), 1000ms);  // a second exec of the same client
  EXPECT_EQ(pace.sent("uid:1001", 1000, t0), 0s);
  EXPECT_EQ(pace.sent("uid:1000", 1000, t0 + 3s), 0s);  // idle: owes nothing
  service::ClientPace unpaced(0);
  EXPECT_EQ(unpaced.sent("uid:1000", std::size_t{1} << 40, t0), 0s);
}

// The daemon's budget of buffered bytes: a client (not root) holds its share
// and no more; the whole budget bounds everyone, root too; holds give their
// bytes back when they go, moved or not.
TEST(MemoryBudget, ClientsHoldTheirShareAndTheDaemonItsTotal) {
  service::MemoryBudget budget(1000, 250);
  std::optional<service::MemoryBudget::Hold> a = budget.take("uid:1000", 200, false);
  ASSERT_TRUE(a);
  EXPECT_FALSE(budget.take("uid:1000", 51, false)) << "past the client's share";
  EXPECT_TRUE(budget.take("uid:1000", 50, false));  // (given back at once)
  const auto b = budget.take("uid:1001", 250, false);
  ASSERT_TRUE(b);
  const auto root = budget.take("uid:0", 500, true);
  ASSERT_TRUE(root);
  EXPECT_EQ(budget.held(), 950u);
  EXPECT_FALSE(budget.take("uid:0", 51, true)) << "past the daemon's total, root too";
  EXPECT_FALSE(budget.take("uid:1002", 51, false));
  {
    const service::MemoryBudget::Hold moved = std::move(*a);
    a.reset();  // moved from: gives nothing back
    EXPECT_EQ(budget.held(), 950u);
  }
  EXPECT_EQ(budget.held(), 750u);
  EXPECT_TRUE(budget.take("uid:1000", 250, false));
}

}  // namespace
}  // namespace mayura
