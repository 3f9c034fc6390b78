#pragma once
// Container image archives made on the spot, for the image store's tests:
// there is no registry and no Docker here, so the tests build the archives
// `docker save`, skopeo and containerd would give them, byte for byte in the
// parts an importer reads, plus deliberately broken ones.
//
// Everything is deterministic (fixed mtimes, gzip without a timestamp), so a
// digest computed with build_image() is the one the writers put in the
// archive, and two runs give the same bytes.
//
// Call the entry helpers qualified (images::symlink, or through a namespace
// alias): with <unistd.h> included, an unqualified symlink("a", "b") under a
// using-directive would pick ::symlink(2) and not compile. Set options
// member by member: designated initializers leave members out, which the
// project's -Wextra (-Wmissing-field-initializers) rejects.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mayura::testing::images {

// ---------------------------------------------------------------- layers

enum class EntryType { file, dir, symlink, hardlink, char_device, block_device, fifo };
enum class Compression { none, gzip, zstd };

// The time every entry and every JSON document says, unless told otherwise.
inline constexpr std::int64_t kEpoch = 1700000000;  // 2023-11-14T22:13:20Z

// One member of a layer tar.
struct Entry {
  std::string path;  // as it appears in the tar: relative ("bin/sh"), or malicious ("../evil", "/etc/x") on purpose
  EntryType type = EntryType::file;
  std::string contents;     // a file's data
  std::string link_target;  // a symlink's target, or the path of the hardlink's earlier entry in the same layer
  unsigned mode = 0644;     // permission bits with setuid, setgid and sticky (07777); the type comes from `type`
  unsigned uid = 0;
  unsigned gid = 0;
  std::int64_t mtime = kEpoch;
  unsigned dev_major = 0;  // character and block devices
  unsigned dev_minor = 0;
  // A size field larger than `contents`: the tar ends right after the
  // contents, mid-member, with no end-of-archive blocks (a "huge declared
  // size" archive). Only for files, and only on the layer's last entry.
  std::optional<std::uint64_t> declared_size;
};

Entry file(std::string path, std::string contents, unsigned mode = 0644, unsigned uid = 0, unsigned gid = 0);
Entry dir(std::string path, unsigned mode = 0755, unsigned uid = 0, unsigned gid = 0);
Entry symlink(std::string path, std::string target);
Entry hardlink(std::string path, std::string target);
// The overlay whiteout removing `name` from `dir` ("" for the root): an empty
// file "<dir>/.wh.<name>".
Entry whiteout(std::string_view dir, std::string_view name);
// The marker hiding everything lower layers have in `dir`: an empty file
// "<dir>/.wh..wh..opq".
Entry opaque(std::string_view dir);
Entry char_device(std::string path, unsigned major, unsigned minor, unsigned mode = 0666);
Entry block_device(std::string path, unsigned major, unsigned minor, unsigned mode = 0660);
Entry fifo(std::string path, unsigned mode = 0644);

// The layer blob: a tar of the entries (pax, as Go's archive/tar and
// libarchive write it: extended headers only where ustar falls short),
// compressed.
std::string layer_tar(const std::vector<Entry>& entries, Compression compression = Compression::none);
// Any bytes through a compression filter (gzip without a timestamp).
std::string compress(std::string_view bytes, Compression compression);

// Lower-case hex, 64 digits.
std::string sha256_hex(std::string_view bytes);
// "sha256:<hex>".
std::string sha256_digest(std::string_view bytes);

// ---------------------------------------------------------------- images

struct ImageSpec {
  std::vector<std::vector<Entry>> layers;
  Compression compression = Compression::none;
  std::vector<std::string> env;
  std::string working_dir;
  std::string user;
  std::vector<std::string> cmd;
  std::vector<std::string> entrypoint;
  std::string architecture = "amd64";
  std::string os = "linux";
};

// The OCI image config (architecture, os, config{Env, WorkingDir, User,
// Cmd, Entrypoint}, rootfs{layers, diff_ids}, history). Empty fields are
// left out, as Go's omitempty does.
std::string image_config(const ImageSpec& spec);

// One layer as the archives hold it.
struct BuiltLayer {
  std::string tar;         // uncompressed
  std::string blob;        // compressed per the spec
  std::string diff_id;     // sha256:<hex> of tar
  std::string digest;      // sha256:<hex> of blob
  std::string media_type;  // application/vnd.oci.image.layer.v1.tar[+gzip|+zstd]
};

// An image as the writers put it in an archive (without corruption), for the
// digests a test expects to see in the store.
struct BuiltImage {
  std::vector<BuiltLayer> layers;
  std::string config;  // image_config(spec)
  std::string config_digest;
  std::string manifest;  // the OCI image manifest
  std::string manifest_digest;
};
BuiltImage build_image(const ImageSpec& spec);

// ---------------------------------------------------------------- archives

// Damage a test asks for. A layer index counts the image's layers from the
// base (0); with several images (or platforms) in an archive it applies to
// each of them.
struct Corruption {
  // The layer's blob (or layer.tar, its directory kept) is not in the archive.
  std::optional<std::size_t> omit_layer;
  // The blob's middle byte is inverted after its digest was taken: same size,
  // stored under the digest the manifest declares. The classic docker shape
  // names layers by ID, so there it shows only as a diff_id mismatch.
  std::optional<std::size_t> wrong_layer_digest;
  // The config declares a well-formed diff_id that is not the layer tar's;
  // the config's and manifest's own digests are right.
  std::optional<std::size_t> wrong_diff_id;
};

struct Platform {
  std::string os = "linux";
  std::string architecture;
  std::string variant;  // "" for none, "v8" for arm64/v8
};

struct OciOptions {
  // Non-empty: index.json names one image index blob, which lists one
  // manifest per platform (the image's config with that os, architecture and
  // variant), as multi-platform pulls give.
  std::vector<Platform> platforms;
  // With platforms: each platform's image gets one more layer holding
  // "etc/mayura-platform" ("linux/arm64/v8\n"), so a test sees which one an
  // importer took.
  bool platform_marker_layer = false;
  Corruption corrupt;
  Compression outer_compression = Compression::none;  // gzip: `skopeo copy ... oci-archive:` piped through gzip
};

struct OciImage {
  ImageSpec spec;
  // "busybox:1" gives the annotations org.opencontainers.image.ref.name "1"
  // and io.containerd.image.name "busybox:1", as docker 25+, containerd and
  // skopeo write them; no tag gives "latest"; "" gives no annotations.
  std::string ref_name;
};

// An OCI image layout archive: blobs/sha256/<hex> (layers, configs,
// manifests, indexes), index.json, oci-layout. Throws std::runtime_error.
void write_oci_archive(const std::filesystem::path& path, const ImageSpec& spec, std::string_view ref_name,
                       const OciOptions& options = {});
void write_oci_archive(const std::filesystem::path& path, const std::vector<OciImage>& images,
                       const OciOptions& options = {});

struct DockerOptions {
  // A layer met a second time under another layer ID (same bytes, another
  // parent chain) is stored as the symlink "<id2>/layer.tar ->
  // ../<id1>/layer.tar", as docker before 25 does; otherwise it is copied.
  bool shared_layer_symlink = false;
  // The docker 25+ shape: an OCI image layout (blobs/sha256, index.json,
  // oci-layout) plus manifest.json and repositories pointing into blobs/.
  bool oci_layout = false;
  Corruption corrupt;
  Compression outer_compression = Compression::none;  // `docker save | gzip`
};

struct DockerImage {
  ImageSpec spec;
  std::vector<std::string> repo_tags;  // "busybox:1"; may be empty (an image saved by ID)
};

// A `docker save` archive: manifest.json
// [{"Config":"<hex>.json","RepoTags":[...],"Layers":["<id>/layer.tar",...]}],
// repositories, <hex>.json, <id>/{VERSION,json,layer.tar}. Layers use the
// spec's compression (docker's own are uncompressed). Layer directories are
// named by chain, so images sharing base layers store them once. Throws
// std::runtime_error.
void write_docker_archive(const std::filesystem::path& path, const ImageSpec& spec,
                          const std::vector<std::string>& repo_tags, const DockerOptions& options = {});
void write_docker_archive(const std::filesystem::path& path, const std::vector<DockerImage>& images,
                          const DockerOptions& options = {});

// ---------------------------------------------------------------- contents

// A BusyBox root file system over three layers, from the host's
// /bin/busybox and the libraries ldd lists for it:
//  1. base: bin/busybox and applet symlinks, the libraries, etc/passwd (root,
//     app 1234:1234, nobody), etc/group, opt/gone/file, opt/opaque/old{1,2},
//     etc/removed.txt, home/app/secret (1234:1234, 0600), tmp (1777).
//  2. changes: whiteouts of opt/gone and etc/removed.txt, opt/opaque made
//     opaque with opt/opaque/new, usr/bin/suid (04755), usr/bin/sgid (02755),
//     dev/evil-null (char 1,3), dev/evil-sda (block 8,0), srv/owned
//     (1234:1234, 0640), srv/a with its hardlink srv/a-link.
//  3. app: app/hello.txt ("hello from the image\n") and app/run.sh.
// Throws std::runtime_error if the host has no BusyBox.
std::vector<std::vector<Entry>> busybox_layers();
// busybox_layers() with env PATH, GREETING=from-image, SHARED=image; working
// dir /app; user app; cmd /bin/sh; the host's architecture.
ImageSpec busybox_spec(Compression compression);

// Incompressible files (data/blob-NNNN, 4 MiB each, the last one shorter)
// of `bytes` in total, the same for the same seed.
std::vector<Entry> big_layer(std::size_t bytes, std::uint64_t seed = 1);

// Programs of the host (host path, path in the image), each with the
// libraries ldd lists for it at their host paths, and host directories
// whole (directories, files and symlinks, with their modes): a layer that
// carries real programs and the data they read, such as Xvfb and its
// keymaps.
std::vector<Entry> host_files_layer(const std::vector<std::pair<std::string, std::string>>& programs,
                                    const std::vector<std::string>& trees);

// The image architecture of the host ("amd64", "arm64", ...).
std::string host_architecture();

}  // namespace mayura::testing::images
