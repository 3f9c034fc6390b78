// Privilege: a command holds no capability, cannot become root, cannot gain
// ids through a setuid file, and cannot make a user namespace to get
// capabilities back.

#include "attack.hpp"

namespace mayura::testing {
namespace {

using PrivilegeTest = AttackTest;

TEST_F(PrivilegeTest, NoCapabilityInAnySet) {
  auto s = create();
  const std::string status = sh(s, "cat /proc/self/status");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"}) {
    EXPECT_NE(status.find(std::string(set) + ":\t0000000000000000\n"), std::string::npos) << set << "\n" << status;
  }
  EXPECT_NE(status.find("NoNewPrivs:\t1\n"), std::string::npos) << status;
}

TEST_F(PrivilegeTest, CapsetSetuidAndNoNewPrivsCannotBeUndone) {
  auto s = create();
  install_probe(s);
  auto r = probe(s, {"privilege"});
  EXPECT_EQ(r["capget"], "ok");
  EXPECT_EQ(r["cap_effective"], "0,0");
  EXPECT_EQ(r["capset"], "EPERM");
  EXPECT_EQ(r["setuid0"], "EPERM");
  EXPECT_EQ(r["setresuid0"], "EPERM");
  EXPECT_EQ(r["setgid0"], "EPERM");
  EXPECT_EQ(r["setgroups"], "EPERM");
  EXPECT_EQ(r["nnp"], "1");
  // the kernel takes only 1 for PR_SET_NO_NEW_PRIVS: there is no way back
  EXPECT_EQ(r["nnp_unset"], "EINVAL");
  EXPECT_EQ(r["nnp_after"], "1");
  EXPECT_EQ(r["unshare_user"], "EPERM");
  EXPECT_EQ(r["clone_user"], "EPERM");
  EXPECT_EQ(r["cap_ambient_raise"], "EPERM");
  EXPECT_EQ(probe(s, {"ids"})["uids"], "1000,1000,1000");
}

TEST_F(PrivilegeTest, HostSetuidBinariesKeepTheirBitButGiveNoIds) {
  auto s = create();
  install_probe(s);
  // Every Debian host has all three (passwd, util-linux's su, login's
  // newgrp), setuid root: each must be there, so that none is passed over.
  for (const char* bin : {"/usr/bin/passwd", "/usr/bin/su", "/usr/bin/newgrp"}) {
    SCOPED_TRACE(bin);
    ASSERT_EQ(::access(bin, F_OK), 0) << "not on this host";
    auto st = probe(s, {"stat", bin});
    ASSERT_EQ(st["stat"], "ok");
    EXPECT_EQ(std::stoi(st["mode"], nullptr, 8) & 04000, 04000) << st["mode"];  // the bit is there...
    auto r = probe(s, {"suid", bin});
    // the binary really ran: a failed exec would leave the probe's own child,
    // whose ids prove nothing about the setuid bit
    ASSERT_EQ(r["exec"], "ok") << "the setuid binary was never executed";
    EXPECT_EQ(r["execd"], "1") << "the binary was not seen running as itself";
    EXPECT_EQ(r.count("exe"), 0u) << "the process stopped being the sandbox user's: it gained ids";
    EXPECT_EQ(r["uid"], "1000,1000,1000,1000");  // ...and does nothing
    EXPECT_EQ(r["gid"], "1000,1000,1000,1000");
  }
}

TEST_F(PrivilegeTest, ASetuidFileMadeInTheWorkspaceRunsWithoutChangingIds) {
  auto s = create();
  install_probe(s);
  sh(s, "cp /workspace/probe /workspace/suid && chmod 6755 /workspace/suid");
  auto st = probe(s, {"stat", "/workspace/suid"});
  EXPECT_EQ(st["stat"], "ok");
  auto r = s.exec({"/workspace/suid", "ids"});
  ASSERT_EQ(r.exit_code, 0) << r.stderr;
  auto ids = parse_results(r.stdout);
  EXPECT_EQ(ids["uids"], "1000,1000,1000");
  EXPECT_EQ(ids["gids"], "1000,1000,1000");
  const std::string mounts = sh(s, "grep ' /workspace ' /proc/self/mountinfo");
  EXPECT_NE(mounts.find("nosuid"), std::string::npos) << mounts;
}

TEST_F(PrivilegeTest, IdMapsCannotBeRewritten) {
  auto s = create();
  install_probe(s);
  for (const char* f : {"/proc/self/uid_map", "/proc/self/gid_map", "/proc/self/setgroups", "/proc/1/uid_map"}) {
    const std::string got = probe(s, {"write", f, "0 0 1"})["write"];
    EXPECT_TRUE(got == "EPERM" || got == "EACCES") << f << ": " << got;
  }
  EXPECT_EQ(probe(s, {"ids"})["uids"], "1000,1000,1000");
}

}  // namespace
}  // namespace mayura::testing
