// The image fixture checked from outside: libarchive's reader and GNU tar
// see the archives the writers mean to make, a small verifier walking them
// as an importer would finds nothing wrong in a clean one and exactly the
// damage asked for in a corrupted one.

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "archive_checks.hpp"
#include "image_archives.hpp"

namespace img = mayura::testing::images;
namespace fs = std::filesystem;
using nlohmann::json;
using namespace mayura::testing::images::checks;

namespace {

// ---------------------------------------------------------------- layers

TEST(ImageFixtureLayer, EveryEntryTypeRoundTrips) {
  const std::vector<img::Entry> entries{
      img::dir("d", 01777, 5, 6),
      img::file("d/f", "data", 04755, 1234, 1234),
      img::symlink("d/s", "/etc/passwd"),
      img::hardlink("d/h", "d/f"),
      img::char_device("c", 1, 3),
      img::block_device("b", 8, 1),
      img::fifo("p"),
      img::file("../evil", "outside"),
      img::file("/abs", "absolute"),
      img::whiteout("d", "gone"),
      img::opaque("d"),
      img::whiteout("", "top"),
  };
  const std::vector<Member> m = read_tar(img::layer_tar(entries));
  ASSERT_EQ(m.size(), entries.size());
  EXPECT_EQ(m[0].path, "d/");  // directories end in a slash, as Go's archive/tar writes them
  EXPECT_EQ(m[0].type, AE_IFDIR);
  EXPECT_EQ(m[0].perm, 01777u);
  EXPECT_EQ(m[0].uid, 5);
  EXPECT_EQ(m[0].gid, 6);
  EXPECT_EQ(m[1].type, AE_IFREG);
  EXPECT_EQ(m[1].perm, 04755u);
  EXPECT_EQ(m[1].uid, 1234);
  EXPECT_EQ(m[1].data, "data");
  EXPECT_EQ(m[2].type, AE_IFLNK);
  EXPECT_EQ(m[2].symlink, "/etc/passwd");
  EXPECT_EQ(m[3].hardlink, "d/f");
  EXPECT_EQ(m[3].size, 0);
  EXPECT_EQ(m[4].type, AE_IFCHR);
  EXPECT_EQ(m[4].rdev_major, 1u);
  EXPECT_EQ(m[4].rdev_minor, 3u);
  EXPECT_EQ(m[5].type, AE_IFBLK);
  EXPECT_EQ(m[5].rdev_major, 8u);
  EXPECT_EQ(m[6].type, AE_IFIFO);
  EXPECT_EQ(m[7].path, "../evil");
  EXPECT_EQ(m[8].path, "/abs");
  EXPECT_EQ(m[9].path, "d/.wh.gone");
  EXPECT_EQ(m[10].path, "d/.wh..wh..opq");
  EXPECT_EQ(m[11].path, ".wh.top");
}

TEST(ImageFixtureLayer, CompressedBlobsDecompressToTheTar) {
  const std::vector<img::Entry> entries{img::file("a", std::string(100000, 'a'))};
  const std::string tar = img::layer_tar(entries);
  const std::string gz = img::layer_tar(entries, img::Compression::gzip);
  const std::string zst = img::layer_tar(entries, img::Compression::zstd);
  EXPECT_EQ(gz.substr(0, 2), "\x1f\x8b");
  EXPECT_EQ(zst.substr(0, 4), "\x28\xb5\x2f\xfd");
  EXPECT_LT(gz.size(), tar.size() / 10);
  EXPECT_EQ(decompress(gz), tar);
  EXPECT_EQ(decompress(zst), tar);
  // No gzip timestamp and no padding after the end: the same bytes again.
  EXPECT_EQ(gz.substr(4, 4), std::string(4, '\0'));
  EXPECT_EQ(img::layer_tar(entries, img::Compression::gzip), gz);
  EXPECT_EQ(tar.size() % 512, 0u);
  EXPECT_EQ(tar.size(), 3 * 512 + 100352u) << "header, data in blocks, two end blocks: no 10 KiB record padding";
}

TEST(ImageFixtureLayer, HugeDeclaredSizeStopsMidMember) {
  img::Entry huge = img::file("huge", "only this much");
  huge.declared_size = std::uint64_t{1} << 40;
  const std::string tar = img::layer_tar({img::file("first", "ok"), huge});
  EXPECT_EQ(tar.size(), 512 + 512 + 512 + 14u);

  std::unique_ptr<archive, ReadFree> a(archive_read_new());
  archive_read_support_format_tar(a.get());
  ASSERT_EQ(archive_read_open_memory(a.get(), tar.data(), tar.size()), ARCHIVE_OK);
  archive_entry* e;
  ASSERT_EQ(archive_read_next_header(a.get(), &e), ARCHIVE_OK);
  EXPECT_EQ(read_data(a.get()), "ok");
  ASSERT_EQ(archive_read_next_header(a.get(), &e), ARCHIVE_OK);
  EXPECT_STREQ(archive_entry_pathname(e), "huge");
  EXPECT_EQ(archive_entry_size(e), std::int64_t{1} << 40);
  EXPECT_THROW(read_data(a.get()), std::runtime_error);

  TempDir dir;
  std::ofstream(dir.path / "huge.tar", std::ios::binary) << tar;
  const auto [out, status] = run("tar -tvf " + (dir.path / "huge.tar").string() + " 2>&1");
  EXPECT_NE(status, 0);
  EXPECT_NE(out.find("1099511627776"), std::string::npos) << out;

  EXPECT_THROW(img::layer_tar({huge, img::file("after", "")}), std::logic_error);
}

// ---------------------------------------------------------------- contents

TEST(ImageFixtureContents, BusyboxLayersHoldWhatTheBriefSays) {
  const auto layers = img::busybox_layers();
  ASSERT_EQ(layers.size(), 3u);
  const Members base = by_path(read_tar(img::layer_tar(layers[0])));
  EXPECT_EQ(base.at("bin/busybox").perm, 0755u);
  EXPECT_EQ(base.at("bin/busybox").data, slurp("/bin/busybox"));
  for (const char* applet : {"sh", "ls", "cat", "id", "grep", "readlink", "stat"}) {
    EXPECT_EQ(base.at(std::string("bin/") + applet).symlink, "busybox") << applet;
  }
  // Every library the host's loader resolves is there, at the path ldd says.
  const auto [ldd, status] = run("ldd /bin/busybox");
  if (status == 0) {
    for (const char* lib : {"libc.so.6", "ld-linux"}) {
      bool found = false;
      for (const auto& [path, member] : base) found |= path.find(lib) != std::string::npos && member.type == AE_IFREG;
      EXPECT_TRUE(found) << lib << " in\n" << ldd;
    }
  }
  EXPECT_NE(base.at("etc/passwd").data.find("app:x:1234:1234:app:/home/app:"), std::string::npos);
  EXPECT_EQ(base.at("tmp/").perm, 01777u);
  EXPECT_EQ(base.at("home/app/secret").perm, 0600u);
  EXPECT_EQ(base.at("home/app/secret").uid, 1234);
  EXPECT_TRUE(base.contains("opt/gone/file"));
  EXPECT_TRUE(base.contains("opt/opaque/old2"));
  EXPECT_TRUE(base.contains("etc/removed.txt"));

  const Members changes = by_path(read_tar(img::layer_tar(layers[1])));
  EXPECT_TRUE(changes.contains("opt/.wh.gone"));
  EXPECT_TRUE(changes.contains("etc/.wh.removed.txt"));
  EXPECT_TRUE(changes.contains("opt/opaque/.wh..wh..opq"));
  EXPECT_TRUE(changes.contains("opt/opaque/new"));
  EXPECT_EQ(changes.at("usr/bin/suid").perm, 04755u);
  EXPECT_EQ(changes.at("usr/bin/sgid").perm, 02755u);
  EXPECT_EQ(changes.at("dev/evil-null").type, AE_IFCHR);
  EXPECT_EQ(changes.at("dev/evil-sda").type, AE_IFBLK);
  EXPECT_EQ(changes.at("srv/owned").gid, 1234);
  EXPECT_EQ(changes.at("srv/owned").perm, 0640u);
  EXPECT_EQ(changes.at("srv/a-link").hardlink, "srv/a");

  const Members app = by_path(read_tar(img::layer_tar(layers[2])));
  EXPECT_EQ(app.at("app/hello.txt").data, "hello from the image\n");
  EXPECT_EQ(app.at("app/run.sh").perm, 0755u);

  const img::ImageSpec spec = img::busybox_spec(img::Compression::gzip);
  EXPECT_EQ(spec.user, "app");
  EXPECT_EQ(spec.working_dir, "/app");
  EXPECT_EQ(spec.architecture, img::host_architecture());
}

TEST(ImageFixtureContents, BigLayerIsIncompressibleAndSeeded) {
  const std::size_t bytes = 9 << 20;
  const auto layer = img::big_layer(bytes, 7);
  std::size_t total = 0;
  for (const auto& e : layer) total += e.contents.size();
  EXPECT_EQ(total, bytes);
  EXPECT_EQ(layer.size(), 1 + 3u);  // data/ and 4 + 4 + 1 MiB
  const std::string tar = img::layer_tar(layer);
  EXPECT_GT(img::layer_tar(layer, img::Compression::gzip).size(), tar.size() * 99 / 100);
  EXPECT_EQ(img::layer_tar(img::big_layer(bytes, 7)), tar);
  EXPECT_NE(img::layer_tar(img::big_layer(bytes, 8)), tar);
}

// ---------------------------------------------------------------- OCI

class ImageFixtureOci : public ::testing::TestWithParam<img::Compression> {};

TEST_P(ImageFixtureOci, BlobsMatchTheirDigestsAndDiffIds) {
  TempDir dir;
  const fs::path path = dir.path / "busybox.oci.tar";
  const img::ImageSpec spec = img::busybox_spec(GetParam());
  img::write_oci_archive(path, spec, "busybox:1");
  const Members m = read_archive(path);

  const img::BuiltImage built = img::build_image(spec);
  std::vector<std::string> expected{"blobs/",
                                    "blobs/sha256/",
                                    "index.json",
                                    "oci-layout",
                                    "blobs/sha256/" + hex_of(built.manifest_digest),
                                    "blobs/sha256/" + hex_of(built.config_digest)};
  for (const auto& l : built.layers) expected.push_back("blobs/sha256/" + hex_of(l.digest));
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names(m), expected);

  OciVerifier verifier(m);
  EXPECT_EQ(verifier.problems(), std::vector<std::string>{});
  ASSERT_EQ(verifier.configs.size(), 1u);
  const json& config = verifier.configs[0];
  EXPECT_EQ(config.at("config").at("User"), "app");
  EXPECT_EQ(config.at("config").at("WorkingDir"), "/app");
  EXPECT_EQ(config.at("config").at("Cmd"), json::array({"/bin/sh"}));
  EXPECT_EQ(config.at("config").at("Env").size(), 3u);
  EXPECT_EQ(config.at("rootfs").at("type"), "layers");
  EXPECT_EQ(config.at("history").size(), 3u);

  const json index = json::parse(m.at("index.json").data);
  EXPECT_EQ(index.at("schemaVersion"), 2);
  ASSERT_EQ(index.at("manifests").size(), 1u);
  const json& d = index.at("manifests")[0];
  EXPECT_EQ(d.at("mediaType"), "application/vnd.oci.image.manifest.v1+json");
  EXPECT_EQ(d.at("digest"), built.manifest_digest);
  EXPECT_EQ(d.at("annotations").at("org.opencontainers.image.ref.name"), "1");
  EXPECT_EQ(d.at("annotations").at("io.containerd.image.name"), "busybox:1");
  const json manifest = json::parse(m.at("blobs/sha256/" + hex_of(built.manifest_digest)).data);
  const char* suffix[] = {"", "+gzip", "+zstd"};
  EXPECT_EQ(manifest.at("layers")[0].at("mediaType"),
            std::string("application/vnd.oci.image.layer.v1.tar") + suffix[static_cast<int>(GetParam())]);
  EXPECT_EQ(json::parse(m.at("oci-layout").data).at("imageLayoutVersion"), "1.0.0");
}

INSTANTIATE_TEST_SUITE_P(Compressions, ImageFixtureOci,
                         ::testing::Values(img::Compression::none, img::Compression::gzip, img::Compression::zstd));

TEST(ImageFixtureOciRefs, AnnotationsFollowTheReference) {
  TempDir dir;
  const fs::path path = dir.path / "refs.tar";
  img::write_oci_archive(path, {{small_spec(img::Compression::gzip), "registry.test:5000/team/tool"},
                                {small_spec(img::Compression::zstd), ""}});
  const json index = json::parse(read_archive(path).at("index.json").data);
  ASSERT_EQ(index.at("manifests").size(), 2u);
  EXPECT_EQ(index.at("manifests")[0].at("annotations").at("org.opencontainers.image.ref.name"), "latest");
  EXPECT_EQ(index.at("manifests")[0].at("annotations").at("io.containerd.image.name"), "registry.test:5000/team/tool");
  EXPECT_FALSE(index.at("manifests")[1].contains("annotations"));
}

TEST(ImageFixtureOciRefs, NestedIndexListsEachPlatform) {
  TempDir dir;
  const fs::path path = dir.path / "multi.tar";
  img::OciOptions options;
  options.platforms = {{"linux", "amd64", ""}, {"linux", "arm64", "v8"}};
  options.platform_marker_layer = true;
  img::write_oci_archive(path, small_spec(img::Compression::gzip), "multi:2", options);
  const Members m = read_archive(path);
  OciVerifier verifier(m);
  EXPECT_EQ(verifier.problems(), std::vector<std::string>{});

  const json top = json::parse(m.at("index.json").data).at("manifests");
  ASSERT_EQ(top.size(), 1u);
  EXPECT_EQ(top[0].at("mediaType"), "application/vnd.oci.image.index.v1+json");
  EXPECT_EQ(top[0].at("annotations").at("org.opencontainers.image.ref.name"), "2");
  const json nested = json::parse(m.at("blobs/sha256/" + hex_of(top[0].at("digest"))).data);
  ASSERT_EQ(nested.at("manifests").size(), 2u);
  EXPECT_EQ(nested.at("manifests")[0].at("platform"), json({{"architecture", "amd64"}, {"os", "linux"}}));
  EXPECT_EQ(nested.at("manifests")[1].at("platform").at("variant"), "v8");
  ASSERT_EQ(verifier.configs.size(), 2u);
  EXPECT_EQ(verifier.configs[0].at("architecture"), "amd64");
  EXPECT_EQ(verifier.configs[1].at("architecture"), "arm64");
  // The marker layer is each manifest's last, and says its platform.
  const json arm = json::parse(m.at("blobs/sha256/" + hex_of(nested.at("manifests")[1].at("digest"))).data);
  const std::string marker = m.at("blobs/sha256/" + hex_of(arm.at("layers").back().at("digest"))).data;
  EXPECT_EQ(by_path(read_tar(marker)).at("etc/mayura-platform").data, "linux/arm64/v8\n");
}

// ---------------------------------------------------------------- docker save

TEST(ImageFixtureDocker, ClassicShape) {
  TempDir dir;
  const fs::path path = dir.path / "busybox.docker.tar";
  const img::ImageSpec spec = img::busybox_spec(img::Compression::none);
  img::write_docker_archive(path, spec, {"busybox:1", "busybox:latest"});
  const Members m = read_archive(path);
  EXPECT_EQ(docker_problems(m), std::vector<std::string>{});

  const json manifest = json::parse(m.at("manifest.json").data);
  ASSERT_EQ(manifest.size(), 1u);
  const img::BuiltImage built = img::build_image(spec);
  EXPECT_EQ(manifest[0].at("Config"), hex_of(built.config_digest) + ".json");
  EXPECT_EQ(manifest[0].at("RepoTags"), json::array({"busybox:1", "busybox:latest"}));
  const json& layers = manifest[0].at("Layers");
  ASSERT_EQ(layers.size(), 3u);
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const std::string id = fs::path(layers[i].get<std::string>()).parent_path();
    EXPECT_EQ(m.at(id + "/VERSION").data, "1.0");
    EXPECT_EQ(json::parse(m.at(id + "/json").data).at("id"), id);
    EXPECT_EQ(m.at(id + "/layer.tar").data, built.layers[i].tar);
  }
  const json repositories = json::parse(m.at("repositories").data);
  const std::string top = fs::path(layers[2].get<std::string>()).parent_path();
  EXPECT_EQ(repositories.at("busybox").at("1"), top);
  EXPECT_EQ(repositories.at("busybox").at("latest"), top);
  EXPECT_EQ(m.size(), 3 * 4 + 3u);  // three layer directories of four, config, manifest.json, repositories
}

// Two images on one base: busybox's first two layers, and all three.
std::vector<img::DockerImage> two_images() {
  img::ImageSpec small = img::busybox_spec(img::Compression::none);
  small.layers.pop_back();
  return {{small, {"base:1"}}, {img::busybox_spec(img::Compression::none), {"app:1"}}};
}

std::size_t stored_copies(const Members& m, const std::string& tar) {
  return static_cast<std::size_t>(std::count_if(
      m.begin(), m.end(), [&](const auto& p) { return p.second.type == AE_IFREG && p.second.data == tar; }));
}

TEST(ImageFixtureDocker, SharedBaseLayerIsStoredOnce) {
  TempDir dir;
  const fs::path path = dir.path / "two.tar";
  const auto images = two_images();
  img::write_docker_archive(path, images);
  const Members m = read_archive(path);
  EXPECT_EQ(docker_problems(m), std::vector<std::string>{});
  const json manifest = json::parse(m.at("manifest.json").data);
  ASSERT_EQ(manifest.size(), 2u);
  EXPECT_EQ(manifest[0].at("Layers")[0], manifest[1].at("Layers")[0]);
  // The second layer is the small image's top but not the big one's: another
  // ID, so docker stores it again.
  EXPECT_NE(manifest[0].at("Layers")[1], manifest[1].at("Layers")[1]);
  const auto layers = img::busybox_layers();
  EXPECT_EQ(stored_copies(m, img::layer_tar(layers[0])), 1u);
  EXPECT_EQ(stored_copies(m, img::layer_tar(layers[1])), 2u);
  const json repositories = json::parse(m.at("repositories").data);
  EXPECT_TRUE(repositories.contains("base"));
  EXPECT_TRUE(repositories.contains("app"));
}

TEST(ImageFixtureDocker, RepeatedLayerCanBeASymlink) {
  TempDir dir;
  const fs::path path = dir.path / "two.tar";
  img::DockerOptions options;
  options.shared_layer_symlink = true;
  img::write_docker_archive(path, two_images(), options);
  const Members m = read_archive(path);
  EXPECT_EQ(docker_problems(m), std::vector<std::string>{});
  const json manifest = json::parse(m.at("manifest.json").data);
  const std::string first = manifest[0].at("Layers")[1], second = manifest[1].at("Layers")[1];
  EXPECT_EQ(m.at(second).type, AE_IFLNK);
  EXPECT_EQ(m.at(second).symlink, "../" + first);
  EXPECT_EQ(stored_copies(m, img::layer_tar(img::busybox_layers()[1])), 1u);
}

TEST(ImageFixtureDocker, Docker25Shape) {
  TempDir dir;
  const fs::path path = dir.path / "d25.tar";
  img::DockerOptions options;
  options.oci_layout = true;
  const img::ImageSpec spec = img::busybox_spec(img::Compression::none);
  img::write_docker_archive(path, spec, {"busybox:1"}, options);
  const Members m = read_archive(path);
  EXPECT_EQ(docker_problems(m), std::vector<std::string>{});
  OciVerifier verifier(m);
  EXPECT_EQ(verifier.problems(), std::vector<std::string>{});
  const img::BuiltImage built = img::build_image(spec);
  const json manifest = json::parse(m.at("manifest.json").data);
  EXPECT_EQ(manifest[0].at("Config"), "blobs/sha256/" + hex_of(built.config_digest));
  EXPECT_EQ(manifest[0].at("Layers")[2], "blobs/sha256/" + hex_of(built.layers[2].digest));
  const json index = json::parse(m.at("index.json").data);
  EXPECT_EQ(index.at("manifests")[0].at("annotations").at("io.containerd.image.name"), "busybox:1");
  EXPECT_TRUE(m.contains("repositories"));
  for (const auto& [name, member] : m) EXPECT_FALSE(name.ends_with("/layer.tar")) << name;
}

// ---------------------------------------------------------------- corruption

struct Shape {
  const char* name;
  std::function<void(const fs::path&, const img::Corruption&, img::Compression)> write;
  std::function<std::vector<std::string>(const Members&)> problems;
};

// Designated initializers would be shorter, but GCC's
// -Wmissing-field-initializers counts the members they leave out.
std::vector<Shape> shapes() {
  const auto oci_problems = [](const Members& m) { return OciVerifier(m).problems(); };
  return {
      {"oci",
       [](const fs::path& p, const img::Corruption& c, img::Compression outer) {
         img::OciOptions options;
         options.corrupt = c;
         options.outer_compression = outer;
         img::write_oci_archive(p, small_spec(img::Compression::gzip), "x:1", options);
       },
       oci_problems},
      {"docker",
       [](const fs::path& p, const img::Corruption& c, img::Compression outer) {
         img::DockerOptions options;
         options.corrupt = c;
         options.outer_compression = outer;
         img::write_docker_archive(p, small_spec(img::Compression::none), {"x:1"}, options);
       },
       docker_problems},
      {"docker25",
       [](const fs::path& p, const img::Corruption& c, img::Compression outer) {
         img::DockerOptions options;
         options.oci_layout = true;
         options.corrupt = c;
         options.outer_compression = outer;
         img::write_docker_archive(p, small_spec(img::Compression::none), {"x:1"}, options);
       },
       oci_problems},
  };
}

img::Corruption omit_layer(std::size_t i) {
  img::Corruption c;
  c.omit_layer = i;
  return c;
}
img::Corruption wrong_layer_digest(std::size_t i) {
  img::Corruption c;
  c.wrong_layer_digest = i;
  return c;
}
img::Corruption wrong_diff_id(std::size_t i) {
  img::Corruption c;
  c.wrong_diff_id = i;
  return c;
}

std::vector<std::string> problems_of(const Shape& shape, const img::Corruption& corruption) {
  TempDir dir;
  const fs::path path = dir.path / "a.tar";
  shape.write(path, corruption, img::Compression::none);
  return shape.problems(read_archive(path));
}

TEST(ImageFixtureCorruption, CleanArchivesHaveNoProblems) {
  for (const Shape& shape : shapes()) EXPECT_EQ(problems_of(shape, {}), std::vector<std::string>{}) << shape.name;
}

TEST(ImageFixtureCorruption, OmittedLayerIsMissing) {
  const img::BuiltImage built = img::build_image(small_spec(img::Compression::gzip));
  EXPECT_EQ(problems_of(shapes()[0], omit_layer(1)), std::vector<std::string>{"missing " + built.layers[1].digest});
  const auto docker = problems_of(shapes()[1], omit_layer(1));
  ASSERT_EQ(docker.size(), 1u);
  EXPECT_TRUE(docker[0].starts_with("missing ") && docker[0].ends_with("/layer.tar")) << docker[0];
  EXPECT_EQ(problems_of(shapes()[2], omit_layer(1)).size(), 1u);
}

TEST(ImageFixtureCorruption, WrongLayerDigestKeepsTheSizeButNotTheDigest) {
  const img::BuiltImage gzipped = img::build_image(small_spec(img::Compression::gzip));
  EXPECT_EQ(problems_of(shapes()[0], wrong_layer_digest(2)),
            std::vector<std::string>{"digest mismatch " + gzipped.layers[2].digest});
  const img::BuiltImage plain = img::build_image(small_spec(img::Compression::none));
  EXPECT_EQ(problems_of(shapes()[2], wrong_layer_digest(2)),
            std::vector<std::string>{"digest mismatch " + plain.layers[2].digest});
  // Classic docker has only the diff_id to check a layer by.
  EXPECT_EQ(problems_of(shapes()[1], wrong_layer_digest(2)), std::vector<std::string>{"diff_id mismatch 2"});
}

TEST(ImageFixtureCorruption, WrongDiffIdIsOnlyThatLayers) {
  for (const Shape& shape : shapes()) {
    EXPECT_EQ(problems_of(shape, wrong_diff_id(0)), std::vector<std::string>{"diff_id mismatch 0"}) << shape.name;
  }
}

TEST(ImageFixtureCorruption, OuterGzipHoldsTheSameMembers) {
  for (const Shape& shape : shapes()) {
    TempDir dir;
    shape.write(dir.path / "plain.tar", {}, img::Compression::none);
    shape.write(dir.path / "zipped.tar.gz", {}, img::Compression::gzip);
    EXPECT_EQ(slurp(dir.path / "zipped.tar.gz").substr(0, 2), "\x1f\x8b") << shape.name;
    EXPECT_EQ(decompress(slurp(dir.path / "zipped.tar.gz")), slurp(dir.path / "plain.tar")) << shape.name;
  }
}

// ---------------------------------------------------------------- as others see them

TEST(ImageFixtureGnuTar, ListsEveryArchive) {
  TempDir dir;
  img::ImageSpec spec = img::busybox_spec(img::Compression::gzip);
  img::write_oci_archive(dir.path / "oci.tar", spec, "busybox:1");
  img::OciOptions gzipped;
  gzipped.outer_compression = img::Compression::gzip;
  img::write_oci_archive(dir.path / "oci.tar.gz", spec, "busybox:1", gzipped);
  spec.compression = img::Compression::none;
  img::DockerOptions symlinks;
  symlinks.shared_layer_symlink = true;
  img::write_docker_archive(dir.path / "docker.tar", two_images(), symlinks);
  img::DockerOptions d25;
  d25.oci_layout = true;
  img::write_docker_archive(dir.path / "docker25.tar", spec, {"busybox:1"}, d25);
  for (const char* name : {"oci.tar", "oci.tar.gz", "docker.tar", "docker25.tar"}) {
    const fs::path path = dir.path / name;
    const auto [out, status] = run("tar -tf " + path.string() + " 2>&1");
    EXPECT_EQ(status, 0) << name << ": " << out;
    std::vector<std::string> listed;
    for (std::size_t start = 0, end; (end = out.find('\n', start)) != std::string::npos; start = end + 1) {
      listed.push_back(out.substr(start, end - start));
    }
    std::sort(listed.begin(), listed.end());
    EXPECT_EQ(listed, names(read_archive(path))) << name;
  }
}

TEST(ImageFixture, ArchivesAreReproducible) {
  TempDir dir;
  const img::ImageSpec spec = img::busybox_spec(img::Compression::zstd);
  img::OciOptions gzipped;
  gzipped.outer_compression = img::Compression::gzip;
  img::write_oci_archive(dir.path / "a.tar", spec, "busybox:1", gzipped);
  img::write_oci_archive(dir.path / "b.tar", spec, "busybox:1", gzipped);
  EXPECT_EQ(slurp(dir.path / "a.tar"), slurp(dir.path / "b.tar"));
  // the config an archive holds is the one image_config() gives, which the
  // tests compare stores against
  const img::BuiltImage built = img::build_image(spec);
  const Members m = read_archive(dir.path / "a.tar");
  const auto config = m.find("blobs/sha256/" + hex_of(built.config_digest));
  ASSERT_NE(config, m.end()) << built.config_digest;
  EXPECT_EQ(config->second.data, img::image_config(spec));
}

}  // namespace
