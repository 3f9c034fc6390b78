// Volumes: named disks of a tenant's that outlive sandboxes and engines,
// mounted at a path read-write or read-only, one sandbox at a time, their
// size a quota the kernel enforces.

#include <filesystem>
#include <functional>
#include <string>

#include "harness.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using VolumeTest = NativeTest;

CreateOptions with_volume(const std::string& name, const std::string& path, bool read_only = false,
                          std::string tenant = {}) {
  CreateOptions c;
  c.volumes = {{name, path, read_only}};
  c.tenant = std::move(tenant);
  return c;
}

Reason reason_of(const std::function<void()>& call, std::string* message = nullptr) {
  try {
    call();
  } catch (const SandboxError& e) {
    if (message) *message = e.what();
    return e.reason();
  }
  return Reason::INTERNAL;  // nothing refused it
}

TEST_F(VolumeTest, AVolumeKeepsItsFilesAcrossSandboxesAndEngines) {
  ASSERT_TRUE(sandboxes().features().volumes);
  const Volume made = sandboxes().create_volume("data", 32);
  EXPECT_EQ(made.name, "data");
  EXPECT_EQ(made.size_mib, 32);
  EXPECT_FALSE(made.in_use);
  {
    auto s = create(with_volume("data", "/data"));
    // Its own file system, owned by the sandbox's user, with no lost+found.
    EXPECT_EQ(sh(s, "stat -f -c %T /data; stat -c %u:%a /data; ls -A /data | wc -l"), "ext2/ext3\n1000:755\n0\n");
    sh(s, "mkdir -p /data/src && echo kept > /data/src/f");
    ASSERT_EQ(sandboxes().volumes().size(), 1u);
    EXPECT_TRUE(sandboxes().volumes().front().in_use);
    s.release();
  }
  {
    // Read-only, under the workdir: the files are there, and no write goes.
    auto s = create(with_volume("data", "/workspace/ro", true));
    EXPECT_EQ(sh(s, "cat /workspace/ro/src/f"), "kept\n");
    const ExecResult w = s.exec({"sh", "-c", "echo x > /workspace/ro/new"});
    EXPECT_NE(w.exit_code, 0);
    EXPECT_NE(w.stderr.find("Read-only file system"), std::string::npos) << w.stderr;
    s.release();
  }
  shutdown();  // another engine, the same directories
  auto s = create(with_volume("data", "/data"));
  EXPECT_EQ(sh(s, "cat /data/src/f"), "kept\n");
  s.release();
  EXPECT_TRUE(eventually([&] { return !sandboxes().volumes().front().in_use; }));
  sandboxes().delete_volume("data");
  EXPECT_TRUE(sandboxes().volumes().empty());
}

TEST_F(VolumeTest, AVolumeIsOneSandboxsAtATimeAndCannotBeDeletedInUse) {
  sandboxes().create_volume("one", 16);
  auto first = create(with_volume("one", "/one"));
  std::string message;
  EXPECT_EQ(reason_of([&] { create(with_volume("one", "/one", true)); }, &message), Reason::INVALID_INPUT);
  EXPECT_NE(message.find("in use"), std::string::npos) << message;
  EXPECT_EQ(reason_of([&] { sandboxes().delete_volume("one"); }, &message), Reason::INVALID_INPUT);
  EXPECT_NE(message.find("in use"), std::string::npos) << message;
  EXPECT_EQ(sandboxes().size(), 1u) << "a refused create made a sandbox";
  sh(first, "echo first > /one/f");
  first.release();
  // Once the first sandbox is gone, the next takes it, at once.
  auto second = create(with_volume("one", "/one"));
  EXPECT_EQ(sh(second, "cat /one/f"), "first\n");
  second.release();
  EXPECT_TRUE(eventually([&] {
    try {
      sandboxes().delete_volume("one");
      return true;
    } catch (const SandboxError&) {
      return false;
    }
  }));
}

TEST_F(VolumeTest, AVolumesSizeIsItsQuota) {
  sandboxes().create_volume("small", 16);
  auto s = create(with_volume("small", "/small"));
  const ExecResult full = s.exec({"sh", "-c", "head -c 20M /dev/zero > /small/big"});
  EXPECT_NE(full.stderr.find("No space left on device"), std::string::npos) << full.stderr;
  // The workdir and the host are untouched.
  EXPECT_EQ(sh(s, "head -c 4M /dev/zero > /workspace/f && stat -c %s /workspace/f"), "4194304\n");
  s.release();
  EXPECT_TRUE(eventually([&] { return !sandboxes().volumes().front().in_use; }));
  sandboxes().delete_volume("small");
}

TEST_F(VolumeTest, EachTenantHasItsOwnVolumes) {
  sandboxes().create_volume("mine", 16, "alice");
  EXPECT_TRUE(sandboxes().volumes("bob").empty());
  EXPECT_EQ(reason_of([&] { create(with_volume("mine", "/v", false, "bob")); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { sandboxes().delete_volume("mine", "bob"); }), Reason::NOT_FOUND);
  // Bob's own of the same name is another volume.
  sandboxes().create_volume("mine", 16, "bob");
  auto a = create(with_volume("mine", "/v", false, "alice"));
  auto b = create(with_volume("mine", "/v", false, "bob"));
  sh(a, "echo alice > /v/f");
  EXPECT_NE(b.exec({"cat", "/v/f"}).exit_code, 0);
  a.release();
  b.release();
  EXPECT_TRUE(eventually([&] { return !sandboxes().volumes("alice").front().in_use; }));
  EXPECT_TRUE(eventually([&] { return !sandboxes().volumes("bob").front().in_use; }));
  sandboxes().delete_volume("mine", "alice");
  sandboxes().delete_volume("mine", "bob");
}

TEST_F(VolumeTest, BadVolumeCallsAreRefusedBeforeAnythingIsMade) {
  for (const char* bad : {"", ".x", "-x", "a/b", "a b", "~x"}) {
    EXPECT_EQ(reason_of([&] { sandboxes().create_volume(bad, 16); }), Reason::INVALID_INPUT) << bad;
    EXPECT_EQ(reason_of([&] { create(with_volume(bad, "/v")); }), Reason::INVALID_INPUT) << bad;
  }
  EXPECT_EQ(reason_of([&] { sandboxes().create_volume("tiny", 8); }), Reason::INVALID_INPUT);
  sandboxes().create_volume("v", 16);
  EXPECT_EQ(reason_of([&] { sandboxes().create_volume("v", 16); }), Reason::INVALID_INPUT);
  for (const char* path :
       {"", "v", "/", "/proc", "/proc/x", "/dev/v", "/sys", "/tmp", "/workspace", "/a/../b", "/a//b", "/a/", "/a/."}) {
    EXPECT_EQ(reason_of([&] { create(with_volume("v", path)).release(); }), Reason::INVALID_INPUT) << path;
  }
  // Under the image's read-only directories no mount point can be made.
  std::string message;
  EXPECT_EQ(reason_of([&] { create(with_volume("v", "/usr/vol")).release(); }, &message), Reason::INVALID_INPUT);
  EXPECT_NE(message.find("/usr/vol"), std::string::npos) << message;
  // Nor through a symlink of the image's (/bin, on a merged /usr), which a
  // volume's path never follows.
  EXPECT_EQ(reason_of([&] { create(with_volume("v", "/bin/vol")).release(); }), Reason::INVALID_INPUT);
  CreateOptions twice = with_volume("v", "/a");
  twice.volumes.push_back({"v", "/b", false});
  EXPECT_EQ(reason_of([&] { create(twice); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason_of([&] { create(with_volume("missing", "/v")); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { sandboxes().delete_volume("missing"); }), Reason::NOT_FOUND);
  EXPECT_EQ(sandboxes().size(), 0u) << "a refused create made a sandbox";
  EXPECT_TRUE(eventually([&] { return !sandboxes().volumes().front().in_use; }));
  sandboxes().delete_volume("v");
}

}  // namespace
}  // namespace mayura::testing
