// The state directory's records, on a scratch directory (no root needed):
// engines share slots, a dead engine's records are taken back, a live one's
// never, and a lease holds no descriptor.

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>

#include "mayura/base/unique_fd.hpp"
#include "mayura/errors.hpp"
#include "records.hpp"

namespace mayura::records {
namespace {

namespace fs = std::filesystem;

class Records : public ::testing::Test {
 protected:
  void SetUp() override {
    char scratch[] = "/tmp/mayura-records-XXXXXX";
    ASSERT_NE(::mkdtemp(scratch), nullptr);
    parent_ = scratch;
    state_ = parent_ + "/state";
  }
  void TearDown() override { fs::remove_all(parent_); }

  static int open_fds() {
    int n = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
    return n;
  }
  void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

  std::string parent_, state_;
  cgroups::Places places_;  // no root: a record's cgroup is never one to remove here
};

Reason reason_of_claim(EngineLock& engine, const cgroups::Places& places) {
  try {
    engine.claim(places, "/nowhere/0123456789abcdef");
  } catch (const SandboxError& e) {
    return e.reason();
  }
  return Reason::INTERNAL;
}

TEST_F(Records, EnginesShareTheSlotsAndNeverTakeALiveOnesSlot) {
  EngineLock a(state_, 4), b(state_, 4);
  EXPECT_NE(a.id(), b.id());
  std::vector<SlotLease> leases;
  std::set<std::uint32_t> slots;
  for (int i = 0; i < 2; ++i) {
    leases.push_back(a.claim(places_, "/nowhere/a"));
    leases.push_back(b.claim(places_, "/nowhere/b"));
  }
  for (const auto& l : leases) slots.insert(l.slot());
  EXPECT_EQ(slots.size(), 4u);
  EXPECT_EQ(reason_of_claim(a, places_), Reason::LIMIT_REACHED);
  EXPECT_EQ(reason_of_claim(b, places_), Reason::LIMIT_REACHED);
  const std::uint32_t freed = leases.front().slot();
  leases.front().clear();
  EXPECT_EQ(b.claim(places_, "/nowhere/b").slot(), freed);
}

TEST_F(Records, ARecordSaysWhoseItIsAndWhatItNames) {
  EngineLock a(state_, 1);
  const SlotLease lease = a.claim(places_, "/sys/fs/cgroup/mayura/0123456789abcdef");
  std::ifstream in(state_ + "/slots/0");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "engine " + a.id() + "\n/sys/fs/cgroup/mayura/0123456789abcdef\n");
  EXPECT_TRUE(fs::exists(state_ + "/engines/" + a.id()));
}

TEST_F(Records, ADeadEnginesSlotIsTakenBackAndItsFileRemoved) {
  // As an engine that died leaves them: its record, and its file unlocked
  // (the lock went with its process).
  fs::create_directories(state_ + "/slots");
  fs::create_directories(state_ + "/engines");
  write(state_ + "/slots/0", "engine 0123456789abcdef\n/nowhere/0123456789abcdef\n");
  write(state_ + "/engines/0123456789abcdef", "");
  EngineLock next(state_, 1);
  EXPECT_EQ(next.claim(places_, "/nowhere/x").slot(), 0u);
  EXPECT_FALSE(fs::exists(state_ + "/engines/0123456789abcdef"));
}

TEST_F(Records, ARecordOfTheFirstLayoutCountsWhileItsEngineHoldsItsLock) {
  fs::create_directories(state_ + "/slots");
  write(state_ + "/slots/0", "/nowhere/0123456789abcdef");
  {
    const UniqueFd held(::open((state_ + "/slots/0").c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_EQ(::flock(held.get(), LOCK_EX), 0);
    EngineLock engine(state_, 1);
    EXPECT_EQ(reason_of_claim(engine, places_), Reason::LIMIT_REACHED);
  }
  EngineLock engine(state_, 1);
  EXPECT_EQ(engine.claim(places_, "/nowhere/x").slot(), 0u);  // unlocked: its engine is gone
}

TEST_F(Records, CleaningOrphansLeavesALiveEngineAlone) {
  EngineLock live(state_, 2);
  const SlotLease lease = live.claim(places_, "/nowhere/0123456789abcdef");
  write(state_ + "/slots/" + std::to_string(1 - lease.slot()), "engine fedcba9876543210\n/nowhere/fedcba9876543210\n");
  clean_orphans(state_, places_);
  EXPECT_TRUE(fs::exists(state_ + "/slots/" + std::to_string(lease.slot())));
  EXPECT_FALSE(fs::exists(state_ + "/slots/" + std::to_string(1 - lease.slot())));
  EXPECT_TRUE(fs::exists(state_ + "/engines/" + live.id()));
}

TEST_F(Records, ALeaseHoldsNoDescriptorAndTheDirectoryGoesWithTheLastEngine) {
  auto engine = std::make_unique<EngineLock>(state_, 200);
  const int before = open_fds();
  std::vector<SlotLease> leases;
  leases.reserve(200);
  for (int i = 0; i < 200; ++i) leases.push_back(engine->claim(places_, "/nowhere/0123456789abcdef"));
  EXPECT_EQ(open_fds(), before);
  remove_state_if_unused(state_);
  EXPECT_TRUE(fs::exists(state_));  // its records are there
  leases.clear();
  remove_state_if_unused(state_);
  EXPECT_TRUE(fs::exists(state_));  // its engine is there
  engine.reset();
  remove_state_if_unused(state_);
  EXPECT_FALSE(fs::exists(state_));
}

// A file system with no O_TMPFILE (the VMs' /tmp is 9p) gets records
// through a dot name: what an engine that died while writing left is removed
// once it is old, and a new one, perhaps another engine's write under way,
// is not.
TEST_F(Records, ANewRecordsNameLeftByADeadEngineGoesOnceItIsOld) {
  const UniqueFd probe(::open(parent_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  RecordProperty("o_tmpfile", probe ? "yes" : "no (the named fallback)");
  fs::create_directories(state_ + "/slots");
  fs::create_directories(state_ + "/engines");
  const std::string old_slot = state_ + "/slots/.new-0123456789abcdef";
  const std::string old_engine = state_ + "/engines/.new-0123456789abcdef";
  const std::string fresh = state_ + "/slots/.new-fedcba9876543210";
  for (const auto& path : {old_slot, old_engine, fresh}) write(path, "engine 0123456789abcdef\n/nowhere/x\n");
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(old_slot, an_hour_ago);
  fs::last_write_time(old_engine, an_hour_ago);
  EXPECT_EQ(clean_orphans(state_, places_), 0);
  EXPECT_FALSE(fs::exists(old_slot));
  EXPECT_FALSE(fs::exists(old_engine));
  EXPECT_TRUE(fs::exists(fresh));
  {
    EngineLock engine(state_, 1);
    const SlotLease lease = engine.claim(places_, "/nowhere/0123456789abcdef");
    EXPECT_EQ(lease.slot(), 0u);  // the dot name is no slot
  }
  fs::remove(fresh);
  remove_state_if_unused(state_);
  EXPECT_FALSE(fs::exists(state_));  // nothing of the writes left behind
}

// A live sandbox's kept line is written in place; once its engine is dead
// the next engine is offered it, with the slot already its own (its record
// names it), and the line stays for the engine after that.
TEST_F(Records, AKeptLineIsWrittenInPlaceAndADeadEnginesKeptSandboxIsOfferedToTheNext) {
  {
    EngineLock a(state_, 1);
    SlotLease lease = a.claim(places_, "/nowhere/0123456789abcdef");
    lease.keep("{\"x\":1}");
    std::ifstream in(state_ + "/slots/0");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "engine " + a.id() + "\n/nowhere/0123456789abcdef\nkept {\"x\":1}\n");
    EXPECT_THROW(lease.keep("two\nlines"), SandboxError);
  }
  // As an engine that died leaves it: the record, and the engine's file unlocked.
  fs::create_directories(state_ + "/slots");
  fs::create_directories(state_ + "/engines");
  write(state_ + "/slots/0", "engine 0123456789abcdef\n/nowhere/0123456789abcdef\nkept {\"x\":1}\n");
  write(state_ + "/engines/0123456789abcdef", "");
  EngineLock next(state_, 1);
  std::vector<SlotLease> taken;
  next.take_back([&](const EngineLock::Left& left, SlotLease lease) {
    EXPECT_EQ(left.slot, 0u);
    EXPECT_EQ(left.cgroup, "/nowhere/0123456789abcdef");
    EXPECT_EQ(left.kept, "{\"x\":1}");
    taken.push_back(std::move(lease));
  });
  ASSERT_EQ(taken.size(), 1u);
  std::ifstream in(state_ + "/slots/0");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "engine " + next.id() + "\n/nowhere/0123456789abcdef\nkept {\"x\":1}\n");
  EXPECT_EQ(reason_of_claim(next, places_), Reason::LIMIT_REACHED);  // its own now
  // A live engine's kept sandbox is never offered.
  EngineLock other(state_, 1);
  other.take_back([&](const EngineLock::Left&, SlotLease) { ADD_FAILURE() << "a live engine's sandbox was offered"; });
  taken.clear();
  EXPECT_FALSE(fs::exists(state_ + "/slots/0"));
}

}  // namespace
}  // namespace mayura::records
