// The image store against the real kernel: archives made here (there is no
// registry) in the OCI and docker-save shapes, imported, and run. Each test
// ends with the harness's leak check; the store is the test's own.

#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <sys/sysmacros.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>
#include <atomic>
#include <thread>

#include "conformance_here.hpp"
#include "harness.hpp"
#include "image_archives.hpp"
#include "tar_writer.hpp"
#include "mayura/images.hpp"
#include "mayura/testing/conformance.hpp"

namespace fs = std::filesystem;
namespace img = mayura::testing::images;

namespace mayura::testing {
namespace {

class ImageStoreTest : public NativeTest {
 protected:
  std::string archive(const std::string& name) {
    const std::string dir = options().state_dir + "-archives";
    fs::create_directories(dir);
    return dir + "/" + name;
  }
  void TearDown() override {
    fs::remove_all(options().state_dir + "-archives");
    NativeTest::TearDown();
  }
  ImageStore store() { return ImageStore(options().image_store); }

  Sandbox create_on(const std::string& image, std::map<std::string, std::string> env = {}) {
    CreateOptions c;
    c.image = image;
    c.env = std::move(env);
    return create(c);
  }

  // Every file of the store but its lock, with its type and size: what a
  // failed import must leave as it was.
  std::map<std::string, std::string> store_snapshot() {
    std::map<std::string, std::string> out;
    if (!fs::exists(options().image_store)) return out;
    for (const auto& e : fs::recursive_directory_iterator(options().image_store)) {
      const std::string rel = e.path().string().substr(options().image_store.size());
      if (rel == "/lock") continue;
      struct stat st {};
      ::lstat(e.path().c_str(), &st);
      out[rel] = std::to_string(st.st_mode) + ":" + std::to_string(S_ISREG(st.st_mode) ? st.st_size : 0);
    }
    return out;
  }
};

TEST_F(ImageStoreTest, AnOciArchiveRunsWithTheImagesConfig) {
  const std::string path = archive("busybox-oci.tar");
  img::write_oci_archive(path, img::busybox_spec(img::Compression::gzip), "busybox:1");
  const auto result = store().import_archive(path);
  ASSERT_EQ(result.images.size(), 1u);
  EXPECT_EQ(result.images[0].first, "busybox:1");
  EXPECT_EQ(result.layers_unpacked, 3u);

  auto s = create_on("busybox:1", {{"SHARED", "mine"}});
  // WorkingDir, User and Env apply; the create's env wins.
  EXPECT_EQ(sh(s, "pwd"), "/app\n");
  EXPECT_EQ(s.workdir(), "/app");
  EXPECT_EQ(sh(s, "id -u; id -g"), "1234\n1234\n");
  EXPECT_EQ(sh(s, "echo $GREETING $SHARED"), "from-image mine\n");
  EXPECT_EQ(sh(s, "cat hello.txt"), "hello from the image\n");
  EXPECT_EQ(s.read_file("hello.txt"), "hello from the image\n");
  // Nothing of the host: only the image's BusyBox.
  EXPECT_NE(s.exec({"/bin/sh", "-c", "test -e /usr/bin/python3"}).exit_code, 0);
  // Whiteouts and the opaque directory took effect.
  EXPECT_EQ(sh(s, "test -e /opt/gone || echo gone; test -e /etc/removed.txt || echo removed"), "gone\nremoved\n");
  EXPECT_EQ(sh(s, "ls /opt/opaque"), "new\n");
  // Ownership as the image says (idmapped layers); setuid and setgid cleared.
  EXPECT_EQ(sh(s, "stat -c %u:%g /bin/busybox /srv/owned"), "0:0\n1234:1234\n");
  EXPECT_EQ(sh(s, "stat -c %a /usr/bin/suid /usr/bin/sgid"), "755\n755\n");
  EXPECT_EQ(sh(s, "cat /home/app/secret >/dev/null && echo readable"), "readable\n");  // 0600, the app user's
  const std::string inodes = sh(s, "stat -c %i /srv/a /srv/a-link");
  EXPECT_EQ(inodes.substr(0, inodes.find('\n')),
            inodes.substr(inodes.find('\n') + 1, inodes.size() - inodes.find('\n') - 2));
  // The root is read-only; the workdir is writable, the image's files in it
  // keep their owners and modes (hello.txt is root's, 0644), and what is
  // written goes to the tmpfs, the store untouched.
  const auto w = s.exec({"/bin/sh", "-c", "touch /etc/x"});
  EXPECT_NE(w.exit_code, 0);
  EXPECT_NE(w.stderr.find("Read-only"), std::string::npos) << w.stderr;
  EXPECT_NE(s.exec({"/bin/sh", "-c", "echo more >> hello.txt"}).exit_code, 0);
  EXPECT_EQ(sh(s,
               "cat hello.txt > copy.txt && echo more >> copy.txt && rm hello.txt && cat copy.txt > hello.txt && rm "
               "copy.txt && "
               "echo new > new.txt && cat hello.txt new.txt && stat -c %u hello.txt"),
            "hello from the image\nmore\nnew\n1234\n");
  s.release();
  auto again = create_on("busybox:1");
  EXPECT_EQ(sh(again, "cat hello.txt; test -e new.txt || echo fresh"), "hello from the image\nfresh\n");
}

TEST_F(ImageStoreTest, TheStoreKeepsNoDeviceOrSetuidFileAndTheLayersAreTheImagesOwnersAndModes) {
  const std::string path = archive("busybox.tar");
  img::write_docker_archive(path, img::busybox_spec(img::Compression::none), {"busybox:docker"});
  store().import_archive(path);
  int whiteouts = 0;
  int owned = 0;
  for (const auto& e : fs::recursive_directory_iterator(options().image_store + "/layers")) {
    struct stat st {};
    ASSERT_EQ(::lstat(e.path().c_str(), &st), 0);
    EXPECT_FALSE(S_ISBLK(st.st_mode)) << e.path();
    if (S_ISCHR(st.st_mode)) {
      EXPECT_EQ(st.st_rdev, ::makedev(0, 0)) << "a device node was kept: " << e.path();
      ++whiteouts;
    }
    if (!S_ISLNK(st.st_mode)) {
      EXPECT_EQ(st.st_mode & S_ISUID, 0u) << e.path();
      if (!S_ISDIR(st.st_mode)) {
        EXPECT_EQ(st.st_mode & S_ISGID, 0u) << e.path();
      }
    }
    if (e.path().filename() == "owned") {
      ++owned;
      EXPECT_EQ(st.st_uid, 1234u);
      EXPECT_EQ(st.st_mode & 07777, 0640u);
    }
  }
  EXPECT_EQ(whiteouts, 2);
  EXPECT_EQ(owned, 1);
}

TEST_F(ImageStoreTest, DockerSaveArchivesOldAndNewShapesWithSharedLayersStoredOnce) {
  auto base = img::busybox_spec(img::Compression::none);
  auto other = base;
  other.layers.back() = {img::file("app/hello.txt", "hello from the other\n")};
  other.env.push_back("WHICH=other");
  std::vector<img::DockerImage> both(2);
  both[0].spec = base;
  both[0].repo_tags = {"team/app:1"};
  both[1].spec = other;
  both[1].repo_tags = {"registry.example:5000/team/other:2", "docker.io/library/other:latest"};
  img::DockerOptions old_shape;
  old_shape.shared_layer_symlink = true;
  const std::string path = archive("two.tar");
  img::write_docker_archive(path, both, old_shape);
  const auto result = store().import_archive(path);
  EXPECT_EQ(result.images.size(), 3u);
  EXPECT_EQ(result.layers_unpacked, 4u);  // two shared, one each
  EXPECT_EQ(sh(create_on("team/app:1"), "cat hello.txt"), "hello from the image\n");
  EXPECT_EQ(sh(create_on("registry.example:5000/team/other:2"), "cat hello.txt; echo $WHICH"),
            "hello from the other\nother\n");
  // Docker Hub's long form names the same image.
  EXPECT_EQ(sh(create_on("other"), "echo $WHICH"), "other\n");

  // The docker 25+ shape, zstd layers, the archive gzipped: all its layers
  // but the new one are in the store already.
  auto zstd = img::busybox_spec(img::Compression::zstd);
  zstd.layers.back().push_back(img::file("app/zstd.txt", "zstd\n"));
  img::DockerOptions new_shape;
  new_shape.oci_layout = true;
  new_shape.outer_compression = img::Compression::gzip;
  const std::string path2 = archive("new.tar.gz");
  img::write_docker_archive(path2, zstd, {"zstd:1"}, new_shape);
  const auto second = store().import_archive(path2);
  EXPECT_EQ(second.layers_unpacked, 1u);
  EXPECT_EQ(second.layers_reused, 2u);
  EXPECT_EQ(sh(create_on("zstd:1"), "cat zstd.txt"), "zstd\n");
}

TEST_F(ImageStoreTest, AnIndexOfPlatformsGivesTheHostsAndANameGivenWins) {
  img::OciOptions o;
  o.platforms = {{"linux", "arm64", "v8"}, {"linux", img::host_architecture(), ""}};
  o.platform_marker_layer = true;
  const std::string path = archive("multi.tar");
  img::write_oci_archive(path, img::busybox_spec(img::Compression::gzip), "busybox:multi", o);
  const auto result = store().import_archive(path, "mine:v1");
  ASSERT_EQ(result.images.size(), 1u);
  EXPECT_EQ(result.images[0].first, "mine:v1");
  EXPECT_EQ(sh(create_on("mine:v1"), "cat /etc/mayura-platform"), "linux/" + img::host_architecture() + "\n");
  // Only the given name.
  EXPECT_EQ(reason_of([&] { create_on("busybox:multi"); }), Reason::INVALID_CONFIG);
}

TEST_F(ImageStoreTest, BadArchivesFailClearlyAndLeaveTheStoreAsItWas) {
  const std::string good = archive("good.tar");
  img::write_oci_archive(good, img::busybox_spec(img::Compression::gzip), "busybox:1");
  store().import_archive(good);
  const auto before = store_snapshot();

  auto expect_refused = [&](const std::string& file, const std::string& words) {
    try {
      store().import_archive(file, "bad:1");
      ADD_FAILURE() << file << " was imported";
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INVALID_INPUT) << file << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << file << ": " << e.what();
    }
    EXPECT_EQ(store_snapshot(), before) << file << " changed the store";
  };

  // Truncated in a layer.
  const std::string truncated = archive("truncated.tar");
  auto fresh = img::busybox_spec(img::Compression::gzip);
  fresh.layers.back().push_back(img::file("app/fresh.txt", std::string(200000, 'x')));
  img::write_oci_archive(truncated, fresh, "fresh:1");
  fs::resize_file(truncated, fs::file_size(truncated) / 2);
  expect_refused(truncated, "truncated");

  img::OciOptions missing;
  missing.corrupt.omit_layer = 2;
  img::write_oci_archive(archive("missing.tar"), fresh, "fresh:1", missing);
  expect_refused(archive("missing.tar"), "lacks");

  img::OciOptions flipped;
  flipped.corrupt.wrong_layer_digest = 2;
  img::write_oci_archive(archive("flipped.tar"), fresh, "fresh:1", flipped);
  expect_refused(archive("flipped.tar"), "does not match its digest");

  img::DockerOptions diff;
  diff.corrupt.wrong_diff_id = 2;
  img::write_docker_archive(archive("diff.tar"), fresh, {"fresh:1"}, diff);
  expect_refused(archive("diff.tar"), "does not match its diff_id");

  auto with_layer = [&](const std::string& name, std::vector<img::Entry> layer) {
    auto spec = img::busybox_spec(img::Compression::none);
    spec.layers.push_back(std::move(layer));
    img::write_docker_archive(archive(name), spec, {"hostile:1"});
    return archive(name);
  };
  expect_refused(with_layer("dotdot.tar", {img::file("app/../../escaped", "x")}), "'..'");
  expect_refused(with_layer("out.tar", {img::symlink("app/out", "../../../etc/shadow")}), "pointing out");
  expect_refused(with_layer("through.tar", {img::symlink("app/link", "/etc"), img::file("app/link/passwd", "x")}),
                 "not a directory of the layer");
  img::Entry huge = img::file("app/huge", "just a little");
  huge.declared_size = 1ull << 40;
  expect_refused(with_layer("huge.tar", {huge}), "declares");
  std::ofstream(archive("garbage.tar")) << "this is no archive at all";
  expect_refused(archive("garbage.tar"), "cannot read " + archive("garbage.tar") + ": ");

  // A config nested deeper than any image needs (copying it would recurse
  // until the stack ends).
  {
    const std::string layer = img::layer_tar({img::file("a", "x")});
    const std::string config = R"({"os":"linux","architecture":")" + img::host_architecture() +
                               R"(","rootfs":{"type":"layers","diff_ids":[")" + img::sha256_digest(layer) +
                               R"("]},"config":{"Labels":)" + std::string(100000, '[') + std::string(100000, ']') +
                               "}}";
    const std::string hex = img::sha256_hex(config);
    img::detail::TarWriter deep(fs::path(archive("deep.tar")), img::Compression::none);
    deep.add_file(hex + ".json", config);
    deep.add_file("l/layer.tar", layer);
    deep.add_file("manifest.json",
                  R"([{"Config":")" + hex + R"(.json","RepoTags":["deep:1"],"Layers":["l/layer.tar"]}])");
    deep.finish();
  }
  expect_refused(archive("deep.tar"), "nested");

  // More names than an image may have (they would crowd out the store's).
  {
    std::vector<std::string> tags;
    tags.reserve(65);
    for (int i = 0; i < 65; ++i) tags.push_back("many:" + std::to_string(i));
    img::write_docker_archive(archive("many.tar"), fresh, tags);
    try {
      store().import_archive(archive("many.tar"));
      ADD_FAILURE() << "an image with 65 names was imported";
    } catch (const SandboxError& e) {
      EXPECT_EQ(e.reason(), Reason::INVALID_INPUT) << e.what();
    }
    EXPECT_EQ(store_snapshot(), before);
  }

  // The good image still runs; nothing was left in the host's /etc.
  EXPECT_FALSE(fs::exists("/escaped"));
  EXPECT_EQ(sh(create_on("busybox:1"), "cat hello.txt"), "hello from the image\n");
}

TEST_F(ImageStoreTest, RemovingKeepsWhatAnotherImageOrARunningSandboxUses) {
  auto base = img::busybox_spec(img::Compression::none);
  auto other = base;
  other.layers.back() = {img::file("app/hello.txt", "other\n")};
  std::vector<img::DockerImage> both(2);
  both[0].spec = base;
  both[0].repo_tags = {"one:1"};
  both[1].spec = other;
  both[1].repo_tags = {"two:1"};
  const std::string path = archive("two.tar");
  img::write_docker_archive(path, both);
  store().import_archive(path);
  const auto layers_of = [&] {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(options().image_store + "/layers")) n += e.is_directory() ? 1 : 0;
    return n;
  };
  ASSERT_EQ(layers_of(), 4u);

  const auto removed = store().remove("one:1");
  EXPECT_TRUE(removed.image_removed);
  EXPECT_EQ(removed.layers_removed, 1u);  // the base stays: two:1 uses it
  EXPECT_EQ(layers_of(), 3u);
  EXPECT_EQ(reason_of([&] { store().inspect("one:1"); }), Reason::NOT_FOUND);

  // A running sandbox keeps its image until it ends.
  auto s = create_on("two:1");
  const auto busy = store().remove("two:1");
  EXPECT_FALSE(busy.image_removed);
  EXPECT_EQ(layers_of(), 3u);
  EXPECT_EQ(sh(s, "cat hello.txt"), "other\n");
  EXPECT_TRUE(store().list().empty());
  s.release();
  // The next change of the store collects it: here, one:1 imported again.
  const std::string one = archive("one.tar");
  img::write_docker_archive(one, base, {"one:1"});
  EXPECT_EQ(store().import_archive(one).layers_reused, 2u);
  std::size_t records = 0;
  for (const auto& e : fs::directory_iterator(options().image_store + "/images"))
    records += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(records, 1u);
  EXPECT_EQ(layers_of(), 3u);  // the base two, one:1's own; two:1's own is gone
}

TEST_F(ImageStoreTest, TwoImportsAtOnceBothLand) {
  const std::string a = archive("a.tar");
  const std::string b = archive("b.tar");
  auto spec_b = img::busybox_spec(img::Compression::gzip);
  spec_b.layers.back().push_back(img::file("app/b.txt", "b\n"));
  img::write_oci_archive(a, img::busybox_spec(img::Compression::gzip), "a:1");
  img::write_oci_archive(b, spec_b, "b:1");
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (const auto& entry : std::vector<std::pair<std::string, int>>{{a, 2}, {b, 2}}) {
    const std::string& file = entry.first;
    for (int i = 0; i < entry.second; ++i) {
      threads.emplace_back([&, file] {
        try {
          ImageStore(options().image_store).import_archive(file);
        } catch (const std::exception& e) {
          ++failures;
          ADD_FAILURE() << e.what();
        }
      });
    }
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store().list().size(), 2u);
  EXPECT_TRUE(fs::is_empty(options().image_store + "/tmp"));
  EXPECT_EQ(sh(create_on("b:1"), "cat b.txt hello.txt"), "b\nhello from the image\n");
  EXPECT_EQ(sh(create_on("a:1"), "cat hello.txt"), "hello from the image\n");
}

TEST_F(ImageStoreTest, AnImageNotInTheStoreIsInvalidConfigAndMakesNothing) {
  for (const char* image : {"nope:1", "team/nope", "Bad Name"}) {
    EXPECT_EQ(reason_of([&] { create_on(image); }), Reason::INVALID_CONFIG) << image;
  }
  EXPECT_TRUE(processes_in_range(options()).empty());
}

TEST_F(ImageStoreTest, UserAndWorkingDirVariants) {
  auto import_with = [&](const std::string& name, const std::string& user, const std::string& working_dir) {
    auto spec = img::busybox_spec(img::Compression::none);
    spec.user = user;
    spec.working_dir = working_dir;
    const std::string path = archive(name + ".tar");
    img::write_docker_archive(path, spec, {name + ":1"});
    store().import_archive(path);
    return name + ":1";
  };
  // A nested WorkingDir the image has: its files show, the user's own too.
  auto home = create_on(import_with("home", "app:app", "/home/app"));
  EXPECT_EQ(sh(home, "pwd; stat -c %u secret; cat secret >/dev/null && echo readable; echo x > mine; ls"),
            "/home/app\n1234\nreadable\nmine\nsecret\n");
  // A WorkingDir the image lacks, at the top: made as the tmpfs.
  EXPECT_EQ(sh(create_on(import_with("top", "1234", "/work")), "pwd; id -u; id -g; touch f && ls"),
            "/work\n1234\n1234\nf\n");
  // No User: the engine's 1000:1000; root by number: root inside, with no capability.
  EXPECT_EQ(sh(create_on(import_with("nouser", "", "")), "id -u; pwd"), "1000\n/workspace\n");
  EXPECT_EQ(sh(create_on(import_with("root", "0", "")), "id -u; grep CapEff /proc/self/status"),
            "0\nCapEff:\t0000000000000000\n");
  // What cannot run fails INVALID_CONFIG at create, with nothing made.
  const std::vector<std::tuple<std::string, std::string, std::string>> unusable = {
      {"ghost", "ghost", ""},
      {"nogroup", "app:nosuchgroup", ""},
      {"bigid", "70000", ""},
      {"nodir", "", "/no/such/dir"},
      {"dotdot", "", "/app/../etc"},
      {"etc", "", "/etc"},
      {"scaffold", "", "/.mayura-scaffold"},
      {"link", "", "/bin/sh"}};
  for (const auto& [name, user, dir] : unusable) {
    const std::string image = import_with(name, user, dir);
    EXPECT_EQ(reason_of([&] { create_on(image); }), Reason::INVALID_CONFIG) << name;
  }
}

TEST_F(ImageStoreTest, AOneLayerImageRuns) {
  auto spec = img::busybox_spec(img::Compression::gzip);
  std::vector<img::Entry> all;
  for (auto& layer : spec.layers) {
    for (auto& e : layer) {
      // one layer holds no whiteouts or opaque markers
      if (e.path.find(".wh.") == std::string::npos) all.push_back(e);
    }
  }
  spec.layers = {all};
  img::write_oci_archive(archive("one.tar"), spec, "one:1");
  store().import_archive(archive("one.tar"));
  EXPECT_EQ(sh(create_on("one:1"), "cat hello.txt; id -u"), "hello from the image\n1234\n");
}

TEST_F(ImageStoreTest, AnImageCannotRedirectTheEnginesOwnMounts) {
  // A host directory shaped like the engine's scratch places, and an image
  // whose top-level names point at it (the names the engine once used).
  const std::string host = options().state_dir + "-hostdir";
  fs::create_directories(host + "/upper");
  fs::create_directories(host + "/work");
  fs::permissions(host, fs::perms::all);
  fs::permissions(host + "/upper", fs::perms::all);
  auto spec = img::busybox_spec(img::Compression::none);
  spec.layers.push_back({img::dir(host.substr(1)), img::symlink(".w", host), img::symlink(".l", host),
                         img::symlink(".i", host), img::symlink(".mayura-scaffold", host)});
  img::write_docker_archive(archive("redirect.tar"), spec, {"redirect:1"});
  store().import_archive(archive("redirect.tar"));
  auto s = create_on("redirect:1");
  EXPECT_EQ(sh(s, "echo written > new.txt; cat hello.txt new.txt"), "hello from the image\nwritten\n");
  EXPECT_EQ(sh(s, "test -e /.mayura-scaffold || echo hidden"), "hidden\n");
  EXPECT_TRUE(fs::is_empty(host + "/upper"));
  s.release();
  fs::remove_all(host);
}

TEST_F(ImageStoreTest, ImportsFromSeveralProcessesAtOnceAndProgressIsReported) {
  const std::string a = archive("a.tar");
  const std::string b = archive("b.tar");
  auto spec_b = img::busybox_spec(img::Compression::zstd);
  spec_b.layers.back().push_back(img::file("app/b.txt", "b\n"));
  img::write_docker_archive(a, img::busybox_spec(img::Compression::none), {"a:1"});
  img::write_oci_archive(b, spec_b, "b:1");
  // Processes, not threads: the store's locks are the kernel's, whoever holds them.
  std::vector<pid_t> children;
  for (const std::string& file : {a, b, a, b}) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        ImageStore(options().image_store).import_archive(file);
        ::_exit(0);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "import of %s failed: %s\n", file.c_str(), e.what());
        ::_exit(1);
      }
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(store().list().size(), 2u);
  EXPECT_TRUE(fs::is_empty(options().image_store + "/tmp"));
  EXPECT_EQ(sh(create_on("b:1"), "cat b.txt"), "b\n");

  // Progress: the archive read as far as its new layer, every layer counted.
  auto spec_d = spec_b;
  spec_d.layers.back().push_back(img::file("app/d.txt", std::string(1 << 20, 'd')));
  const std::string d = archive("d.tar");
  img::write_oci_archive(d, spec_d, "d:1");
  std::vector<ImageImportProgress> seen;
  store().import_archive(d, "", [&](const ImageImportProgress& p) { seen.push_back(p); });
  ASSERT_FALSE(seen.empty());
  EXPECT_EQ(seen.front().layers_done, 2u);  // two were in the store
  EXPECT_EQ(seen.back().layers_done, 3u);
  EXPECT_EQ(seen.back().layers_total, 3u);
  EXPECT_EQ(seen.back().bytes_total, fs::file_size(d));
  EXPECT_GT(seen.back().bytes_read, 0u);
  for (std::size_t i = 1; i < seen.size(); ++i) EXPECT_GE(seen[i].bytes_read, seen[i - 1].bytes_read);
}

TEST_F(ImageStoreTest, TheCreatesUserAndWorkdirWinOverTheImages) {
  img::write_docker_archive(archive("bb.tar"), img::busybox_spec(img::Compression::none), {"busybox:1"});
  store().import_archive(archive("bb.tar"));
  CreateOptions c;
  c.image = "busybox:1";
  c.user = "root";
  c.workdir = "/srv";
  auto s = create(c);
  EXPECT_EQ(sh(s, "id -u; pwd; ls"), "0\n/srv\na\na-link\nowned\n");
  EXPECT_EQ(s.workdir(), "/srv");
  CreateOptions by_number;
  by_number.image = "busybox:1";
  by_number.user = "4321:4322";
  EXPECT_EQ(sh(create(by_number), "id -u; id -g; pwd"), "4321\n4322\n/app\n");
  // The host image: by number, at the top level.
  CreateOptions host;
  host.user = "2000:3000";
  host.workdir = "/data";
  EXPECT_EQ(sh(create(host), "id -u; id -g; pwd; touch f && ls"), "2000\n3000\n/data\nf\n");

  auto reason = [&](const std::string& image, const std::string& user, const std::string& workdir) {
    CreateOptions o;
    o.image = image;
    o.user = user;
    o.workdir = workdir;
    return reason_of([&] { create(o); });
  };
  EXPECT_EQ(reason("busybox:1", "a:b:c", ""), Reason::INVALID_INPUT);
  EXPECT_EQ(reason("busybox:1", ":1", ""), Reason::INVALID_INPUT);
  EXPECT_EQ(reason("busybox:1", "", "relative"), Reason::INVALID_INPUT);
  EXPECT_EQ(reason("busybox:1", "", "/a/../b"), Reason::INVALID_INPUT);
  EXPECT_EQ(reason("busybox:1", "ghost", ""), Reason::INVALID_CONFIG);
  EXPECT_EQ(reason("busybox:1", "", "/proc"), Reason::INVALID_CONFIG);
  EXPECT_EQ(reason("", "app", ""), Reason::INVALID_CONFIG);
  EXPECT_EQ(reason("", "", "/usr/local/x"), Reason::INVALID_CONFIG);
}

TEST_F(ImageStoreTest, NamesIdsAndWhatAStoreOperationLeaves) {
  // Nothing is made by reading a store that is not there.
  EXPECT_TRUE(store().list().empty());
  EXPECT_EQ(reason_of([&] { store().inspect("none:1"); }), Reason::NOT_FOUND);
  EXPECT_EQ(reason_of([&] { store().remove("none:1"); }), Reason::NOT_FOUND);
  EXPECT_FALSE(fs::exists(options().image_store));

  const std::string path = archive("bb.tar");
  img::write_docker_archive(path, img::busybox_spec(img::Compression::none), {"bb:1", "bb:latest"});
  const auto first = store().import_archive(path);
  const std::string id = first.images[0].second;
  // Again: nothing unpacked, nothing named twice, nothing moved.
  const auto again = store().import_archive(path);
  EXPECT_EQ(again.layers_unpacked, 0u);
  EXPECT_TRUE(again.moved.empty());
  ASSERT_EQ(store().list().size(), 1u);
  EXPECT_EQ(store().list()[0].names, (std::vector<std::string>{"bb:1", "bb:latest"}));
  // By id, whole, with its prefix or by 12 digits; fewer name nothing.
  for (const std::string& by : {id, id.substr(7), id.substr(7, 12)}) EXPECT_EQ(store().inspect(by).id, id) << by;
  EXPECT_EQ(reason_of([&] { store().inspect(id.substr(7, 11)); }), Reason::NOT_FOUND);

  // A name given again moves to the new image, and says so; the old image
  // keeps its other name.
  auto other = img::busybox_spec(img::Compression::none);
  other.env.push_back("WHICH=other");
  img::write_docker_archive(archive("other.tar"), other, {"other:1"});
  const auto moved = store().import_archive(archive("other.tar"), "bb:latest");
  EXPECT_EQ(moved.moved, std::vector<std::string>{"bb:latest"});
  EXPECT_EQ(sh(create_on("bb:latest"), "echo $WHICH"), "other\n");
  EXPECT_EQ(store().inspect("bb:1").names, std::vector<std::string>{"bb:1"});

  // An unknown name removes nothing.
  const auto before = store_snapshot();
  EXPECT_EQ(reason_of([&] { store().remove("bb:2"); }), Reason::NOT_FOUND);
  EXPECT_EQ(store_snapshot(), before);
  // By id: every name of it.
  const auto removed = store().remove(store().inspect("bb:latest").id);
  EXPECT_EQ(removed.names_removed, std::vector<std::string>{"bb:latest"});
  EXPECT_TRUE(removed.image_removed);
  EXPECT_EQ(store().list().size(), 1u);

  // A record the store cannot read keeps its layers: a later removal of
  // another image never takes them.
  img::write_docker_archive(archive("third.tar"), other, {"third:1"});
  store().import_archive(archive("third.tar"));
  const auto layers_before = [&] {
    std::size_t n = 0;
    for (const auto& e : fs::directory_iterator(options().image_store + "/layers")) n += e.is_directory() ? 1 : 0;
    return n;
  }();
  std::ofstream(options().image_store + "/images/" + id.substr(7) + ".json") << "{ not json";
  EXPECT_EQ(reason_of([&] { create_on("bb:1"); }), Reason::INVALID_CONFIG);
  store().remove("third:1");
  std::size_t layers_after = 0;
  for (const auto& e : fs::directory_iterator(options().image_store + "/layers"))
    layers_after += e.is_directory() ? 1 : 0;
  EXPECT_EQ(layers_after, layers_before);
}

TEST_F(ImageStoreTest, ARepeatedLayerATrailingSlashAndAProgressCallbackThatThrows) {
  auto spec = img::busybox_spec(img::Compression::gzip);
  const std::vector<img::Entry> empty = {img::dir("opt")};
  spec.layers.insert(spec.layers.begin() + 1, empty);
  spec.layers.push_back(empty);  // the same diff_id twice, as builders repeat the empty layer
  spec.working_dir = "/app/";
  img::write_oci_archive(archive("repeat.tar"), spec, "repeat:1");
  // A host cancels an import by throwing from its progress callback: the
  // exception comes out as itself, the store as it was.
  struct Stop {};
  EXPECT_THROW(store().import_archive(archive("repeat.tar"), "",
                                      [](const ImageImportProgress& p) {
                                        if (p.bytes_read > 0) throw Stop{};
                                      }),
               Stop);
  EXPECT_TRUE(store().list().empty());
  EXPECT_TRUE(fs::is_empty(options().image_store + "/layers"));
  const auto result = store().import_archive(archive("repeat.tar"));
  EXPECT_EQ(result.layers_unpacked, 4u);
  EXPECT_EQ(sh(create_on("repeat:1"), "pwd; cat hello.txt; ls /opt"), "/app\nhello from the image\nopaque\n");
}

// The contract on an imported image: every conformance entry on a sandbox of
// a BusyBox image from the store (all its applets linked), as an agent host
// would run it on alpine.
std::vector<std::string> stored_image_suite_names() {
  std::vector<std::string> names;
  for (const auto& t : sandbox_conformance()) names.push_back(t.name);
  return names;
}

class StoredImageConformance : public ImageStoreTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(StoredImageConformance, Passes) {
  auto spec = img::busybox_spec(img::Compression::gzip);
  std::vector<img::Entry> applets;
  std::string list;
  {
    FILE* p = ::popen("/bin/busybox --list", "r");
    ASSERT_NE(p, nullptr);
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) list += buf;
    ::pclose(p);
  }
  std::istringstream names(list);
  for (std::string name; std::getline(names, name);) {
    if (!name.empty() && name != "busybox") applets.push_back(img::symlink("usr/bin/" + name, "/bin/busybox"));
  }
  spec.layers.push_back(applets);
  spec.user = "";
  spec.working_dir = "";
  img::write_oci_archive(archive("full.tar"), spec, "busybox:full");
  store().import_archive(archive("full.tar"));
  const auto& suite = sandbox_conformance();
  const auto it =
      std::find_if(suite.begin(), suite.end(), [&](const ConformanceTest& t) { return t.name == GetParam(); });
  ASSERT_NE(it, suite.end());
  limits_.max_sandboxes = 8;  // the disk tests make four of their own
  expect_conformance(it->name, it->run({create_on("busybox:full"), sandboxes()}));
}

INSTANTIATE_TEST_SUITE_P(Conformance, StoredImageConformance, ::testing::ValuesIn(stored_image_suite_names()),
                         [](const ::testing::TestParamInfo<std::string>& param) { return param.param; });

}  // namespace
}  // namespace mayura::testing

namespace mayura::testing {
namespace {

// A store on a file system no sandbox could mount its layers from (ramfs has
// no idmapped mounts on any kernel; tmpfs had none before 6.3) is refused at
// import, naming the reason, with nothing unpacked into it.
TEST_F(ImageStoreTest, AStoreThatCannotBeIdmappedIsRefusedAtImport) {
  // In a mount namespace of the test's own: tests running alongside compare
  // the host's mount table.
  ASSERT_EQ(::unshare(CLONE_NEWNS), 0) << std::strerror(errno);
  ASSERT_EQ(::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), 0) << std::strerror(errno);
  const std::string mount_point = options().state_dir + "-ramfs";
  fs::create_directories(mount_point);
  ASSERT_EQ(::mount("ramfs", mount_point.c_str(), "ramfs", 0, "mode=0700"), 0) << std::strerror(errno);
  const std::string path = archive("busybox-oci.tar");
  img::write_oci_archive(path, img::busybox_spec(img::Compression::none), "busybox:1");
  std::string message;
  EXPECT_EQ(reason_of([&] { ImageStore(mount_point + "/store").import_archive(path); }, &message), Reason::UNSUPPORTED);
  EXPECT_NE(message.find("cannot be mounted with a sandbox's ids"), std::string::npos) << message;
  EXPECT_TRUE(fs::is_empty(mount_point + "/store/layers"));
  EXPECT_FALSE(fs::exists(mount_point + "/store/refs.json"));
  EXPECT_EQ(::umount2(mount_point.c_str(), MNT_DETACH), 0) << std::strerror(errno);
  fs::remove(mount_point);
}

}  // namespace
}  // namespace mayura::testing
