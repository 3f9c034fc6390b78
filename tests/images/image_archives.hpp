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

}  // namespace mayura::testing::images
