// Snapshots and forks of a sandbox's disk: its working directory and /tmp
// copied whole (every kind of file as it was), taken while its processes
// run, restored into new sandboxes, kept per tenant and across engines.

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <string>
#include <optional>
#include <thread>

#include "engine/sandbox_disk.hpp"
#include "harness.hpp"

namespace fs = std::filesystem;

namespace mayura::testing {
namespace {

using SnapshotTest = NativeTest;

CreateOptions with_tenant_disk(std::int64_t mib, std::string tenant = {}) {
  CreateOptions c;
  c.disk_mib = mib;
  c.tenant = std::move(tenant);
  return c;
}

CreateOptions from_snapshot(const std::string& name, std::string tenant = {}) {
  CreateOptions c;
  c.snapshot = name;
  c.tenant = std::move(tenant);
  return c;
}

// Every kind of file a snapshot must keep: hard links, symlinks (one
// dangling), a sparse file, modes with special bits, an extended
// attribute, a name of 255 bytes, an empty directory, and a file in /tmp.
constexpr const char* kTree = R"sh(set -e
cd /workspace
mkdir -p d/empty d/deep/er
echo hello > d/a
ln d/a d/hard
ln -s a d/soft
ln -s /nowhere dangling
chmod 0640 d/a
chmod 2751 d/deep
truncate -s 100M sparse
printf x | dd of=sparse bs=1 seek=52428800 conv=notrunc 2>/dev/null
head -c 300000 /dev/urandom > d/deep/er/random
head -c 12M /dev/urandom > big
touch "$(printf 'n%.0s' $(seq 255))"
python3 -c 'import os; os.setxattr("d/a", "user.note", b"kept")'
echo in-tmp > /tmp/t
)sh";

// One line per file under /workspace and /tmp: its path, type and mode,
// owner, size, target or content's hash, whether it is sparse, its hard
// links, its extended attributes and its mtime.
constexpr const char* kManifest = R"py(import hashlib, os, stat
inodes = {}
for top in ("/workspace", "/tmp"):
    for root, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(dirs + files):
            p = os.path.join(root, name)
            st = os.lstat(p)
            line = [p, oct(st.st_mode), str(st.st_uid), str(st.st_gid), str(st.st_size), str(st.st_mtime_ns)]
            if stat.S_ISLNK(st.st_mode):
                line.append("-> " + os.readlink(p))
            else:
                for x in sorted(os.listxattr(p)):
                    line.append(x + "=" + os.getxattr(p, x).hex())
            if stat.S_ISREG(st.st_mode):
                line.append(hashlib.sha256(open(p, "rb").read()).hexdigest())
                line.append("sparse" if st.st_blocks * 512 < st.st_size else "whole")
                line.append("links %d, first %s" % (st.st_nlink, inodes.setdefault(st.st_ino, p)))
            print(" ".join(line))
)py";

std::string manifest(const Sandbox& s) {
  const ExecResult r = s.exec({"python3", "-c", kManifest});
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
  return r.stdout;
}

// What a test's snapshots leave: none once it deleted them.
std::set<std::string> files_under(const std::string& dir) {
  std::set<std::string> found;
  if (!fs::exists(dir)) return found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) found.insert(e.path().filename().string());
  }
  return found;
}

TEST_F(SnapshotTest, ASnapshotRestoresTheDiskAsItWasFileForFile) {
  auto s = create(with_tenant_disk(64));
  ASSERT_TRUE(s.features().snapshot);
  sh(s, kTree);
  const std::string before = manifest(s);
  ASSERT_NE(before.find("user.note=6b657074"), std::string::npos) << before;
  ASSERT_NE(before.find("sparse"), std::string::npos) << before;

  const Snapshot taken = s.snapshot("base");
  EXPECT_EQ(taken.name, "base");
  EXPECT_EQ(taken.disk_mib, 64);
  EXPECT_GT(taken.stored_bytes, 0);
  // Only what was written is stored, far less than the disk's 64 MiB: the
  // tests keep snapshots on a file system that keeps holes, as ext4 and XFS
  // do.
  EXPECT_LT(taken.stored_bytes, std::int64_t{32} << 20);
  const auto listed = sandboxes().snapshots();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed.front().name, "base");

  // The original goes on as ever, and changes after the snapshot are its own.
  sh(s, "echo later > /workspace/later");
  auto restored = create(from_snapshot("base"));
  EXPECT_EQ(manifest(restored), before);
  EXPECT_NE(restored.exec({"test", "-e", "/workspace/later"}).exit_code, 0);
  // The restored disk is as big as the snapshot's, and its own to write.
  EXPECT_EQ(sh(restored, "df -m --output=size /workspace | tail -1 | tr -d ' '"),
            sh(s, "df -m --output=size /workspace | tail -1 | tr -d ' '"));
  sh(restored, "echo mine > /workspace/d/a");
  EXPECT_EQ(sh(s, "cat /workspace/d/a"), "hello\n");

  restored.release();
  s.release();
  sandboxes().delete_snapshot("base");
  EXPECT_TRUE(sandboxes().snapshots().empty());
  EXPECT_TRUE(files_under(options().snapshot_dir).empty());
}

// A command writing all along: the snapshot holds every line written up to
// a moment, none torn, and the command goes on afterwards.
TEST_F(SnapshotTest, ASnapshotOfABusySandboxIsConsistentAndItGoesOn) {
  auto s = create(with_tenant_disk(32));
  sh(s,
     "setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i >> /workspace/log; done' >/dev/null 2>&1 </dev/null &"
     " while [ ! -s /workspace/log ]; do sleep 0.01; done");
  s.snapshot("busy");
  const std::string after = sh(s, "sleep 0.2; wc -l < /workspace/log");
  auto restored = create(from_snapshot("busy"));
  // Every line from 1 to the last, in order; the last one whole.
  EXPECT_EQ(sh(restored,
               "awk '$1 != NR { print \"line \" NR \" is \" $1; exit 1 } END { print (NR > 0) }' "
               "/workspace/log"),
            "1\n");
  const long restored_lines = std::stol(sh(restored, "wc -l < /workspace/log"));
  EXPECT_LT(restored_lines, std::stol(after)) << "the writer stopped at the snapshot";
  // No process came with the files: the log grows no more.
  EXPECT_EQ(sh(restored, "sleep 0.2; wc -l < /workspace/log"), std::to_string(restored_lines) + "\n");
  restored.release();
  s.release();
  sandboxes().delete_snapshot("busy");
}

// A release while a snapshot copies: the copy stops (GONE) and leaves no
// snapshot and no temporary file, or it had finished; either way the
// removal is not held up by it, and nothing leaks (the harness checks).
// True once a snapshot's temporary file under `dir` holds data: its copy
// is under way.
bool copy_under_way(const std::string& dir) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    struct stat st {};
    if (name.starts_with(".tmp-") && ::stat(it->path().c_str(), &st) == 0 && st.st_blocks > 0) return true;
  }
  return false;
}

// An XFS that clones files (reflink), made in a file and mounted for one
// test: where the engine's disks and snapshots share blocks. Mounted in a
// mount namespace of the test's own (a slave of the host's), which the
// engine's threads, started later, share: tests running alongside compare
// the host's mount table. Unmounted and removed as it goes (the engine's
// disks on it must be gone by then).
class ClonesFiles {
 public:
  explicit ClonesFiles(const std::string& base) : image_(base + ".xfs"), dir_(base + "-xfs") {
    host_ = ::open("/proc/thread-self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (host_ < 0 || ::unshare(CLONE_NEWNS) != 0) return;
    own_ = true;
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0) return;
    const std::string made = "truncate -s 4G " + image_ + " && mkfs.xfs -q -m reflink=1 " + image_ + " && mkdir -p " +
                             dir_ + " && mount -o loop " + image_ + " " + dir_;
    ok_ = std::system(made.c_str()) == 0;
  }
  ~ClonesFiles() {
    if (ok_ && ::umount2(dir_.c_str(), 0) != 0) ADD_FAILURE() << "the test's XFS is busy: " << std::strerror(errno);
    // Back to the host's mounts, for whatever the process does next (setns
    // refuses, EINVAL, while a thread that is ending still shares this
    // one's file-system state).
    int back = own_ ? -1 : 0;
    for (int attempt = 0; back != 0 && attempt < 500; ++attempt) {
      back = ::setns(host_, CLONE_NEWNS);
      if (back != 0 && errno != EINVAL) break;
      if (back != 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (back != 0) ADD_FAILURE() << "back to the host's mounts: " << std::strerror(errno);
    if (host_ >= 0) ::close(host_);
    fs::remove(dir_);
    fs::remove(image_);
  }
  ClonesFiles(const ClonesFiles&) = delete;
  ClonesFiles& operator=(const ClonesFiles&) = delete;
  bool ok() const { return ok_; }
  const std::string& dir() const { return dir_; }
  // Bytes free on it.
  std::uint64_t free() const {
    struct statvfs st {};
    return ::statvfs(dir_.c_str(), &st) == 0 ? static_cast<std::uint64_t>(st.f_bfree) * st.f_frsize : 0;
  }

 private:
  std::string image_;
  std::string dir_;
  int host_ = -1;  // the mount namespace it came from
  bool own_ = false;
  bool ok_ = false;
};

// Where the host clones files, a snapshot is a clone taken in one moment,
// the sandbox's file system never stopped: it stores no block twice, a
// busy writer's file comes back whole, and sandboxes made from it (which
// replay the journal the snapshot left empty) and a fork have the files.
TEST_F(SnapshotTest, WhereTheHostClonesFilesASnapshotSharesTheDisksBlocks) {
  ClonesFiles xfs("/var/tmp/mayura-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(xfs.ok()) << "no XFS with reflink could be made";
  options().disk_dir = xfs.dir() + "/disks";
  options().snapshot_dir = xfs.dir() + "/snapshots";
  {
    auto s = create(with_tenant_disk(256));
    sh(s, kTree);
    sh(s, "head -c 64M /dev/urandom > /workspace/blocks && sync -f /workspace");
    sh(s,
       "setsid sh -c 'i=0; while :; do i=$((i+1)); echo $i >> /workspace/log; done' >/dev/null 2>&1 </dev/null &"
       " while [ ! -s /workspace/log ]; do sleep 0.01; done");
    const std::uint64_t before = xfs.free();
    s.snapshot("cloned");
    // 64 MiB of data and more: a copy would have taken it from the free space.
    EXPECT_LT(before - std::min(before, xfs.free()), std::uint64_t{16} << 20)
        << "the snapshot copied the disk's blocks";
    auto restored = create(from_snapshot("cloned"));
    EXPECT_EQ(sh(restored,
                 "awk '$1 != NR { print \"line \" NR \" is \" $1; exit 1 } END { print (NR > 0) }' "
                 "/workspace/log"),
              "1\n");
    EXPECT_EQ(sh(restored, "sha256sum < /workspace/blocks"), sh(s, "sha256sum < /workspace/blocks"));
    EXPECT_EQ(sh(restored, "cat /workspace/d/a /tmp/t; ls /workspace/d"),
              "hello\nin-tmp\na\ndeep\nempty\nhard\nsoft\n");
    auto forks = restored.fork(2);
    ASSERT_EQ(forks.size(), 2u);
    for (const Sandbox& f : forks)
      EXPECT_EQ(sh(f, "sha256sum < /workspace/blocks"), sh(s, "sha256sum < /workspace/blocks"));
    for (const Sandbox& f : forks) f.release();
    restored.release();
    s.release();
    sandboxes().delete_snapshot("cloned");
  }
  shutdown();
  EXPECT_TRUE(files_under(options().snapshot_dir).empty());
  EXPECT_TRUE(eventually([&] { return files_under(options().disk_dir).empty(); }));
  EXPECT_TRUE(eventually([&] {
    const auto bound = mayura::native::loop_bound_files();
    return std::none_of(bound.begin(), bound.end(), [&](const std::string& f) { return f.starts_with(xfs.dir()); });
  })) << "a loop device still holds a file on the test's XFS";
}

TEST_F(SnapshotTest, AReleaseDuringASnapshotEndsItCleanly) {
  auto s = create(with_tenant_disk(512));
  sh(s, "head -c 400M /dev/urandom > /workspace/big");
  std::optional<Reason> ended;
  std::atomic<bool> returned = false;
  std::thread taker([&] {
    try {
      s.snapshot("raced");
    } catch (const SandboxError& e) {
      ended = e.reason();
    }
    returned = true;
  });
  // The release comes while the copy is being written, the sandbox frozen.
  bool overlapped = false;
  while (!returned && !(overlapped = copy_under_way(options().snapshot_dir))) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  s.release();
  taker.join();
  EXPECT_TRUE(overlapped) << "the snapshot ended before its copy was seen";
  if (ended) {
    EXPECT_EQ(*ended, Reason::GONE);
    EXPECT_TRUE(sandboxes().snapshots().empty());
  } else {
    sandboxes().delete_snapshot("raced");
  }
  EXPECT_TRUE(files_under(options().snapshot_dir).empty());
}

TEST_F(SnapshotTest, APausedSandboxStaysPausedThroughItsSnapshot) {
  auto s = create(with_tenant_disk(16));
  sh(s, "echo kept > /workspace/f");
  s.pause();
  s.snapshot("paused");
  EXPECT_TRUE(s.paused());
  s.resume();
  auto restored = create(from_snapshot("paused"));
  EXPECT_EQ(sh(restored, "cat /workspace/f"), "kept\n");
  restored.release();
  sandboxes().delete_snapshot("paused");
}

TEST_F(SnapshotTest, TakingASnapshotAgainReplacesIt) {
  auto s = create(with_tenant_disk(16));
  sh(s, "echo one > /workspace/f");
  s.snapshot("same");
  sh(s, "echo two > /workspace/f");
  s.snapshot("same");
  ASSERT_EQ(sandboxes().snapshots().size(), 1u);
  auto restored = create(from_snapshot("same"));
  EXPECT_EQ(sh(restored, "cat /workspace/f"), "two\n");
  restored.release();
  sandboxes().delete_snapshot("same");
  EXPECT_TRUE(files_under(options().snapshot_dir).empty());
}

TEST_F(SnapshotTest, AForkMakesSandboxesOfTheirOwnFromTheFilesAsTheyAre) {
  limits_.max_sandboxes = 8;
  CreateOptions c = with_tenant_disk(16);
  c.labels = {{"role", "original"}};
  c.env = {{"FROM", "create"}};
  auto s = create(c);
  sh(s, "echo shared > /workspace/f; echo t > /tmp/t");
  const std::vector<Sandbox> forks = s.fork(3);
  ASSERT_EQ(forks.size(), 3u);
  std::set<std::string> ids = {s.id()};
  std::set<std::string> hostnames = {sh(s, "hostname")};
  for (const Sandbox& f : forks) {
    ids.insert(f.id());
    hostnames.insert(sh(f, "hostname"));
    EXPECT_EQ(sh(f, "cat /workspace/f /tmp/t; echo $FROM"), "shared\nt\ncreate\n");
    EXPECT_EQ(f.labels().at("role"), "original");
    sh(f, "echo " + f.id() + " > /workspace/f");
  }
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(hostnames.size(), 4u);
  // Each wrote its own disk.
  EXPECT_EQ(sh(s, "cat /workspace/f"), "shared\n");
  for (const Sandbox& f : forks) EXPECT_EQ(sh(f, "cat /workspace/f"), f.id() + "\n");
  // A fork forks in turn, from its own files.
  const std::vector<Sandbox> again = forks.front().fork(1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(sh(again.front(), "cat /workspace/f"), forks.front().id() + "\n");
  again.front().release();
  // The forks' own snapshots are gone, and none shows.
  EXPECT_TRUE(sandboxes().snapshots().empty());
  EXPECT_TRUE(files_under(options().snapshot_dir).empty());
  for (const Sandbox& f : forks) f.release();
}

TEST_F(SnapshotTest, EachTenantHasItsOwnSnapshots) {
  auto a = create(with_tenant_disk(16, "alice"));
  sh(a, "echo alice > /workspace/f");
  a.snapshot("work");
  EXPECT_EQ(sandboxes().snapshots("alice").size(), 1u);
  EXPECT_TRUE(sandboxes().snapshots("bob").empty());
  EXPECT_TRUE(sandboxes().snapshots().empty());
  try {
    create(from_snapshot("work", "bob"));
    ADD_FAILURE() << "bob started from alice's snapshot";
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.reason(), Reason::NOT_FOUND) << e.what();
  }
  try {
    sandboxes().delete_snapshot("work", "bob");
    ADD_FAILURE() << "bob deleted alice's snapshot";
  } catch (const SandboxError& e) {
    EXPECT_EQ(e.reason(), Reason::NOT_FOUND) << e.what();
  }
  sandboxes().delete_snapshot("work", "alice");
}

TEST_F(SnapshotTest, SnapshotsOutliveTheEngineThatTookThem) {
  {
    auto s = create(with_tenant_disk(16));
    sh(s, "echo durable > /workspace/f");
    s.snapshot("durable");
  }
  shutdown();  // this engine ends; the next one starts on the same directories
  auto restored = create(from_snapshot("durable"));
  EXPECT_EQ(sh(restored, "cat /workspace/f"), "durable\n");
  ASSERT_EQ(sandboxes().snapshots().size(), 1u);
  restored.release();
  sandboxes().delete_snapshot("durable");
}

TEST_F(SnapshotTest, BadSnapshotCallsAreRefusedBeforeAnythingIsMade) {
  const auto reason = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const SandboxError& e) {
      return e.reason();
    }
    return Reason::INTERNAL;  // nothing refused it
  };
  auto tmpfs = create();
  EXPECT_EQ(reason([&] { tmpfs.snapshot("x"); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason([&] { tmpfs.fork(1); }), Reason::INVALID_INPUT);
  auto s = create(with_tenant_disk(16));
  for (const char* bad : {"", ".hidden", "-dash", "a/b", "~fork-1", "with space", "ü"}) {
    EXPECT_EQ(reason([&] { s.snapshot(bad); }), Reason::INVALID_INPUT) << bad;
    EXPECT_EQ(reason([&] { create(from_snapshot(bad)); }), Reason::INVALID_INPUT) << bad;
  }
  EXPECT_EQ(reason([&] { s.snapshot(std::string(65, 'a')); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason([&] { s.fork(0); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason([&] { s.fork(65); }), Reason::INVALID_INPUT);
  EXPECT_EQ(reason([&] { create(from_snapshot("missing")); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason([&] { sandboxes().delete_snapshot("missing"); }), Reason::NOT_FOUND);
  s.snapshot("sized");
  CreateOptions other_size = from_snapshot("sized");
  other_size.disk_mib = 32;
  EXPECT_EQ(reason([&] { create(other_size); }), Reason::INVALID_INPUT);
  EXPECT_EQ(sandboxes().size(), 2u) << "a refused create made a sandbox";
  sandboxes().delete_snapshot("sized");
  // A fork over the sandboxes' limit (4, two alive) makes none.
  EXPECT_EQ(reason([&] { s.fork(3); }), Reason::LIMIT_REACHED);
  EXPECT_EQ(sandboxes().size(), 2u);
  EXPECT_TRUE(files_under(options().snapshot_dir).empty());
}

}  // namespace
}  // namespace mayura::testing
