// The snapshot store in a scratch directory (no root needed): a snapshot is
// replaced whole or not at all, even when its writer is SIGKILLed halfway;
// what a dead writer left goes when an engine starts, a live writer's stays;
// a copy keeps a disk's holes; names and tenants stay apart.

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "mayura/errors.hpp"
#include "snapshot_store.hpp"
#include "tests/support/reason_of.hpp"
#include "tests/support/temp_dir.hpp"

namespace mayura::native {
namespace {

namespace fs = std::filesystem;
using mayura::testing::reason_of;
using mayura::testing::TempDir;

std::string text_of(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(int fd, const std::string& bytes) {
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
}

// The temporary files in a tenant's directory.
std::vector<fs::path> temporaries(const fs::path& dir) {
  std::vector<fs::path> found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename().string().rfind(".tmp-", 0) == 0) found.push_back(e.path());
  }
  return found;
}

class SnapshotStoreTest : public ::testing::Test {
 protected:
  TempDir dir_{"mayura-snapshots"};
  SnapshotStore store_{dir_.path.string()};
};

TEST_F(SnapshotStoreTest, AWriterKilledHalfwayLeavesTheOldSnapshotWhole) {
  store_.write("alice", "work", [](int fd) { write_all(fd, "old and whole"); });
  const pid_t writer = ::fork();
  ASSERT_GE(writer, 0);
  if (writer == 0) {
    // Half of a new snapshot, then it waits to be killed.
    SnapshotStore(dir_.path.string()).write("alice", "work", [](int fd) {
      if (::write(fd, "new, half", 9) != 9) ::_exit(2);
      ::pause();
    });
    ::_exit(1);
  }
  std::vector<fs::path> left;
  for (int i = 0; i < 1000 && left.empty(); ++i) {
    for (const fs::path& p : temporaries(dir_.path)) {
      if (fs::file_size(p) == 9) left.push_back(p);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(left.size(), 1u) << "the writer never wrote half a snapshot";
  ASSERT_EQ(::kill(writer, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);

  EXPECT_EQ(text_of(store_.path("alice", "work")), "old and whole");
  ASSERT_EQ(store_.list("alice").size(), 1u);
  // An engine starting finds the dead writer's file unlocked and removes it.
  store_.remove_orphans();
  EXPECT_TRUE(temporaries(dir_.path).empty());
  EXPECT_EQ(text_of(store_.path("alice", "work")), "old and whole");
}

TEST_F(SnapshotStoreTest, ALiveWritersFileIsNotAnOrphan) {
  store_.write("", "busy", [&](int fd) {
    write_all(fd, "being written");
    SnapshotStore(dir_.path.string()).remove_orphans();  // another engine starting meanwhile
    EXPECT_EQ(temporaries(dir_.path).size(), 1u);
  });
  EXPECT_EQ(text_of(store_.path("", "busy")), "being written");
  EXPECT_TRUE(temporaries(dir_.path).empty());
}

TEST_F(SnapshotStoreTest, AFailedWriteLeavesNothingAndTheOldOne) {
  store_.write("", "kept", [](int fd) { write_all(fd, "v1"); });
  EXPECT_EQ(reason_of([&] {
              store_.write("", "kept", [](int) { throw SandboxError(Reason::INTERNAL, "the copy failed"); });
            }),
            Reason::INTERNAL);
  EXPECT_EQ(text_of(store_.path("", "kept")), "v1");
  EXPECT_TRUE(temporaries(dir_.path).empty());
}

TEST_F(SnapshotStoreTest, TenantsHaveTheirOwnNames) {
  store_.write("alice", "same", [](int fd) { write_all(fd, "a"); });
  store_.write("../bob", "same", [](int fd) { write_all(fd, "b"); });
  EXPECT_EQ(text_of(store_.path("alice", "same")), "a");
  EXPECT_EQ(text_of(store_.path("../bob", "same")), "b");
  EXPECT_TRUE(store_.list("").empty());
  EXPECT_EQ(reason_of([&] { store_.remove("carol", "same"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { store_.open("carol", "same"); }), Reason::NOT_FOUND);
  store_.remove("alice", "same");
  EXPECT_TRUE(store_.list("alice").empty());
  ASSERT_EQ(store_.list("../bob").size(), 1u);
  // Every tenant's directory is a plain one under the store's.
  for (const auto& e : fs::directory_iterator(dir_.path)) {
    EXPECT_EQ(e.path().parent_path(), dir_.path);
    EXPECT_EQ(e.path().filename().string().find('.'), std::string::npos) << e.path();
  }
}

TEST_F(SnapshotStoreTest, NamesThatAreNotOneComponentAreRefused) {
  for (const char* bad : {"", ".", "..", "../x", "a/b", ".tmp-x", "with space"}) {
    EXPECT_EQ(reason_of([&] { store_.path("", bad); }), Reason::INVALID_INPUT) << bad;
  }
}

TEST_F(SnapshotStoreTest, AForksSnapshotIsHiddenAndAnOldOneRemoved) {
  store_.write("", "~fork-1", [](int fd) { write_all(fd, "x"); });
  EXPECT_TRUE(store_.list("").empty());
  store_.remove_orphans();
  EXPECT_TRUE(fs::exists(store_.path("", "~fork-1"))) << "a fork under way lost its snapshot";
  fs::last_write_time(store_.path("", "~fork-1"), fs::file_time_type::clock::now() - std::chrono::hours(1));
  store_.remove_orphans();
  EXPECT_FALSE(fs::exists(store_.path("", "~fork-1")));
}

TEST_F(SnapshotStoreTest, ACopyKeepsTheDisksHoles) {
  const fs::path from = dir_.path / "disk";
  const fs::path to = dir_.path / "copy";
  constexpr off_t kSize = off_t{64} << 20;
  {
    const int fd = ::open(from.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, kSize), 0);
    ASSERT_EQ(::pwrite(fd, "start", 5, 0), 5);
    ASSERT_EQ(::pwrite(fd, "middle", 6, kSize / 2), 6);
    ::close(fd);
  }
  const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
  const int out = ::open(to.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0600);
  ASSERT_GE(in, 0);
  ASSERT_GE(out, 0);
  copy_disk_file(in, out, kSize);
  ::close(in);
  ::close(out);
  EXPECT_EQ(text_of(to), text_of(from));
  struct stat st {};
  ASSERT_EQ(::stat(to.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, kSize);
  EXPECT_LT(st.st_blocks * 512, kSize / 4) << "the copy filled the holes";
}

}  // namespace
}  // namespace mayura::native
