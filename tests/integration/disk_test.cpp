// A sandbox's working directory and /tmp on a disk of its own: its size a
// quota the kernel enforces, its files the sandbox's, the disk gone with the
// sandbox.

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/sandbox_disk.hpp"
#include "harness.hpp"
#include "image_archives.hpp"
#include "mayura/images.hpp"

namespace fs = std::filesystem;
namespace img = mayura::testing::images;

namespace mayura::testing {
namespace {

using DiskTest = NativeTest;

CreateOptions with_disk(std::int64_t mib) {
  CreateOptions c;
  c.disk_mib = mib;
  return c;
}

// The one disk file in the engine's disk directory ("" if not exactly one),
// the engine's templates (hidden files) aside.
std::string only_disk(const std::string& dir) {
  std::vector<std::string> found;
  if (fs::exists(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      if (e.path().filename().string().front() != '.') found.push_back(e.path().string());
    }
  }
  return found.size() == 1 ? found.front() : "";
}

TEST_F(DiskTest, AWorkdirOnADiskHoldsWritesUpToItsSizeAndNoMore) {
  auto s = create(with_disk(32));
  ASSERT_TRUE(s.features().disk);
  // The workdir is an ext4 of its own, owned by the sandbox's user.
  EXPECT_EQ(sh(s, "stat -f -c %T /workspace"), "ext2/ext3\n");
  EXPECT_EQ(sh(s, "stat -c %u:%g /workspace"), "1000:1000\n");
  sh(s, "head -c 8M /dev/zero > /workspace/eight && sync");
  EXPECT_EQ(sh(s, "stat -c %u /workspace/eight"), "1000\n");
  // On the host: one file, its 32 MiB reserved whole.
  const std::string file = only_disk(options().disk_dir);
  ASSERT_FALSE(file.empty());
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 32 << 20);
  EXPECT_GE(static_cast<std::int64_t>(st.st_blocks) * 512, std::int64_t{32} << 20);
  // Past its size, a write fails ENOSPC inside; the host's file stays 32 MiB.
  const ExecResult full = s.exec({"sh", "-c", "head -c 40M /dev/zero > /workspace/forty; echo $? >&2; sync"});
  EXPECT_NE(full.stderr.find("No space left on device"), std::string::npos) << full.stderr;
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 32 << 20);
  // Another sandbox (a tmpfs workdir) writes as ever.
  auto other = create();
  EXPECT_EQ(sh(other, "head -c 8M /dev/zero > /workspace/eight && stat -c %s /workspace/eight"), "8388608\n");
  // /tmp is on the same disk, in the same quota (full now), writable by all
  // as ever; the disk's own top directory (lost+found) shows nowhere.
  EXPECT_EQ(sh(s, "stat -f -c %T /tmp; stat -c %a:%u /tmp"), "ext2/ext3\n1777:0\n");
  EXPECT_NE(s.exec({"sh", "-c", "head -c 1M /dev/zero > /tmp/more"}).stderr.find("No space left on device"),
            std::string::npos);
  EXPECT_EQ(sh(s, "ls -A /workspace /tmp | grep -c lost+found || true"), "0\n");
  // Removed with the rest of the sandbox, off the release's path.
  s.release();
  EXPECT_TRUE(eventually([&] { return !fs::exists(file); })) << "the disk outlived its sandbox";
}

TEST_F(DiskTest, TwoSandboxesDisksAreTheirsAlone) {
  auto a = create(with_disk(16));
  auto b = create(with_disk(16));
  sh(a, "echo a > /workspace/mine");
  EXPECT_EQ(sh(b, "ls -A /workspace | wc -l"), "0\n");
  EXPECT_EQ(sh(a, "cat /workspace/mine"), "a\n");
}

TEST_F(DiskTest, ABadSizeIsRefusedBeforeAnythingIsMade) {
  for (const std::int64_t mib : {std::int64_t{0}, std::int64_t{8}, std::int64_t{1} << 25}) {
    try {
      create(with_disk(mib));
      ADD_FAILURE() << "a disk of " << mib << " MiB was made";
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INVALID_INPUT) << e.what();
      EXPECT_NE(std::string(e.what()).find("disk_mib"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(only_disk(options().disk_dir).empty());
}

// A file of the one sandbox's cgroup (io.max, io.stat) as the host holds
// it, its lines sorted ("" if none or not one sandbox).
std::string io_file_of_the_one_sandbox(const std::string& cgroup_root, const std::string& name) {
  std::vector<std::string> dirs;
  for (const auto& e : fs::directory_iterator(cgroup_root)) {
    if (e.is_directory()) dirs.push_back(e.path());
  }
  if (dirs.size() != 1) return "";
  std::istringstream in(read_host(dirs.front() + "/" + name));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  std::string all;
  for (const std::string& line : lines) all += line + "\n";
  return all;
}

// The disk's and a volume's devices each bounded in the sandbox's io.max,
// a direct write charged there, the bound kept through a snapshot; a
// host without the io controller on cgroup2 refuses before making anything.
TEST_F(DiskTest, ADisksIoIsBoundedByTheKernelWhereTheHostCan) {
  const bool v2 = test_layout().rfind("v2-", 0) == 0;
  EXPECT_EQ(sandboxes().features().disk_io, v2) << test_layout();
  sandboxes().create_volume("bounded", 32);
  CreateOptions c = with_disk(64);
  c.volumes = {{"bounded", "/data", false}};
  c.disk_io = DiskIo{.read_bps = 0, .write_bps = 1 << 20, .read_iops = 0, .write_iops = 1000};
  if (!v2) {
    try {
      create(c);
      ADD_FAILURE() << "a disk's I/O was bounded on " << test_layout();
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INVALID_INPUT) << e.what();
      EXPECT_NE(std::string(e.what()).find("cannot bound a disk's I/O"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(only_disk(options().disk_dir).empty());
    sandboxes().delete_volume("bounded");
    return;
  }
  {
    auto s = create(c);
    const std::string bound = " rbps=max wbps=1048576 riops=max wiops=1000\n";
    std::string expected = sh(s, "stat -c '%Hd:%Ld' /workspace; stat -c '%Hd:%Ld' /data");
    std::istringstream devices(expected);
    std::vector<std::string> lines;
    for (std::string d; std::getline(devices, d);) lines.push_back(d + bound);
    std::sort(lines.begin(), lines.end());
    expected.clear();
    for (const std::string& l : lines) expected += l;
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(io_file_of_the_one_sandbox(options().cgroup_root, "io.max"), expected);
    // A write past the page cache goes through the bounded device, charged
    // to the sandbox's cgroup, where io.max holds it (the bound's pace is
    // bench_disk's to show, not a test's).
    sh(s, "dd if=/dev/zero of=/workspace/f bs=1M count=3 oflag=direct 2>/dev/null");
    std::string disk_device = sh(s, "stat -c '%Hd:%Ld' /workspace");
    disk_device.pop_back();
    const std::string stat = io_file_of_the_one_sandbox(options().cgroup_root, "io.stat");
    const std::size_t at = stat.find(disk_device + " ");
    ASSERT_NE(at, std::string::npos) << stat;
    long long written = 0;
    const std::size_t w = stat.find("wbytes=", at);
    if (w != std::string::npos) written = std::stoll(stat.substr(w + 7));
    EXPECT_GE(written, 3LL << 20) << stat;
    // A snapshot writes the disk out unbounded, and leaves the bound as it was.
    s.snapshot("bounded");
    EXPECT_EQ(io_file_of_the_one_sandbox(options().cgroup_root, "io.max"), expected);
    // Bad bounds are refused before anything is made.
    for (const DiskIo& bad : {DiskIo{.read_bps = 1000}, DiskIo{.write_iops = 1}, DiskIo{.write_bps = -1}}) {
      CreateOptions b = with_disk(16);
      b.disk_io = bad;
      EXPECT_THROW(create(b), SandboxError);
    }
    CreateOptions no_disk;
    no_disk.disk_io = DiskIo{.write_bps = 1 << 20};
    EXPECT_THROW(create(no_disk), SandboxError);
  }
  sandboxes().delete_snapshot("bounded");
  // The volume is let go a moment after its sandbox.
  EXPECT_TRUE(eventually([&] {
    try {
      sandboxes().delete_volume("bounded");
      return true;
    } catch (const SandboxError&) {
      return false;
    }
  }));
}

// A writable root: what the image's root user installs into /etc, /usr or
// /opt goes to the disk (in its quota, deletions too), a snapshot keeps it,
// another sandbox of the image sees none of it; the root's own top and the
// engine's files stay read-only; the host's image and a create with no
// disk are refused before anything is made.
TEST_F(DiskTest, AWritableRootOnTheDiskKeepsWhatTheImagesRootInstalls) {
  const std::string archive = options().state_dir + "-busybox.tar";
  img::write_oci_archive(archive, img::busybox_spec(img::Compression::gzip), "busybox:1");
  ImageStore(options().image_store).import_archive(archive);
  fs::remove(archive);
  CreateOptions c = with_disk(64);
  c.image = "busybox:1";
  c.user = "0";
  c.writable_root = true;
  {
    auto s = create(c);
    EXPECT_EQ(sh(s, "stat -f -c %t /etc"), "794c7630\n");  // OVERLAYFS_SUPER_MAGIC
    sh(s,
       "set -e; echo installed > /etc/tool.conf; mkdir -p /usr/local/bin; echo 'echo tool ran' > /usr/local/bin/tool; "
       "echo changed > /opt/opaque/new; rm /srv/a");
    EXPECT_EQ(sh(s, "sh /usr/local/bin/tool; cat /etc/tool.conf /opt/opaque/new; cat /srv/a-link; test ! -e /srv/a"),
              "tool ran\ninstalled\nchanged\none file, two names\n");
    // The root's own top stays read-only.
    for (const char* refused : {"mkdir /newtop", "touch /newfile"}) {
      const ExecResult r = s.exec({"sh", "-c", refused});
      EXPECT_NE(r.exit_code, 0) << refused;
      EXPECT_NE(r.stderr.find("Read-only file system"), std::string::npos) << refused << ": " << r.stderr;
    }
    // In the disk's quota.
    const ExecResult big = s.exec({"sh", "-c", "cat /dev/zero > /usr/big"});
    EXPECT_NE(big.stderr.find("No space left on device"), std::string::npos) << big.stderr;
    sh(s, "rm -f /usr/big");
    s.snapshot("installed");
  }
  {
    CreateOptions from = c;
    from.disk_mib.reset();
    from.snapshot = "installed";
    auto restored = create(from);
    EXPECT_EQ(sh(restored, "sh /usr/local/bin/tool; cat /etc/tool.conf; test ! -e /srv/a && echo gone"),
              "tool ran\ninstalled\ngone\n");
    CreateOptions plain;
    plain.image = "busybox:1";
    plain.user = "0";
    auto other = create(plain);
    EXPECT_EQ(sh(other, "cat /srv/a; test ! -e /etc/tool.conf && echo none"), "one file, two names\nnone\n");
    const ExecResult r = other.exec({"touch", "/etc/x"});
    EXPECT_NE(r.stderr.find("Read-only file system"), std::string::npos) << r.stderr;
  }
  sandboxes().delete_snapshot("installed");
  // Refused before anything is made: the host's files are no sandbox's, and
  // the upper layer lives on the disk.
  CreateOptions host = with_disk(16);
  host.writable_root = true;
  CreateOptions no_disk;
  no_disk.image = "busybox:1";
  no_disk.writable_root = true;
  // (And a volume above the workdir, which it would hide: a store image's
  // workdir may be deep.)
  sandboxes().create_volume("above", 16);
  CreateOptions above;
  above.image = "busybox:1";
  above.workdir = "/opt/opaque";
  above.volumes = {{"above", "/opt", false}};
  for (const auto& [bad, says] :
       {std::pair{host, "needs an image from the image store"}, std::pair{no_disk, "lives on the sandbox's disk"},
        std::pair{above, "would hide /opt/opaque"}}) {
    try {
      create(bad);
      ADD_FAILURE() << "made: " << says;
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INVALID_INPUT) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  }
  sandboxes().delete_volume("above");
  // (The released sandboxes' disks go off the release's path.)
  EXPECT_TRUE(eventually([&] { return only_disk(options().disk_dir).empty(); }));
}

// The disk files in the engine's disk directory (templates aside), each
// with its size.
std::map<std::string, std::int64_t> disks_in(const std::string& dir) {
  std::map<std::string, std::int64_t> found;
  if (fs::exists(dir)) {
    for (const auto& e : fs::directory_iterator(dir)) {
      std::error_code ec;
      const auto size = fs::file_size(e.path(), ec);
      if (e.path().filename().string().front() != '.' && !ec)
        found[e.path().string()] = static_cast<std::int64_t>(size);
    }
  }
  return found;
}

// The file behind a sandbox's disk: its workspace's device is a loop
// device, and the kernel names the file that is bound to it.
std::string disk_of(const std::string& device) {
  std::ifstream in("/sys/dev/block/" + device + "/loop/backing_file");
  std::string file;
  std::getline(in, file);
  return file;
}

// A disk made ahead waits, attached and mounted, for the next create of its
// size and owner, which takes it (and a new one is made); a create of
// another size makes its own, and the waiting disk goes. The provider's end
// removes what waits.
TEST_F(DiskTest, ACreateTakesADiskMadeAheadOfItsSizeAndAnotherSizeReplacesIt) {
  options().prepared_disks = 1;
  {  // the sandboxes' handles hold the provider
    auto first = create(with_disk(32));
    const auto device_of = [&](const Sandbox& s) {
      std::string d = sh(s, "stat -c %Hd:%Ld /workspace");
      return d.substr(0, d.find('\n'));
    };
    const std::string first_disk = disk_of(device_of(first));
    ASSERT_TRUE(fs::exists(first_disk)) << first_disk;
    std::map<std::string, std::int64_t> disks;
    ASSERT_TRUE(eventually([&] { return (disks = disks_in(options().disk_dir)).size() == 2; }))
        << "no disk was made ahead";
    disks.erase(first_disk);
    const std::string ahead = disks.begin()->first;
    EXPECT_EQ(disks.begin()->second, std::int64_t{32} << 20);
    EXPECT_TRUE(mayura::native::loop_bound_files().contains(ahead)) << "a disk made ahead is not attached";
    // The next create of 32 MiB takes it: released, it is the disk that goes.
    auto second = create(with_disk(32));
    EXPECT_EQ(disk_of(device_of(second)), ahead);
    EXPECT_EQ(sh(second, "stat -f -c %T /workspace; stat -c %u:%g /workspace; ls -A /workspace"),
              "ext2/ext3\n1000:1000\n");
    EXPECT_NE(
        second.exec({"sh", "-c", "head -c 40M /dev/zero > /workspace/forty"}).stderr.find("No space left on device"),
        std::string::npos);
    ASSERT_TRUE(eventually([&] { return disks_in(options().disk_dir).size() == 3; })) << "no disk was made ahead again";
    second.release();
    EXPECT_TRUE(eventually([&] { return !fs::exists(ahead); })) << "the disk made ahead outlived its sandbox";
    EXPECT_TRUE(fs::exists(first_disk));
    first.release();
    // Another size: its own disk, and the waiting one of 32 MiB goes for one of 48.
    auto third = create(with_disk(48));
    EXPECT_TRUE(eventually([&] {
      const auto now = disks_in(options().disk_dir);
      return now.size() == 2 &&
             std::all_of(now.begin(), now.end(), [](const auto& d) { return d.second == (std::int64_t{48} << 20); });
    })) << "the disk made ahead is not of the size last asked for";
    third.release();
  }
  shutdown();
  // (The released sandbox's disk goes off the release's path.)
  EXPECT_TRUE(eventually([&] { return disks_in(options().disk_dir).empty(); }))
      << "a disk made ahead outlived its provider";
}

// Disks an engine that died left (no loop device bound to them) are removed
// when an engine starts; a disk being made (new) or in use (bound) stays.
TEST_F(DiskTest, DisksNoSandboxUsesAreRemovedWhenAnEngineStarts) {
  fs::create_directories(options().disk_dir);
  const std::string orphan = options().disk_dir + "/0123456789abcdef.ext4";
  const std::string fresh = options().disk_dir + "/fedcba9876543210.ext4";
  for (const std::string& path : {orphan, fresh}) std::ofstream(path) << "a disk";
  const auto long_ago = fs::file_time_type::clock::now() - std::chrono::minutes(5);
  fs::last_write_time(orphan, long_ago);
  auto s = create(with_disk(16));  // this engine starts here
  EXPECT_FALSE(fs::exists(orphan)) << "a disk no sandbox uses was kept";
  EXPECT_TRUE(fs::exists(fresh)) << "a disk that may be being made was removed";
  // Another engine starting on the same directory: the live sandbox's disk,
  // bound to its loop device, stays however old it looks.
  std::string live;
  for (const auto& e : fs::directory_iterator(options().disk_dir)) {
    if (e.path() != fresh && e.path().filename().string().front() != '.') live = e.path().string();
  }
  ASSERT_FALSE(live.empty());
  fs::last_write_time(live, long_ago);
  {
    Sandboxes second = create_sandboxes(native_sandboxes(options()), limits_);
    CreateOptions brief;
    brief.lifetime_ms = 60'000;
    second.create(brief).release();
    second.close();
  }
  EXPECT_TRUE(fs::exists(live)) << "another engine removed a disk in use";
  // This engine's disk template, held locked, stayed too; one no engine
  // holds goes when an engine starts.
  std::string template_file;
  for (const auto& e : fs::directory_iterator(options().disk_dir)) {
    if (e.path().extension() == ".template") template_file = e.path().string();
  }
  EXPECT_FALSE(template_file.empty()) << "another engine removed a live engine's disk template";
  const std::string dead = options().disk_dir + "/.0123456789abcdef-16777216-1000-1000.template";
  std::ofstream(dead) << "a dead engine's";
  {
    Sandboxes third = create_sandboxes(native_sandboxes(options()), limits_);
    third.close();
  }
  EXPECT_FALSE(fs::exists(dead)) << "a dead engine's disk template was kept";
  EXPECT_EQ(sh(s, "echo still"), "still\n");
  fs::remove(fresh);
}

}  // namespace
}  // namespace mayura::testing
