// Images other than the host's: a directory by path or by name; one that is
// not there fails INVALID_CONFIG with nothing made.

#include <sched.h>
#include <sys/mount.h>

#include <filesystem>
#include <fstream>

#include "harness.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using ImagesTest = NativeTest;

TEST_F(ImagesTest, ADirectoryByPath) {
  const std::string image = make_tiny_image(options().image_dir + "/tiny", {"/bin/cat", "/bin/ls"});
  CreateOptions c;
  c.image = image;
  auto s = create(c);
  EXPECT_EQ(sh(s, "cat /etc/marker"), "tiny image\n");
  auto r = s.exec({"/bin/sh", "-c", "ls /usr/bin/python3"});
  EXPECT_NE(r.exit_code, 0);  // nothing of the host
  EXPECT_EQ(sh(s, "cat /etc/hostname").rfind("mayura-", 0), 0u);
  auto w = s.exec({"/bin/sh", "-c", "echo x > /etc/marker"});
  EXPECT_NE(w.stderr.find("Read-only"), std::string::npos);
  s.write_file("hello.txt", "hi");
  EXPECT_EQ(sh(s, "cat hello.txt"), "hi");
}

TEST_F(ImagesTest, ADirectoryByNameFromTheImageDirectory) {
  make_tiny_image(options().image_dir + "/tiny/rootfs", {"/bin/cat"});
  CreateOptions c;
  c.image = "tiny";
  auto s = create(c);
  EXPECT_EQ(sh(s, "cat /etc/marker"), "tiny image\n");
}

TEST_F(ImagesTest, AMissingImageFailsInvalidConfigAndMakesNothing) {
  for (const char* image : {"/nonexistent/image", "nope", "../../etc", "/tmp"}) {
    CreateOptions c;
    c.image = image;
    EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_CONFIG) << image;
  }
  EXPECT_TRUE(processes_in_range(options()).empty());
  int cgroups = 0;
  for (const auto& e : fs::directory_iterator(options().cgroup_root)) cgroups += e.is_directory() ? 1 : 0;
  EXPECT_EQ(cgroups, 0);
}

TEST_F(ImagesTest, TheHostsWholeRootIsNoImage) {
  for (const char* image : {"/", "//"}) {
    CreateOptions c;
    c.image = image;
    EXPECT_EQ(reason_of([&] { create(c); }), Reason::INVALID_CONFIG) << image;
  }
}

TEST_F(ImagesTest, MountsTheHostMakesLaterNeverPropagateIn) {
  // An image on a shared mount, as on systemd hosts where / is shared. The
  // test's mounts live in a mount namespace of its own (tests run in
  // parallel and check the host's mount table); the engine, started after
  // this, works from that namespace.
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0);
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0);
  const std::string shared = options().image_dir + "/shared";
  fs::create_directories(shared);
  ASSERT_EQ(::mount("tmpfs", shared.c_str(), "tmpfs", 0, "mode=0755"), 0);
  ASSERT_EQ(::mount(nullptr, shared.c_str(), nullptr, MS_SHARED, nullptr), 0);
  const std::string image = make_tiny_image(shared + "/img", {"/bin/ls", "/bin/cat"});
  fs::create_directories(image + "/usr/src");
  CreateOptions c;
  c.image = image;
  auto s = create(c);
  // the host mounts something under the image after the sandbox was made
  ASSERT_EQ(::mount("tmpfs", (image + "/usr/src").c_str(), "tmpfs", 0, "mode=0777"), 0);
  std::ofstream(image + "/usr/src/planted") << "x";
  EXPECT_EQ(sh(s, "ls -A /usr/src"), "");
  EXPECT_EQ(sh(s, "cat /proc/self/mountinfo").find(" /usr/src "), std::string::npos);
  s.release();
  ::umount2((image + "/usr/src").c_str(), MNT_DETACH);
  ::umount2(shared.c_str(), MNT_DETACH);
}

}  // namespace
}  // namespace mayura::testing
