// The mount tree: nothing writable carries setuid files or devices, the image
// is read-only, the kernel's sensitive /proc files are masked or read-only,
// there is no /sys, and no new mount can be made or an old one removed.

#include <sstream>

#include "attack.hpp"

namespace mayura::testing {
namespace {

using MountsTest = AttackTest;

TEST_F(MountsTest, EveryWritableMountIsNosuidAndNodev) {
  auto s = create();
  std::istringstream in(sh(s, "cat /proc/self/mountinfo"));
  std::string line;
  int rw = 0;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts;
    f >> id >> parent >> dev >> root >> point >> opts;
    const std::string o = "," + opts + ",";
    if (o.find(",rw,") == std::string::npos) continue;
    ++rw;
    EXPECT_NE(o.find(",nosuid,"), std::string::npos) << line;
    EXPECT_NE(o.find(",nodev,"), std::string::npos) << line;
  }
  EXPECT_GT(rw, 0);  // the workspace at least
}

// The options of the mount at `point` as the command sees them.
std::string options_of(const std::string& mountinfo, const std::string& point) {
  std::istringstream in(mountinfo);
  std::string line, found;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, at, opts;
    f >> id >> parent >> dev >> root >> at >> opts;
    if (at == point) found = opts;  // the last one mounted there is the visible one
  }
  return "," + found + ",";
}

TEST_F(MountsTest, TheRootIsReadOnly) {
  auto s = create();
  install_probe(s);
  const std::string mountinfo = sh(s, "cat /proc/self/mountinfo");
  for (const char* point : {"/", "/usr", "/etc", "/proc/sys"}) {
    EXPECT_NE(options_of(mountinfo, point).find(",ro,"), std::string::npos) << point;
  }
  // creating checks the mount first: EROFS
  EXPECT_EQ(probe(s, {"open", "/mayura-attack-marker", "c"})["open"], "EROFS");
  EXPECT_EQ(probe(s, {"open", "/usr/mayura-attack-marker", "c"})["open"], "EROFS");
  EXPECT_EQ(probe(s, {"open", "/etc/mayura-attack-marker", "c"})["open"], "EROFS");
  // opening an existing root-owned file checks its permissions before the
  // mount: EACCES (the mount is read-only all the same, as above)
  EXPECT_EQ(probe(s, {"open", "/usr/bin/env", "w"})["open"], "EACCES");
  EXPECT_EQ(probe(s, {"open", "/etc/hostname", "w"})["open"], "EACCES");
  EXPECT_EQ(::access("/mayura-attack-marker", F_OK), -1);
  EXPECT_EQ(::access("/usr/mayura-attack-marker", F_OK), -1);
  EXPECT_EQ(::access("/etc/mayura-attack-marker", F_OK), -1);
}

TEST_F(MountsTest, HostBinariesCannotBeOpenedForWriting) {
  const std::string before = read_host("/usr/bin/env");
  ASSERT_FALSE(before.empty());
  auto s = create();
  install_probe(s);
  // root's file, read-only mount: the permission check answers first
  EXPECT_EQ(probe(s, {"open", "/usr/bin/env", "w"})["open"], "EACCES");
  // truncating asks the mount for write access first: EROFS
  EXPECT_EQ(probe(s, {"open", "/usr/bin/env", "t"})["open"], "EROFS");
  EXPECT_EQ(probe(s, {"open", "/usr/bin/env", "rw"})["open"], "EACCES");
  auto r = s.exec({"/bin/sh", "-c", "echo evil > /usr/bin/env"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(read_host("/usr/bin/env"), before);
}

TEST_F(MountsTest, SensitiveProcFilesAreEmptyOrAbsent) {
  auto s = create();
  install_probe(s);
  for (const char* f :
       {"/proc/kcore", "/proc/keys", "/proc/key-users", "/proc/timer_list", "/proc/sched_debug", "/proc/kallsyms",
        "/proc/kmsg", "/proc/iomem", "/proc/modules", "/proc/slabinfo", "/proc/vmallocinfo", "/proc/interrupts"}) {
    const std::string got = probe(s, {"read", f})["read"];
    EXPECT_TRUE(got == "ok:0" || got == "ENOENT") << f << ": " << got;
  }
}

TEST_F(MountsTest, KernelSettingsCannotBeWritten) {
  const std::string hostname = read_host("/proc/sys/kernel/hostname");
  auto s = create();
  install_probe(s);
  // host root's files (the sandbox user is not even root inside)
  EXPECT_EQ(probe(s, {"write", "/proc/sys/kernel/hostname", "evil"})["write"], "EACCES");
  EXPECT_EQ(probe(s, {"write", "/proc/sys/kernel/panic", "1"})["write"], "EACCES");
  EXPECT_EQ(probe(s, {"write", "/proc/sys/vm/drop_caches", "3"})["write"], "EACCES");
  // masked: not there at all
  EXPECT_EQ(probe(s, {"write", "/proc/sysrq-trigger", "h"})["write"], "ENOENT");
  EXPECT_EQ(read_host("/proc/sys/kernel/hostname"), hostname);
}

TEST_F(MountsTest, ThereIsNoSys) {
  auto s = create();
  install_probe(s);
  for (const char* p : {"/sys", "/sys/fs/cgroup", "/sys/kernel", "/sys/fs/cgroup/cgroup.procs"}) {
    EXPECT_EQ(probe(s, {"stat", p})["stat"], "ENOENT") << p;
  }
}

TEST_F(MountsTest, NoMountCanBeMadeOrRemoved) {
  auto s = create();
  install_probe(s);
  EXPECT_EQ(probe(s, {"mount", "proc", "/tmp/p", "proc"})["mount"], "EPERM");
  EXPECT_EQ(probe(s, {"mount", "sysfs", "/tmp/s", "sysfs"})["mount"], "EPERM");
  EXPECT_EQ(probe(s, {"mount", "none", "/tmp/t", "tmpfs"})["mount"], "EPERM");
  EXPECT_EQ(probe(s, {"mount", "/", "/workspace/b", "none"})["mount"], "EPERM");
  auto u = probe(s, {"umount", "/proc"});
  EXPECT_EQ(u["umount"], "EPERM");
  EXPECT_EQ(u["umount_plain"], "EPERM");
  EXPECT_EQ(probe(s, {"umount", "/proc/kcore"})["umount"], "EPERM");  // unmasking
  EXPECT_EQ(probe(s, {"stat", "/proc/kcore"})["stat"], "ENOENT");     // still masked
}

}  // namespace
}  // namespace mayura::testing
