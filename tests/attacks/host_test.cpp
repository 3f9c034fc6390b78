// The host seen from a command: no inherited descriptor, no way to write the
// init's or the host's binaries, nothing of the engine visible.

#include "attack.hpp"

namespace mayura::testing {
namespace {

using HostTest = AttackTest;

TEST_F(HostTest, OnlyTheStandardDescriptorsAreOpen) {
  auto s = create();
  install_probe(s);
  EXPECT_EQ(probe(s, {"fds"})["fds"], "0,1,2");
  ExecOptions eo;
  eo.stdin = "input";
  EXPECT_EQ(probe(s, {"fds"}, eo)["fds"], "0,1,2");
}

TEST_F(HostTest, TheInitsExecutableCannotBeOpened) {
  auto s = create();
  install_probe(s);
  for (const char* mode : {"r", "w", "rw"}) {
    EXPECT_EQ(probe(s, {"open", "/proc/1/exe", mode})["open"], "EACCES") << mode;
  }
  EXPECT_EQ(probe(s, {"readlink", "/proc/1/exe"})["readlink"], "EACCES");
  EXPECT_EQ(probe(s, {"open", "/proc/1/fd", "d"})["open"], "EACCES");
  EXPECT_EQ(probe(s, {"open", "/proc/1/map_files", "d"})["open"], "EACCES");
}

TEST_F(HostTest, NoHostBinaryCanBeWritten) {
  const std::string dash = read_host("/usr/bin/dash");
  auto s = create();
  install_probe(s);
  // root's files on a read-only mount: the permission check answers first
  for (const char* bin : {"/usr/bin/sh", "/bin/sh", "/usr/bin/dash", "/usr/lib/x86_64-linux-gnu/libc.so.6"}) {
    EXPECT_EQ(probe(s, {"open", bin, "w"})["open"], "EACCES") << bin;
    EXPECT_EQ(probe(s, {"open", bin, "t"})["open"], "EROFS") << bin;  // O_TRUNC asks the mount first
  }
  // and no new file can appear beside them
  EXPECT_EQ(probe(s, {"open", "/usr/bin/mayura-attack-marker", "c"})["open"], "EROFS");
  EXPECT_EQ(::access("/usr/bin/mayura-attack-marker", F_OK), -1);
  // the running shell's own executable, through its magic link
  auto r = s.exec({"/bin/sh", "-c", "/workspace/probe open /proc/$$/exe w"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr;
  const std::string got = parse_results(r.stdout)["open"];
  EXPECT_EQ(got, "EACCES");
  EXPECT_EQ(read_host("/usr/bin/dash"), dash);
}

TEST_F(HostTest, TheEnginesProcessesAndFilesAreNotVisible) {
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"procs"});
  EXPECT_EQ(r["count"], "2");
  // no memfd or deleted file of the engine's among anything this command can
  // see: each look must itself work (a look that failed would find nothing)
  const std::string maps = sh(s, "cat /proc/self/maps");
  EXPECT_NE(maps.find("[stack]"), std::string::npos) << maps;
  const std::string fds = sh(s, "ls -l /proc/self/fd/");
  EXPECT_NE(fds.find(" 0 -> "), std::string::npos) << fds;
  // every process's executable: only the init's link is closed to the command
  const ExecResult exes = s.exec({"/bin/sh", "-c", "ls -l /proc/*/exe"});
  EXPECT_NE(exes.stdout.find("/proc/self/exe -> "), std::string::npos) << exes.stdout;
  std::size_t refused = 0;
  for (std::size_t at = 0, end; (end = exes.stderr.find('\n', at)) != std::string::npos; at = end + 1, ++refused) {
    EXPECT_NE(exes.stderr.substr(at, end - at).find("'/proc/1/exe': Permission denied"), std::string::npos)
        << exes.stderr;
  }
  EXPECT_EQ(refused, 1u) << exes.stderr;
  for (const std::string& seen : {maps, fds, exes.stdout + exes.stderr}) {
    EXPECT_EQ(seen.find("memfd:"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("(deleted)"), std::string::npos) << seen;
    EXPECT_EQ(seen.find("mayura-init"), std::string::npos) << seen;
  }
}

}  // namespace
}  // namespace mayura::testing
