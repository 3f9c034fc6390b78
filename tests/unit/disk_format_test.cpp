// A sandbox's disk, made in a scratch directory (no root needed) and judged
// by e2fsprogs' own tools: e2fsck finds nothing to fix, dumpe2fs sees ext4,
// debugfs sees the top directory's owner and mode as asked.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>

#include "disk_format.hpp"
#include "mayura/errors.hpp"
#include "tests/support/reason_of.hpp"
#include "tests/support/temp_dir.hpp"

namespace mayura::disk {
namespace {

namespace fs = std::filesystem;
using mayura::testing::reason_of;
using mayura::testing::TempDir;

constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;

// e2fsprogs' tools live in sbin, which a user's PATH may lack.
std::string tool(const std::string& name) {
  for (const char* dir : {"/usr/sbin/", "/sbin/", "/usr/bin/", "/bin/"}) {
    if (::access((dir + name).c_str(), X_OK) == 0) return dir + name;
  }
  return "";
}

struct Ran {
  int status = -1;  // the exit status, or -1 if it did not exit
  std::string output;
};

Ran run(const std::string& command) {
  Ran result;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  char buffer[4096];
  std::size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) result.output.append(buffer, n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) result.status = WEXITSTATUS(status);
  return result;
}

std::string quoted(const fs::path& path) { return "'" + path.string() + "'"; }

class DiskFormat : public ::testing::Test {
 protected:
  // e2fsprogs' checkers (scripts/deps.sh installs them): a test without
  // them fails, never skips.
  void SetUp() override {
    for (const char* name : {"e2fsck", "dumpe2fs", "debugfs"}) {
      ASSERT_FALSE(tool(name).empty()) << name << " (e2fsprogs) is not installed";
    }
  }

  void expect_clean(const fs::path& path) {
    const Ran fsck = run(tool("e2fsck") + " -fn " + quoted(path));
    EXPECT_EQ(fsck.status, 0) << fsck.output;
  }

  // The top directory's User, Group and Mode as debugfs prints them.
  void expect_root(const fs::path& path, std::uint32_t uid, std::uint32_t gid, std::uint32_t mode) {
    const Ran shown = run(tool("debugfs") + " -R 'stat /' " + quoted(path));
    ASSERT_EQ(shown.status, 0) << shown.output;
    std::smatch m;
    ASSERT_TRUE(std::regex_search(shown.output, m, std::regex(R"(User:\s*(\d+)\s+Group:\s*(\d+))"))) << shown.output;
    EXPECT_EQ(std::stoul(m[1]), uid) << shown.output;
    EXPECT_EQ(std::stoul(m[2]), gid) << shown.output;
    ASSERT_TRUE(std::regex_search(shown.output, m, std::regex(R"(Type:\s*directory\s+Mode:\s*(\d+))"))) << shown.output;
    EXPECT_EQ(std::stoul(m[1], nullptr, 8), mode) << shown.output;
  }

  TempDir dir_{"mayura-disk"};
};

TEST_F(DiskFormat, Makes64MiBExt4) {
  const fs::path disk = dir_.path / "disk.ext4";
  format_ext4(disk, {.bytes = 64 * kMiB, .root_uid = 1000, .root_gid = 1000, .root_mode = 0755});

  struct stat st {};
  ASSERT_EQ(::stat(disk.c_str(), &st), 0);
  EXPECT_EQ(static_cast<std::uint64_t>(st.st_size), 64 * kMiB);
  EXPECT_GE(static_cast<std::uint64_t>(st.st_blocks) * 512, 64 * kMiB) << "its blocks are not all reserved";
  EXPECT_EQ(st.st_mode & 07777, 0600U);

  expect_clean(disk);
  const Ran dump = run(tool("dumpe2fs") + " -h " + quoted(disk));
  ASSERT_EQ(dump.status, 0) << dump.output;
  std::smatch features;
  ASSERT_TRUE(std::regex_search(dump.output, features, std::regex(R"(Filesystem features:([^\n]*))"))) << dump.output;
  for (const char* feature : {"has_journal", "extent", "flex_bg", "metadata_csum"}) {
    EXPECT_NE(features[1].str().find(feature), std::string::npos) << feature << " missing: " << features[1];
  }
  expect_root(disk, 1000, 1000, 0755);
}

TEST_F(DiskFormat, KeepsIdsAbove65535) {
  const fs::path disk = dir_.path / "disk.ext4";
  format_ext4(disk, {.bytes = 16 * kMiB, .root_uid = 100000, .root_gid = 165536, .root_mode = 0700});
  expect_clean(disk);
  expect_root(disk, 100000, 165536, 0700);
}

// Past the sizes whose journal is the smallest (its size grows with the
// disk's), and with many block groups.
TEST_F(DiskFormat, Makes512MiBExt4) {
  const fs::path disk = dir_.path / "disk.ext4";
  format_ext4(disk, {.bytes = 512 * kMiB});
  expect_clean(disk);
  expect_root(disk, 0, 0, 0755);
}

TEST_F(DiskFormat, RefusesUnder16MiB) {
  const fs::path disk = dir_.path / "disk.ext4";
  std::string message;
  EXPECT_EQ(reason_of([&] { format_ext4(disk, {.bytes = 16 * kMiB - 1}); }, &message), Reason::INVALID_INPUT);
  EXPECT_NE(message.find("16 MiB"), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(disk));
}

TEST_F(DiskFormat, RefusesModeBeyondPermissions) {
  const fs::path disk = dir_.path / "disk.ext4";
  EXPECT_EQ(reason_of([&] { format_ext4(disk, {.bytes = 16 * kMiB, .root_mode = 040755}); }), Reason::INVALID_INPUT);
  EXPECT_FALSE(fs::exists(disk));
}

TEST_F(DiskFormat, MakesDirectoriesWithTheirOwnersAndModes) {
  const fs::path disk = dir_.path / "disk.ext4";
  format_ext4(disk, {.bytes = 16 * kMiB, .directories = {{"workspace", 1000, 1001, 0750}, {"tmp", 0, 0, 01777}}});
  expect_clean(disk);
  expect_root(disk, 0, 0, 0755);
  const Ran listed = run(tool("debugfs") + " -R 'stat /workspace' " + quoted(disk));
  EXPECT_NE(listed.output.find("User:  1000   Group:  1001"), std::string::npos) << listed.output;
  EXPECT_NE(listed.output.find("Mode:  0750"), std::string::npos) << listed.output;
  const Ran tmp = run(tool("debugfs") + " -R 'stat /tmp' " + quoted(disk));
  EXPECT_NE(tmp.output.find("Mode:  01777"), std::string::npos) << tmp.output;
}

TEST_F(DiskFormat, RefusesADirectoryNameThatIsAPath) {
  for (const char* name : {"", ".", "..", "a/b", "lost+found"}) {
    const fs::path disk = dir_.path / "disk.ext4";
    EXPECT_EQ(reason_of([&] { format_ext4(disk, {.bytes = 16 * kMiB, .directories = {{name}}}); }),
              Reason::INVALID_INPUT)
        << name;
    EXPECT_FALSE(fs::exists(disk)) << name;
  }
}

TEST_F(DiskFormat, LeavesAnExistingFileAlone) {
  const fs::path disk = dir_.path / "disk.ext4";
  std::ofstream(disk) << "not a disk";
  std::string message;
  reason_of([&] { format_ext4(disk, {.bytes = 16 * kMiB}); }, &message);
  EXPECT_NE(message.find("File exists"), std::string::npos) << message;
  std::ifstream in(disk);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "not a disk");
}

}  // namespace
}  // namespace mayura::disk
