// read_file, write_file, list and remove: served inside the sandbox, as its
// user, so a planted symlink never reaches a host path and a FIFO or device
// never hangs the call.

#include <chrono>
#include <filesystem>

#include "harness.hpp"

namespace mayura::testing {
namespace {

using FilesTest = NativeTest;

TEST_F(FilesTest, TextBinaryEmptyNestedRelativeAndAbsolute) {
  auto s = create();
  s.write_file("index.js", "console.log(6 * 7)");
  EXPECT_EQ(s.read_file("index.js"), "console.log(6 * 7)");
  EXPECT_EQ(s.read_file("/workspace/index.js"), "console.log(6 * 7)");
  std::string binary;
  for (int i = 0; i < 256 * 64; ++i) binary.push_back(static_cast<char>(i));
  s.write_file("/tmp/bin.dat", binary);
  EXPECT_EQ(s.read_file("/tmp/bin.dat"), binary);
  s.write_file("empty", "");
  EXPECT_EQ(s.read_file("empty"), "");
  s.write_file("a/b/c/deep.txt", "deep");  // parents are made
  EXPECT_EQ(sh(s, "cat a/b/c/deep.txt"), "deep");
  const std::string big(5 << 20, 'z');
  s.write_file("big", big);
  EXPECT_EQ(s.read_file("big").size(), big.size());
  // written as the sandbox user
  EXPECT_EQ(sh(s, "stat -c '%u:%g %a' index.js"), "1000:1000 644\n");
  // overwrite keeps the mode
  sh(s, "chmod 750 index.js");
  s.write_file("index.js", "again");
  EXPECT_EQ(sh(s, "stat -c %a index.js; cat index.js"), "750\nagain");
}

TEST_F(FilesTest, ListAndRemove) {
  auto s = create();
  sh(s, "mkdir -p d/sub && echo hi > d/f && ln -s f d/link && mkfifo d/fifo");
  auto entries = s.list("d");
  ASSERT_EQ(entries.size(), 4u);
  EXPECT_EQ(entries[0].name, "f");
  EXPECT_EQ(entries[0].type, FileType::file);
  EXPECT_EQ(entries[0].size, 3u);
  EXPECT_EQ(entries[1].name, "fifo");
  EXPECT_EQ(entries[1].type, FileType::other);
  EXPECT_EQ(entries[2].name, "link");
  EXPECT_EQ(entries[2].type, FileType::symlink);
  EXPECT_EQ(entries[3].name, "sub");
  EXPECT_EQ(entries[3].type, FileType::directory);
  EXPECT_FALSE(s.list(".").empty());
  s.remove("d/f");
  EXPECT_EQ(s.list("d").size(), 3u);
  s.remove("d");  // recursive
  EXPECT_EQ(reason_of([&] { s.list("d"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.remove("d"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.list("nothing"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { s.remove("/usr/bin/sh"); }), Reason::PERMISSION_DENIED);
}

TEST_F(FilesTest, PlantedSymlinksStayInsideTheSandbox) {
  auto s = create();
  // a link to a host secret reads the sandbox's masked copy, never the host's
  sh(s,
     "ln -s /etc/shadow shadow && ln -s /root/.bashrc rc && ln -s ../../../../etc/hostname up && ln -s /usr/bin bin");
  EXPECT_EQ(s.read_file("shadow"), "");
  EXPECT_EQ(reason_of([&] { s.read_file("rc"); }), Reason::NOT_FOUND);
  EXPECT_EQ(s.read_file("up").rfind("mayura-", 0), 0u);
  // writing through a link into the image fails: it is read-only
  EXPECT_EQ(reason_of([&] { s.write_file("bin/evil", "x"); }), Reason::PERMISSION_DENIED);
  EXPECT_FALSE(std::filesystem::exists("/usr/bin/evil"));
  // .. climbs only to the sandbox's root
  EXPECT_EQ(s.read_file("../../../../../etc/hostname").rfind("mayura-", 0), 0u);
  // removing a link removes the link, not what it points to
  sh(s, "mkdir keep && echo k > keep/file && ln -s keep dirlink");
  s.remove("dirlink");
  EXPECT_EQ(s.read_file("keep/file"), "k\n");
}

TEST_F(FilesTest, SpecialFilesNeverHang) {
  auto s = create();
  sh(s, "mkfifo pipe");
  // (a call that hung would never return: ctest's timeout fails it)
  EXPECT_EQ(reason_of([&] { s.read_file("pipe"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.write_file("pipe", "x"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.read_file("/dev/zero"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.read_file("/dev/tty"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.read_file("/workspace"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { s.read_file("/proc/1/environ"); }), Reason::PERMISSION_DENIED);
}

TEST_F(FilesTest, SizesAreBounded) {
  limits_.max_read_bytes = 1024;
  limits_.max_write_bytes = 1024;
  auto s = create();
  sh(s, "head -c 4096 /dev/zero > big");
  EXPECT_EQ(reason_of([&] { s.read_file("big"); }), Reason::LIMIT_REACHED);
  ReadOptions r;
  r.max_bytes = 10;
  sh(s, "head -c 11 /dev/zero > eleven");
  EXPECT_EQ(reason_of([&] { s.read_file("eleven", r); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(reason_of([&] { s.write_file("x", std::string(2048, 'x')); }), Reason::LIMIT_REACHED);
}

TEST_F(FilesTest, AFullTmpfsKeepsTheOldFile) {
  options().workdir_mib = 2;
  limits_.max_write_bytes = 8 << 20;
  auto s = create();
  s.write_file("keep", "old");
  EXPECT_EQ(reason_of([&] { s.write_file("keep", std::string(4 << 20, 'x')); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(s.read_file("keep"), "old");
  EXPECT_EQ(sh(s, "ls -A | tr '\\n' ' '"), "keep ");  // no temporary file left
}

TEST_F(FilesTest, ASandboxThatStopsEverythingItCanCannotStallTheEngine) {
  auto s = create();
  // kill -STOP -1 as the sandbox user, over and over (from once the command
  // that starts it is gone: it would stop that too)
  sh(s,
     "setsid sh -c 'while [ -e /proc/$0 ]; do :; done; while :; do kill -STOP -1 2>/dev/null; done' $$ "
     ">/dev/null 2>&1 </dev/null &");
  for (int i = 0; i < 20; ++i) {
    s.write_file("f" + std::to_string(i), std::to_string(i));
    EXPECT_EQ(s.read_file("f" + std::to_string(i)), std::to_string(i));
  }
  EXPECT_EQ(s.list(".").size(), 20u);
  // a command may be stopped before it runs; the exec still ends at its timeout
  ExecOptions o;
  o.timeout_ms = 1000;
  for (int i = 0; i < 5; ++i) {
    const ExecResult r = s.exec({"true"}, o);
    EXPECT_TRUE(r.timed_out || r.exit_code == 0);
  }
}

}  // namespace
}  // namespace mayura::testing
