// Image resolution and the root plan, without mounting anything.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "mayura/rootfs/image.hpp"
#include "tests/support/temp_dir.hpp"

namespace fs = std::filesystem;

namespace mayura::rootfs {
namespace {

using mayura::testing::TempDir;

bool has(const Plan& plan, OpKind kind, const std::string& dst) {
  return std::any_of(plan.begin(), plan.end(), [&](const Op& op) { return op.kind == kind && op.dst == dst; });
}

TEST(Image, HostIsTheDefault) {
  EXPECT_TRUE(resolve_image("", "/nonexistent").host);
  EXPECT_TRUE(resolve_image("host", "/nonexistent").host);
}

TEST(Image, MissingOrMalformedImagesAreRefused) {
  EXPECT_THROW(resolve_image("/nonexistent/dir", "/x"), ImageError);
  EXPECT_THROW(resolve_image("nope", "/nonexistent"), ImageError);
  EXPECT_THROW(resolve_image("../etc", "/tmp"), ImageError);
  EXPECT_THROW(resolve_image("a/b", "/tmp"), ImageError);
  TempDir empty;
  EXPECT_THROW(resolve_image(empty.path.string(), "/x"), ImageError);  // no bin or usr
}

TEST(Image, DirectoriesByPathAndByName) {
  TempDir store;
  fs::create_directories(store.path / "alpine" / "rootfs" / "bin");
  fs::create_directories(store.path / "plain" / "usr");
  EXPECT_EQ(resolve_image("alpine", store.path).root, (store.path / "alpine" / "rootfs").string());
  EXPECT_EQ(resolve_image("plain", store.path).root, (store.path / "plain").string());
  EXPECT_EQ(resolve_image((store.path / "plain").string(), "/x").root, (store.path / "plain").string());
}

TEST(Plan, HostImageHidesSecretsAndGivesTheSandboxItsOwnPlaces) {
  RootOptions o;
  const Plan plan = plan_for(resolve_image("host", "/x"), o);
  EXPECT_TRUE(has(plan, OpKind::bind, "/usr"));
  EXPECT_TRUE(has(plan, OpKind::mask, "/etc/shadow"));
  EXPECT_TRUE(has(plan, OpKind::mask, "/etc/ssh"));
  EXPECT_TRUE(has(plan, OpKind::override_file, "/etc/passwd"));
  EXPECT_TRUE(has(plan, OpKind::tmpfs, "/workspace"));
  EXPECT_TRUE(has(plan, OpKind::tmpfs, "/tmp"));
  EXPECT_TRUE(has(plan, OpKind::proc, "/proc"));
  EXPECT_TRUE(has(plan, OpKind::devpts, "/dev/pts"));
  for (const auto& op : plan) {
    // nothing of the host but system directories and a few device nodes
    if (op.kind != OpKind::bind) continue;
    EXPECT_TRUE(op.src == "/usr" || op.src == "/etc" || op.src.rfind("/dev/", 0) == 0 || op.src.rfind("/lib", 0) == 0 ||
                op.src == "/bin" || op.src == "/sbin")
        << op.src;
    EXPECT_NE(op.src, "/root");
    EXPECT_NE(op.src, "/home");
    EXPECT_NE(op.src, "/var");
    EXPECT_NE(op.src, "/run");
  }
  // writable places are bounded
  for (const auto& op : plan) {
    if (op.kind == OpKind::tmpfs) {
      EXPECT_GT(op.size, 0u) << op.dst;
    }
  }
}

TEST(Plan, DirectoryImageSkipsKernelAndWritablePlaces) {
  TempDir img;
  for (const char* d : {"bin", "usr", "etc", "proc", "sys", "dev", "tmp", "run", "workspace"})
    fs::create_directories(img.path / d);
  fs::create_symlink("usr/lib", img.path / "lib");
  const Plan plan = plan_for(resolve_image(img.path.string(), "/x"), RootOptions{});
  EXPECT_TRUE(has(plan, OpKind::bind, "/bin"));
  EXPECT_TRUE(has(plan, OpKind::symlink, "/lib"));
  for (const auto& op : plan) {
    if (op.kind == OpKind::bind) {
      EXPECT_NE(op.dst, "/proc");
      EXPECT_NE(op.dst, "/sys");
      EXPECT_NE(op.dst, "/workspace");
    }
  }
}

}  // namespace
}  // namespace mayura::rootfs
