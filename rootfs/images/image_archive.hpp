#pragma once
// An image archive as written by `docker save` (manifest.json, with layers
// as <id>/layer.tar or, since Docker 25, OCI blobs) or as an OCI image
// layout archive (index.json, blobs/sha256/…), read with libarchive: the
// archive itself may be compressed, layers may be tar, gzip or zstd.
//
// Reading never unpacks: it lists the entries, reads the small JSON files
// it needs (checking every digest that names them), and then streams the
// layers the caller asks for, in archive order.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mayura/rootfs/image_error.hpp"

struct archive;

namespace mayura::rootfs {

// An archive that is not an image, or not a whole one: why.
[[noreturn]] inline void bad_archive(const std::string& why) { throw ImageError(why, ImageError::Kind::bad_archive); }

struct ArchiveLayer {
  std::string entry;        // the entry holding the blob
  std::string blob_digest;  // the digest of the blob as stored, when the archive names one
  std::string diff_id;      // the digest of the uncompressed tar (the config's rootfs.diff_ids)
  std::int64_t size = 0;    // of the blob
};

struct ArchiveImage {
  std::vector<std::string> names;  // as the archive names it (RepoTags, annotations); may be empty
  std::string config_digest;       // the image id
  nlohmann::json config;
  std::vector<ArchiveLayer> layers;  // bottom first
};

class ImageArchive {
 public:
  // Lists the archive and reads its manifests. Throws ImageError(bad_archive)
  // for anything malformed, missing or not matching its digest.
  explicit ImageArchive(std::string path);

  const std::vector<ArchiveImage>& images() const { return images_; }
  std::uint64_t file_size() const { return file_size_; }

  // Calls `take(entry, reader, bytes_read)` for each entry in `wanted`, in
  // the archive's order, with `reader` positioned at its data; `bytes_read`
  // tells how much of the archive file has been read so far.
  void stream(const std::set<std::string>& wanted,
              const std::function<void(const std::string& entry, archive* reader)>& take,
              const std::function<void(std::uint64_t bytes_read)>& progress = {}) const;

 private:
  struct Entry {
    bool regular = false;
    std::string link;  // a symlink's target, resolved to an entry name
    std::int64_t size = 0;
  };

  void list();
  std::string resolve(const std::string& name) const;
  const std::string& file(const std::string& name);
  void read_docker(const nlohmann::json& manifest);
  void read_oci(const nlohmann::json& index);
  nlohmann::json blob_json(const nlohmann::json& descriptor, const char* what);
  void add_oci_image(const nlohmann::json& manifest, std::vector<std::string> names);
  ArchiveImage image_from_config(std::string config_digest, const std::string& config_bytes) const;

  std::string path_;
  std::uint64_t file_size_ = 0;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> small_;  // contents of the small files read so far
  std::vector<ArchiveImage> images_;
};

// JSON, refusing documents nested more than 64 levels (throws
// json::exception or std::length_error).
nlohmann::json parse_bounded_json(const std::string& bytes);

// The host's architecture in OCI's words (amd64, arm64, …).
std::string host_architecture();

}  // namespace mayura::rootfs
