// Importing an archive: read its manifests, unpack each layer the store
// lacks into a staging directory of its own (hashing the blob as stored and
// the tar as unpacked, in the same pass), check both digests, then commit
// everything under the store's lock with renames.
//
// Each layer runs through three libarchive readers: the archive's entry,
// a raw reader that undoes gzip or zstd, and the tar reader the unpacker
// walks. Each hands bytes to the next through a pull callback that hashes
// them on the way.

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <ctime>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "digest.hpp"
#include "idmap_probe.hpp"
#include "image_archive.hpp"
#include "layer_unpack.hpp"
#include "mayura/rootfs/image_store.hpp"
#include "store_files.hpp"

namespace mayura::rootfs {
namespace {

using json = nlohmann::json;
using Reader = std::unique_ptr<archive, int (*)(archive*)>;

[[noreturn]] void store_failed(const std::string& what, int error) {
  throw ImageError(what + ": " + std::strerror(error), ImageError::Kind::store);
}

struct Pull {
  archive* from;
  Sha256* hash;
  std::vector<char> buffer = std::vector<char>(1 << 20);
  std::function<void()> tick;  // after each block
  // What the tick threw: an exception must not unwind through libarchive's
  // C frames, so it waits here until the C call has returned.
  std::exception_ptr thrown;
};

la_ssize_t pull(archive* self, void* client, const void** out) {
  auto* p = static_cast<Pull*>(client);
  const la_ssize_t n = archive_read_data(p->from, p->buffer.data(), p->buffer.size());
  if (n < 0) {
    const char* e = archive_error_string(p->from);
    archive_set_error(self, EIO, "%s", e ? e : "the stream below failed");
    return -1;
  }
  if (p->hash) p->hash->update(p->buffer.data(), static_cast<std::size_t>(n));
  if (p->tick) {
    try {
      p->tick();
    } catch (...) {
      p->thrown = std::current_exception();
      archive_set_error(self, ECANCELED, "stopped by the progress callback");
      return -1;
    }
  }
  *out = p->buffer.data();
  return n;
}

// Reads what is left of a stream, hashing it, up to `limit` bytes.
void drain(Pull& p, std::uint64_t limit, const char* what) {
  std::uint64_t total = 0;
  for (;;) {
    const la_ssize_t n = archive_read_data(p.from, p.buffer.data(), p.buffer.size());
    if (n == 0) return;
    total += n > 0 ? static_cast<std::uint64_t>(n) : 0;
    if (total > limit)
      bad_archive(std::string("the layer has more than ") + std::to_string(limit >> 20) + " MiB " + what);
    if (n < 0) {
      const char* e = archive_error_string(p.from);
      bad_archive(std::string("the layer is truncated or corrupt: ") + (e ? e : "read failed"));
    }
    if (p.hash) p.hash->update(p.buffer.data(), static_cast<std::size_t>(n));
  }
}

struct Unpacked {
  LayerStats stats;
  std::string blob_digest;
  std::string diff_id;
};

Unpacked unpack_through(Pull& blob, Sha256& tar_hash, int dir) {
  Reader raw(archive_read_new(), archive_read_free);
  // Only what layers are made of, and never a filter that runs a program.
  if (archive_read_support_filter_gzip(raw.get()) != ARCHIVE_OK ||
      archive_read_support_filter_zstd(raw.get()) != ARCHIVE_OK) {
    throw ImageError("this libarchive lacks a built-in gzip or zstd", ImageError::Kind::store);
  }
  archive_read_support_format_raw(raw.get());
  archive_entry* e = nullptr;
  if (archive_read_open(raw.get(), &blob, nullptr, pull, nullptr) != ARCHIVE_OK ||
      archive_read_next_header(raw.get(), &e) != ARCHIVE_OK) {
    const char* err = archive_error_string(raw.get());
    bad_archive(std::string("the layer is not a tar, gzip or zstd stream: ") + (err ? err : "empty"));
  }
  // An uncompressed layer passes through the raw reader byte for byte: its
  // blob digest is its tar's, and one hash of it is enough.
  const int filters = archive_filter_count(raw.get());
  // One compression at most: a gzip of a gzip is a bomb, not a layer.
  if (filters > 2) bad_archive("the layer is compressed more than once");
  const bool plain = filters == 1 && archive_filter_code(raw.get(), 0) == ARCHIVE_FILTER_NONE;
  if (plain) blob.hash = nullptr;
  Pull tar{raw.get(), &tar_hash, std::vector<char>(1 << 20), {}, nullptr};
  Reader t(archive_read_new(), archive_read_free);
  archive_read_support_format_tar(t.get());
  if (archive_read_open(t.get(), &tar, nullptr, pull, nullptr) != ARCHIVE_OK) {
    const char* err = archive_error_string(t.get());
    bad_archive(std::string("the layer is not a tar: ") + (err ? err : "unreadable"));
  }
  Unpacked out;
  out.stats = unpack_layer(t.get(), dir, UnpackLimits{});
  // The digests cover every byte, the tar's padding after its end included
  // (a few blocks in real layers), and whatever follows the compressed
  // stream in the blob (bounded by the archive's entry).
  drain(tar, 16ull << 20, "after the end of its tar");
  drain(blob, ~0ull, "");
  out.diff_id = tar_hash.digest();
  out.blob_digest = plain ? out.diff_id : blob.hash->digest();
  return out;
}

// One layer from the archive's entry into `dir`, both digests taken. What
// the progress callback throws comes out as itself.
Unpacked unpack_blob(archive* entry_reader, int dir, const std::function<void()>& tick) {
  Sha256 blob_hash;
  Sha256 tar_hash;
  Pull blob{entry_reader, &blob_hash, std::vector<char>(1 << 20), tick, nullptr};
  try {
    return unpack_through(blob, tar_hash, dir);
  } catch (...) {
    if (blob.thrown) std::rethrow_exception(blob.thrown);
    throw;
  }
}

std::string now_rfc3339() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

json record_of(const ArchiveImage& image, const std::vector<std::uint64_t>& bytes) {
  json config = json::object();
  if (auto c = image.config.find("config"); c != image.config.end() && c->is_object()) {
    for (const char* key : {"Env", "WorkingDir", "User", "Entrypoint", "Cmd", "ExposedPorts", "Labels", "StopSignal"}) {
      if (auto v = c->find(key); v != c->end() && !v->is_null()) config[key] = *v;
    }
  }
  json layers = json::array();
  for (std::size_t i = 0; i < image.layers.size(); ++i) {
    layers.push_back({{"diff_id", image.layers[i].diff_id}, {"bytes", bytes[i]}});
  }
  auto text = [&](const char* key) {
    auto it = image.config.find(key);
    return it != image.config.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  return {{"id", image.config_digest}, {"architecture", text("architecture")},
          {"os", text("os")},          {"created", text("created")},
          {"imported", now_rfc3339()}, {"config", config},
          {"layers", layers}};
}

// The archive's names for an image; an OCI ref.name that is only a tag names nothing by itself.
std::vector<ImageReference> names_of(const ArchiveImage& image) {
  constexpr std::size_t kMaxNames = 64;
  if (image.names.size() > kMaxNames) bad_archive("the archive gives an image more than 64 names");
  std::vector<ImageReference> out;
  for (const auto& n : image.names) {
    if (n.find(':') == std::string::npos && n.find('/') == std::string::npos) continue;
    if (auto ref = parse_image_reference(n)) out.push_back(*ref);
  }
  return out;
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

ImportResult ImageStore::import(const std::string& archive_path, const std::optional<ImageReference>& name,
                                const std::function<void(const ImportProgress&)>& progress) {
  // A store no sandbox could run from says so now, not at the first run.
  ensure_dirs();
  if (const int error = idmap_error(dir_ + "/layers")) {
    throw ImageError("the image store " + dir_ + " is on a file system that cannot be mounted with a sandbox's ids (" +
                         std::strerror(error) + "); put it on ext4, xfs or btrfs (MAYURA_IMAGE_STORE)",
                     ImageError::Kind::unsupported);
  }
  const ImageArchive archive(archive_path);
  const auto& images = archive.images();
  std::vector<std::vector<ImageReference>> names(images.size());
  if (name) {
    if (images.size() != 1) {
      throw ImageError("the archive holds " + std::to_string(images.size()) +
                           " images; import it without a NAME to keep their own names",
                       ImageError::Kind::bad_input);
    }
    names[0] = {*name};
  } else {
    for (std::size_t i = 0; i < images.size(); ++i) {
      names[i] = names_of(images[i]);
      if (names[i].empty())
        throw ImageError("the archive does not name its image; give NAME[:TAG]", ImageError::Kind::bad_input);
    }
  }

  // The staging directory lives while its lock is held: a sweep by another
  // import takes only those whose importer died. Both are made under the
  // store's lock, so no sweep sees the lock file before it is held.
  const std::string staging = dir_ + "/tmp/" + store::random_name("import-");
  UniqueFd staging_lock;
  struct Cleanup {
    std::string dir;
    bool armed = false;
    ~Cleanup() {
      if (!armed) return;
      store::remove_tree(dir);
      ::unlink((dir + ".lock").c_str());
    }
  } cleanup{staging};
  {
    UniqueFd held = lock(LOCK_EX);
    sweep_staging();
    staging_lock = UniqueFd(::open((staging + ".lock").c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!staging_lock || ::flock(staging_lock.get(), LOCK_EX) != 0)
      store_failed("cannot start an import in " + dir_, errno);
    cleanup.armed = true;
    if (::mkdir(staging.c_str(), 0700) != 0) store_failed("cannot make " + staging, errno);
  }

  // What the store lacks, by entry; a layer shared by images is unpacked once.
  ImportResult result;
  std::map<std::string, const ArchiveLayer*> todo;
  std::set<std::string> all_layers;
  for (const auto& image : images) {
    for (const auto& layer : image.layers) {
      if (!all_layers.insert(layer.diff_id).second) continue;
      if (is_dir(dir_ + "/layers/" + digest_hex(layer.diff_id))) {
        ++result.layers_reused;
        continue;
      }
      auto [it, fresh] = todo.emplace(layer.entry, &layer);
      if (!fresh && it->second->diff_id != layer.diff_id)
        bad_archive("the blob " + layer.entry + " is given two different diff_ids");
    }
  }

  ImportProgress shown;
  shown.bytes_total = archive.file_size();
  shown.layers_total = all_layers.size();
  shown.layers_done = result.layers_reused;
  if (progress) progress(shown);
  std::set<std::string> entries;
  for (const auto& [entry, layer] : todo) entries.insert(entry);
  std::map<std::string, std::uint64_t> layer_bytes;
  archive.stream(
      entries,
      [&](const std::string& entry, struct archive* reader) {
        const ArchiveLayer& layer = *todo.at(entry);
        const std::string hex = digest_hex(layer.diff_id);
        const std::string out = staging + "/" + hex;
        if (::mkdir(out.c_str(), 0755) != 0) store_failed("cannot make " + out, errno);
        UniqueFd dir(::open(out.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (!dir) store_failed("cannot open " + out, errno);
        std::uint64_t ticks = 0;
        Unpacked got;
        try {
          got = unpack_blob(reader, dir.get(), [&] {
            if (progress && (++ticks % 4) == 0) {
              shown.bytes_read = static_cast<std::uint64_t>(archive_filter_bytes(reader, -1));
              progress(shown);
            }
          });
        } catch (const ImageError& e) {
          if (e.kind() != ImageError::Kind::bad_archive) throw;
          bad_archive("layer " + entry + ": " + e.what());
        }
        if (!layer.blob_digest.empty() && got.blob_digest != layer.blob_digest) {
          bad_archive("layer " + entry + " does not match its digest: it is " + got.blob_digest +
                      ", the manifest says " + layer.blob_digest);
        }
        if (got.diff_id != layer.diff_id) {
          bad_archive("layer " + entry + " does not match its diff_id: its tar is " + got.diff_id +
                      ", the config says " + layer.diff_id);
        }
        const json meta = {{"diff_id", layer.diff_id},
                           {"bytes", got.stats.bytes},
                           {"entries", got.stats.entries},
                           {"dropped", got.stats.dropped},
                           {"cleared", got.stats.cleared}};
        store::write_atomic(staging, staging + "/" + hex + ".json", meta.dump() + "\n");
        layer_bytes[layer.diff_id] = got.stats.bytes;
        ++result.layers_unpacked;
        result.bytes_unpacked += got.stats.bytes;
        ++shown.layers_done;
        if (progress) progress(shown);
      },
      [&](std::uint64_t read) {
        shown.bytes_read = read;
        if (progress) progress(shown);
      });

  // Commit: layers, then records, then names, all under the lock.
  UniqueFd held = lock(LOCK_EX);
  for (const auto& [diff_id, bytes] : layer_bytes) {
    const std::string hex = digest_hex(diff_id);
    const std::string target = dir_ + "/layers/" + hex;
    // Another import may have committed the same layer meanwhile: theirs stays.
    if (::rename((staging + "/" + hex).c_str(), target.c_str()) == 0) {
      ::rename((staging + "/" + hex + ".json").c_str(), (target + ".json").c_str());
    } else if (errno != EEXIST && errno != ENOTEMPTY) {
      store_failed("cannot commit layer " + diff_id, errno);
    }
  }
  auto refs = store::read_refs(dir_);
  for (std::size_t i = 0; i < images.size(); ++i) {
    const ArchiveImage& image = images[i];
    std::vector<std::uint64_t> bytes;
    for (const auto& layer : image.layers) {
      if (!is_dir(dir_ + "/layers/" + digest_hex(layer.diff_id))) {
        throw ImageError("layer " + layer.diff_id + " was removed from the store during the import; import again",
                         ImageError::Kind::store);
      }
      if (auto it = layer_bytes.find(layer.diff_id); it != layer_bytes.end()) {
        bytes.push_back(it->second);
      } else {
        std::uint64_t b = 0;
        if (auto meta = store::read_small(dir_ + "/layers/" + digest_hex(layer.diff_id) + ".json", 1 << 20)) {
          try {
            b = json::parse(*meta).value("bytes", std::uint64_t{0});
          } catch (const json::exception&) {
          }
        }
        bytes.push_back(b);
      }
    }
    const std::string record = dir_ + "/images/" + digest_hex(image.config_digest) + ".json";
    if (::access(record.c_str(), F_OK) != 0) {
      store::write_atomic(dir_ + "/tmp", record, record_of(image, bytes).dump(2) + "\n");
    }
    for (const auto& ref : names[i]) {
      auto& id = refs[ref.str()];
      if (!id.empty() && id != image.config_digest) result.moved.push_back(ref.str());
      id = image.config_digest;
      result.images.emplace_back(ref.str(), image.config_digest);
    }
  }
  store::write_refs(dir_, refs);
  collect_after_commit();  // images whose names moved to these
  return result;
}

}  // namespace mayura::rootfs
