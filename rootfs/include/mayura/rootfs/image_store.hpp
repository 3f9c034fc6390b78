#pragma once
// The image store: images imported from archives, their layers unpacked
// once each, by the digest of their content, in one directory.
//
//   <dir>/lock              flock: taken to commit, remove and collect
//   <dir>/refs.json         {"name:tag": "sha256:<image id>"}
//   <dir>/images/<id>.json  an image: its config and layers; a sandbox on
//                           it holds a shared flock of this file
//   <dir>/layers/<diff>/    a layer's tree, as overlayfs reads a lower layer
//   <dir>/layers/<diff>.json
//   <dir>/tmp/              imports in progress, each under a lock of its own
//
// Imports unpack without the lock and commit under it with renames, so two
// processes may import at once and a failed import leaves the store as it
// was. Layers are checked against their digests before they are committed.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mayura/rootfs/image_error.hpp"
#include "mayura/rootfs/image_reference.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::rootfs {

struct StoredLayer {
  std::string diff_id;
  std::string dir;          // the unpacked tree
  std::uint64_t bytes = 0;  // of file contents
};

struct StoredImage {
  std::string id;                   // sha256 of its config
  std::vector<std::string> names;   // name:tag, as stored
  std::vector<StoredLayer> layers;  // bottom first
  std::vector<std::string> env;     // "KEY=value"
  std::string working_dir;
  std::string user;
  std::vector<std::string> entrypoint;
  std::vector<std::string> cmd;
  std::vector<std::string> exposed_ports;  // recorded, not published
  std::map<std::string, std::string> labels;
  std::string architecture;
  std::string os;
  std::string created;   // as the config says
  std::string imported;  // when, RFC 3339
  std::uint64_t bytes = 0;
};

struct ImportProgress {
  std::uint64_t bytes_read = 0;  // of the archive file
  std::uint64_t bytes_total = 0;
  std::size_t layers_done = 0;  // unpacked or found in the store
  std::size_t layers_total = 0;
};

struct ImportResult {
  std::vector<std::pair<std::string, std::string>> images;  // name:tag, id
  std::vector<std::string> moved;                           // names that named another image before
  std::size_t layers_unpacked = 0;
  std::size_t layers_reused = 0;  // already in the store
  std::uint64_t bytes_unpacked = 0;
};

struct RemoveResult {
  std::vector<std::string> names_removed;
  bool image_removed = false;      // false: another name or a running sandbox still holds it
  std::size_t layers_removed = 0;  // layers no other image uses
};

class ImageStore {
 public:
  explicit ImageStore(std::string dir);

  const std::string& dir() const { return dir_; }

  // Imports every image of the archive under the names it carries, or the
  // one image it holds under `name`. A name already taken moves to the new
  // image.
  ImportResult import(const std::string& archive_path, const std::optional<ImageReference>& name,
                      const std::function<void(const ImportProgress&)>& progress = {});

  std::vector<StoredImage> list() const;
  // By name:tag, or by id (sha256:… or a unique prefix of at least 12 hex digits).
  std::optional<StoredImage> find(const std::string& what) const;
  // Removes the name. The image goes with its last name unless a sandbox
  // runs on it (then with the next removal or import after that); its
  // layers go unless another image uses them.
  RemoveResult remove(const std::string& what);

  // The image and a shared lock of it that keeps it (and its layers) in the
  // store for as long as the fd is open.
  std::pair<StoredImage, UniqueFd> acquire(const ImageReference& ref) const;

 private:
  UniqueFd lock(int how) const;
  void ensure_dirs() const;
  std::optional<StoredImage> load(const std::string& id_hex) const;
  std::string resolve(const std::map<std::string, std::string>& refs, const std::string& what) const;
  std::size_t collect();
  std::size_t collect_after_commit() noexcept;
  void sweep_staging();

  std::string dir_;
};

// The uid and gid of an image's User ("name", "uid", "name:group",
// "uid:gid"), looked up in the image's own /etc/passwd and /etc/group.
// Throws ImageError(bad_input) for a user or group the image does not have.
std::pair<std::uint32_t, std::uint32_t> image_user_ids(const StoredImage& image, const std::string& user);

// The file at `path` (relative to the image's root) as the image's layers
// merge it, or nothing; at most `max_bytes`.
std::optional<std::string> read_image_file(const StoredImage& image, const std::string& path, std::size_t max_bytes);
// What the merged image has at `path`: nothing, a directory, or something
// else (a file, or a symlink at it or on the way to it).
enum class ImagePath { missing, directory, other };
ImagePath image_path(const StoredImage& image, const std::string& path);

}  // namespace mayura::rootfs
