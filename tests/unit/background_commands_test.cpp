// The background commands' parts that need no sandbox: the rings that hold
// the newest output, the table's ids and bound, and a command's watchers.

#include <gtest/gtest.h>

#include <string>

#include "sandbox/background_commands.hpp"
#include "tests/support/reason_of.hpp"

namespace mayura::testing {
namespace {

using detail::BackgroundCommands;
using detail::OutputRing;

TEST(OutputRingTest, KeepsTheNewestBytesAndCountsWhatWasDropped) {
  OutputRing ring(10);
  ring.append("0123456");
  EXPECT_EQ(ring.slice(0, 100).data, "0123456");
  ring.append("789abc");  // 13 in all: the first 3 are gone
  EXPECT_EQ(ring.total(), 13u);
  OutputSlice s = ring.slice(0, 100);
  EXPECT_EQ(s.offset, 3u);
  EXPECT_EQ(s.dropped, 3u);
  EXPECT_EQ(s.data, "3456789abc");
  EXPECT_EQ(s.next, 13u);
  s = ring.slice(8, 3);  // from an offset, bounded
  EXPECT_EQ(s.offset, 8u);
  EXPECT_EQ(s.dropped, 0u);
  EXPECT_EQ(s.data, "89a");
  EXPECT_EQ(s.next, 11u);
  s = ring.slice(13, 100);  // caught up
  EXPECT_EQ(s.data, "");
  EXPECT_EQ(s.next, 13u);
  s = ring.slice(1000, 100);  // past the end: from the end
  EXPECT_EQ(s.offset, 13u);
  EXPECT_EQ(s.next, 13u);
}

TEST(OutputRingTest, AChunkLargerThanTheRingKeepsItsTail) {
  OutputRing ring(4);
  ring.append("ab");
  ring.append("0123456789");
  const OutputSlice s = ring.slice(0, 100);
  EXPECT_EQ(s.data, "6789");
  EXPECT_EQ(s.offset, 8u);
  EXPECT_EQ(s.dropped, 8u);
}

TEST(OutputRingTest, ManySmallAppendsHoldExactlyTheNewest) {
  OutputRing ring(1000);
  std::string all;
  for (int i = 0; i < 100000; ++i) {
    const std::string piece = std::to_string(i) + ",";
    ring.append(piece);
    all += piece;
  }
  const OutputSlice s = ring.slice(0, 1u << 20);
  EXPECT_EQ(s.data, all.substr(all.size() - 1000));
  EXPECT_EQ(s.offset + s.data.size(), all.size());
  EXPECT_EQ(s.dropped, all.size() - 1000);
}

TEST(BackgroundCommandsTest, IdsInOrderUnknownOnesAndTheBound) {
  BackgroundCommands table;
  auto first = table.add({"a"}, false, 1024);
  auto second = table.add({"b"}, true, 1024);
  EXPECT_EQ(first->id, "c1");
  EXPECT_EQ(second->id, "c2");
  EXPECT_EQ(table.find("c2"), second);
  EXPECT_EQ(reason_of([&] { table.find("c9"); }), Reason::NOT_FOUND);
  const auto listed = table.list();
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].argv, std::vector<std::string>{"a"});
  EXPECT_TRUE(listed[1].terminal);
  EXPECT_EQ(listed[1].state, CommandState::running);

  for (std::size_t i = 2; i < BackgroundCommands::kMaxHeld; ++i) table.add({"x"}, false, 1024);
  // every one runs: no room
  EXPECT_EQ(reason_of([&] { table.add({"y"}, false, 1024); }), Reason::LIMIT_REACHED);
  // the oldest that ended makes room
  second->ended(CommandState::exited, 0, {});
  first->ended(CommandState::stopped, {}, {});
  auto next = table.add({"z"}, false, 1024);
  EXPECT_EQ(next->id, "c" + std::to_string(BackgroundCommands::kMaxHeld + 1));
  EXPECT_EQ(reason_of([&] { table.find("c1"); }), Reason::NOT_FOUND);
  EXPECT_EQ(table.find("c2")->info().exit_code, 0);
}

// What a sandbox's commands may keep of their output is bounded in bytes
// too: a flood of large keeps cannot make the handle (a daemon) hold more.
TEST(BackgroundCommandsTest, TheBytesKeptAreBoundedAndEndedOnesMakeRoom) {
  BackgroundCommands table;
  const std::size_t quarter = BackgroundCommands::kMaxKeptBytes / 8;  // a quarter, for both streams
  auto a = table.add({"a"}, false, quarter);
  auto b = table.add({"b"}, false, quarter);
  auto c = table.add({"c"}, false, quarter);
  table.add({"d"}, false, quarter);
  EXPECT_EQ(reason_of([&] { table.add({"e"}, false, 1024); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(reason_of([&] { table.add({"huge"}, false, BackgroundCommands::kMaxKeptBytes); }), Reason::LIMIT_REACHED);
  // Ended ones go, the oldest first, as many as the new one needs.
  b->ended(CommandState::exited, 0, {});
  c->ended(CommandState::exited, 0, {});
  auto e = table.add({"e"}, false, 1024);
  EXPECT_EQ(reason_of([&] { table.find("c2"); }), Reason::NOT_FOUND);
  EXPECT_EQ(table.find("c3"), c);  // not needed for the room: kept
  EXPECT_EQ(table.add({"f"}, false, quarter)->id, "c6");
  EXPECT_EQ(reason_of([&] { table.find("c3"); }), Reason::NOT_FOUND);
  EXPECT_EQ(table.find("c1"), a);  // running: never dropped
  EXPECT_EQ(table.list().size(), 4u);
}

// A watcher hears of every change (output, the control, the end) as it is
// made, and never once it has stopped watching.
TEST(BackgroundCommandsTest, AWatcherHearsEachChangeUntilItStops) {
  BackgroundCommands table;
  auto c = table.add({"c"}, false, 1024);
  int heard = 0;
  int other = 0;
  const std::uint64_t w = c->watch([&heard] { ++heard; });
  const std::uint64_t v = c->watch([&other] { ++other; });
  c->output(OutputStream::out, "a");
  c->output(OutputStream::err, "b");
  EXPECT_EQ(heard, 2);
  c->unwatch(w);
  c->ended(CommandState::exited, 0, {});
  EXPECT_EQ(heard, 2);
  EXPECT_EQ(other, 3);
  c->unwatch(v);
  c->unwatch(v);  // twice: nothing
}

}  // namespace
}  // namespace mayura::testing
