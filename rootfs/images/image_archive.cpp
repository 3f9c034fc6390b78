// Reading the archive's layout and manifests. Every JSON file is bounded,
// every digest that names a blob is checked against the blob's bytes, and a
// name is only ever looked up among the archive's own entries (a symlink of
// the archive, as old `docker save` writes for a repeated layer, resolves to
// another entry or nowhere).

#include "image_archive.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <cstring>
#include <memory>

#include "digest.hpp"
#include "mayura/rootfs/image_error.hpp"

namespace mayura::rootfs {
namespace {

using json = nlohmann::json;

constexpr std::int64_t kCachedFile = 1 << 20;  // small files kept from the listing pass
constexpr std::uint64_t kCacheBudget = 64ull << 20;
constexpr std::int64_t kMaxJson = 16 << 20;  // a manifest, index or config
constexpr std::size_t kMaxEntries = 1 << 20;
constexpr std::size_t kMaxLayers = 128;  // what one message may hand the init (Docker's own bound is 127)
constexpr std::size_t kMaxImages = 64;

using Reader = std::unique_ptr<archive, int (*)(archive*)>;

Reader open_reader(const std::string& path) {
  Reader a(archive_read_new(), archive_read_free);
  if (!a) throw ImageError("out of memory", ImageError::Kind::store);
  // What `docker save | gzip` and friends give, and never a filter that runs a program.
  // A libarchive without one of them built in would run a program instead: refused.
  for (auto support : {archive_read_support_filter_gzip, archive_read_support_filter_zstd,
                       archive_read_support_filter_xz, archive_read_support_filter_bzip2}) {
    if (support(a.get()) != ARCHIVE_OK) {
      throw ImageError("this libarchive lacks a built-in decompressor", ImageError::Kind::store);
    }
  }
  archive_read_support_format_tar(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 20) != ARCHIVE_OK) {
    const char* e = archive_error_string(a.get());
    bad_archive("cannot read " + path + ": " + (e ? e : "not an archive"));
  }
  if (archive_filter_count(a.get()) > 2) bad_archive(path + " is compressed more than once");
  return a;
}

std::string error_of(archive* a) {
  const char* e = archive_error_string(a);
  return e ? e : "unknown error";
}

// "./a/b" -> "a/b"; names with '..' or absolute ones are not the archive's.
std::optional<std::string> clean_name(std::string name) {
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  if (name.empty() || name.front() == '/') return std::nullopt;
  while (!name.empty() && name.back() == '/') name.pop_back();
  std::size_t i = 0;
  while (i <= name.size()) {
    const auto slash = name.find('/', i);
    const std::string part = name.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    if (part == ".." || part.empty() || part == ".") return std::nullopt;
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
  return name;
}

std::string dir_of(const std::string& name) {
  const auto slash = name.rfind('/');
  return slash == std::string::npos ? std::string() : name.substr(0, slash + 1);
}

// A relative link target joined to its entry's directory, '..' taken
// lexically; nothing above the archive's root.
std::optional<std::string> join_link(const std::string& from, const std::string& target) {
  if (target.empty() || target.front() == '/') return std::nullopt;
  std::vector<std::string> parts;
  const std::string whole = dir_of(from) + target;
  std::size_t i = 0;
  while (i <= whole.size()) {
    const auto slash = whole.find('/', i);
    const std::string part = whole.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    if (part == "..") {
      if (parts.empty()) return std::nullopt;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "/") + p;
  return out;
}

}  // namespace

json parse_bounded_json(const std::string& bytes) {
  // Copying and printing a document recurse: no image needs more than a few levels.
  constexpr int kMaxJsonDepth = 64;
  return json::parse(bytes, [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) throw std::length_error("nested too deeply");
    return true;
  });
}

namespace {

json parse_json(const std::string& bytes, const std::string& what) {
  try {
    return parse_bounded_json(bytes);
  } catch (const json::exception&) {
    bad_archive(what + " is not valid JSON");
  } catch (const std::length_error&) {
    bad_archive(what + " is nested more than 64 levels deep");
  }
}

std::string string_field(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool is_index_type(const std::string& type) {
  return type == "application/vnd.oci.image.index.v1+json" ||
         type == "application/vnd.docker.distribution.manifest.list.v2+json";
}

bool is_manifest_type(const std::string& type) {
  return type == "application/vnd.oci.image.manifest.v1+json" ||
         type == "application/vnd.docker.distribution.manifest.v2+json";
}

bool platform_matches(const json& platform) {
  if (!platform.is_object()) return true;
  const std::string os = string_field(platform, "os");
  const std::string arch = string_field(platform, "architecture");
  return (os.empty() || os == "linux") && (arch.empty() || arch == host_architecture());
}

}  // namespace

std::string host_architecture() {
  utsname u{};
  ::uname(&u);
  std::string m = u.machine;
  if (m == "x86_64") return "amd64";
  if (m == "aarch64") return "arm64";
  if (m == "i686" || m == "i386") return "386";
  if (m.rfind("armv", 0) == 0) return "arm";
  if (m == "ppc64le") return "ppc64le";
  if (m == "s390x") return "s390x";
  if (m == "riscv64") return "riscv64";
  return m;
}

ImageArchive::ImageArchive(std::string path) : path_(std::move(path)) {
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0) throw ImageError("no archive at " + path_, ImageError::Kind::bad_input);
  if (!S_ISREG(st.st_mode)) throw ImageError(path_ + " is not a regular file", ImageError::Kind::bad_input);
  file_size_ = static_cast<std::uint64_t>(st.st_size);
  list();
  if (entries_.count("manifest.json")) {
    read_docker(parse_json(file("manifest.json"), "manifest.json"));
  } else if (entries_.count("index.json")) {
    read_oci(parse_json(file("index.json"), "index.json"));
  } else {
    bad_archive("the archive has neither manifest.json nor index.json: it is not a docker save or OCI image archive");
  }
  if (images_.empty()) bad_archive("the archive holds no image for linux/" + host_architecture());
}

void ImageArchive::list() {
  Reader a = open_reader(path_);
  std::uint64_t cached = 0;
  for (;;) {
    archive_entry* e = nullptr;
    const int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) bad_archive("the archive is truncated or corrupt: " + error_of(a.get()));
    const char* raw = archive_entry_pathname(e);
    const auto name = clean_name(raw ? raw : "");
    const auto type = archive_entry_filetype(e);
    if (!name) {
      if (type == AE_IFDIR && raw && (std::strcmp(raw, "./") == 0 || std::strcmp(raw, ".") == 0)) continue;
      bad_archive(std::string("the archive has an entry named '") + (raw ? std::string(raw).substr(0, 200) : "") +
                  "', outside it");
    }
    if (entries_.size() >= kMaxEntries) bad_archive("the archive has too many entries");
    if (type == AE_IFDIR) continue;
    if (entries_.count(*name)) bad_archive("the archive holds '" + *name + "' twice");
    Entry entry;
    if (type == AE_IFREG && !archive_entry_hardlink(e)) {
      entry.regular = true;
      entry.size = archive_entry_size(e);
      if (entry.size <= kCachedFile && cached + static_cast<std::uint64_t>(entry.size) <= kCacheBudget) {
        std::string bytes(static_cast<std::size_t>(entry.size), '\0');
        const la_ssize_t n = bytes.empty() ? 0 : archive_read_data(a.get(), bytes.data(), bytes.size());
        if (n != static_cast<la_ssize_t>(bytes.size())) bad_archive("the archive is truncated in '" + *name + "'");
        cached += bytes.size();
        small_[*name] = std::move(bytes);
      }
    } else if (type == AE_IFLNK || archive_entry_hardlink(e)) {
      const char* target = archive_entry_hardlink(e) ? archive_entry_hardlink(e) : archive_entry_symlink(e);
      const auto joined =
          archive_entry_hardlink(e) ? clean_name(target ? target : "") : join_link(*name, target ? target : "");
      if (!joined) bad_archive("'" + *name + "' links out of the archive");
      entry.link = *joined;
    }
    entries_[*name] = std::move(entry);
  }
  // Reading to the end also proves the archive whole: a truncated one fails here.
}

std::string ImageArchive::resolve(const std::string& name) const {
  std::string at = name;
  for (int hops = 0; hops < 8; ++hops) {
    const auto it = entries_.find(at);
    if (it == entries_.end()) bad_archive("the archive lacks '" + name + "'");
    if (it->second.regular) return at;
    if (it->second.link.empty()) bad_archive("'" + name + "' is not a file of the archive");
    at = it->second.link;
  }
  bad_archive("'" + name + "' is a loop of links");
}

const std::string& ImageArchive::file(const std::string& name) {
  const std::string at = resolve(name);
  if (auto it = small_.find(at); it != small_.end()) return it->second;
  if (entries_.at(at).size > kMaxJson) bad_archive("'" + name + "' is too large for a manifest or config");
  stream({at}, [&](const std::string&, archive* a) {
    std::string bytes(static_cast<std::size_t>(entries_.at(at).size), '\0');
    if (archive_read_data(a, bytes.data(), bytes.size()) != static_cast<la_ssize_t>(bytes.size())) {
      bad_archive("the archive is truncated in '" + at + "'");
    }
    small_[at] = std::move(bytes);
  });
  return small_.at(at);
}

void ImageArchive::stream(const std::set<std::string>& wanted,
                          const std::function<void(const std::string&, archive*)>& take,
                          const std::function<void(std::uint64_t)>& progress) const {
  std::set<std::string> left;
  for (const auto& w : wanted) left.insert(resolve(w));
  Reader a = open_reader(path_);
  while (!left.empty()) {
    archive_entry* e = nullptr;
    const int r = archive_read_next_header(a.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) bad_archive("the archive is truncated or corrupt: " + error_of(a.get()));
    const auto name = clean_name(archive_entry_pathname(e) ? archive_entry_pathname(e) : "");
    if (!name || !left.count(*name)) continue;
    left.erase(*name);
    take(*name, a.get());
    if (progress) progress(static_cast<std::uint64_t>(archive_filter_bytes(a.get(), -1)));
  }
  if (!left.empty()) bad_archive("the archive ended before '" + *left.begin() + "'");
}

ArchiveImage ImageArchive::image_from_config(std::string config_digest, const std::string& bytes) const {
  ArchiveImage image;
  image.config_digest = std::move(config_digest);
  image.config = parse_json(bytes, "the image config");
  if (!image.config.is_object()) bad_archive("the image config is not an object");
  const std::string os = string_field(image.config, "os");
  const std::string arch = string_field(image.config, "architecture");
  if ((!os.empty() && os != "linux") || (!arch.empty() && arch != host_architecture())) {
    throw ImageError("the image is for " + os + "/" + arch + "; this host runs linux/" + host_architecture(),
                     ImageError::Kind::bad_input);
  }
  const json* diff_ids = nullptr;
  if (auto rootfs = image.config.find("rootfs"); rootfs != image.config.end() && rootfs->is_object()) {
    if (auto d = rootfs->find("diff_ids"); d != rootfs->end() && d->is_array()) diff_ids = &*d;
  }
  if (!diff_ids) bad_archive("the image config has no rootfs.diff_ids");
  if (diff_ids->size() > kMaxLayers) bad_archive("the image has more than 128 layers");
  for (const auto& d : *diff_ids) {
    if (!d.is_string() || !is_sha256_digest(d.get<std::string>()))
      bad_archive("the image config has a diff_id that is no sha256 digest");
    ArchiveLayer layer;
    layer.diff_id = d.get<std::string>();
    image.layers.push_back(layer);
  }
  return image;
}

// docker save: [{"Config": "<hex>.json", "RepoTags": [...], "Layers": ["<id>/layer.tar", ...]}]
void ImageArchive::read_docker(const json& manifest) {
  if (!manifest.is_array()) bad_archive("manifest.json is not a list");
  if (manifest.size() > kMaxImages) bad_archive("the archive holds more than 64 images");
  for (const auto& item : manifest) {
    if (!item.is_object()) bad_archive("manifest.json has an entry that is not an object");
    const std::string config_name = string_field(item, "Config");
    if (config_name.empty()) bad_archive("manifest.json has an image without Config");
    const std::string& config_bytes = file(config_name);
    const std::string digest = sha256_digest(config_bytes);
    // The config's name is its digest, in both shapes: <hex>.json or blobs/sha256/<hex>.
    const std::string base =
        config_name.substr(config_name.rfind('/') == std::string::npos ? 0 : config_name.rfind('/') + 1);
    const std::string hex =
        base.size() > 5 && base.compare(base.size() - 5, 5, ".json") == 0 ? base.substr(0, base.size() - 5) : base;
    if (hex.size() == 64 && "sha256:" + hex != digest)
      bad_archive("the config " + config_name + " does not match its digest");
    ArchiveImage image = image_from_config(digest, config_bytes);
    const auto layers = item.find("Layers");
    if (layers == item.end() || !layers->is_array()) bad_archive("manifest.json has an image without Layers");
    if (layers->size() != image.layers.size())
      bad_archive("manifest.json lists " + std::to_string(layers->size()) + " layers where the config has " +
                  std::to_string(image.layers.size()));
    for (std::size_t i = 0; i < layers->size(); ++i) {
      if (!(*layers)[i].is_string()) bad_archive("manifest.json names a layer with something other than a path");
      const std::string name = (*layers)[i].get<std::string>();
      const auto clean = clean_name(name);
      if (!clean) bad_archive("manifest.json names a layer outside the archive: " + name.substr(0, 200));
      image.layers[i].entry = resolve(*clean);
      image.layers[i].size = entries_.at(image.layers[i].entry).size;
      if (clean->rfind("blobs/sha256/", 0) == 0) image.layers[i].blob_digest = "sha256:" + clean->substr(13);
    }
    if (auto tags = item.find("RepoTags"); tags != item.end() && tags->is_array()) {
      for (const auto& t : *tags) {
        if (t.is_string()) image.names.push_back(t.get<std::string>());
      }
    }
    images_.push_back(std::move(image));
  }
}

json ImageArchive::blob_json(const json& descriptor, const char* what) {
  const std::string digest = string_field(descriptor, "digest");
  if (!is_sha256_digest(digest)) bad_archive(std::string("the ") + what + " has no sha256 digest");
  const std::string& bytes = file("blobs/sha256/" + digest_hex(digest));
  if (sha256_digest(bytes) != digest)
    bad_archive(std::string("the ") + what + " " + digest + " does not match its digest");
  if (auto size = descriptor.find("size"); size != descriptor.end() && size->is_number_integer() &&
                                           size->get<std::int64_t>() != static_cast<std::int64_t>(bytes.size())) {
    bad_archive(std::string("the ") + what + " " + digest + " is not the size its descriptor says");
  }
  return parse_json(bytes, std::string("the ") + what);
}

void ImageArchive::add_oci_image(const json& manifest, std::vector<std::string> names) {
  if (images_.size() >= kMaxImages) bad_archive("the archive holds more than 64 images");
  const auto config = manifest.find("config");
  if (config == manifest.end() || !config->is_object()) bad_archive("a manifest has no config");
  const json config_json = blob_json(*config, "config");
  const std::string config_digest = string_field(*config, "digest");
  ArchiveImage image = image_from_config(config_digest, small_.at("blobs/sha256/" + digest_hex(config_digest)));
  const auto layers = manifest.find("layers");
  if (layers == manifest.end() || !layers->is_array()) bad_archive("a manifest has no layers");
  if (layers->size() != image.layers.size())
    bad_archive("a manifest lists " + std::to_string(layers->size()) + " layers where its config has " +
                std::to_string(image.layers.size()));
  for (std::size_t i = 0; i < layers->size(); ++i) {
    const json& layer = (*layers)[i];
    const std::string digest = layer.is_object() ? string_field(layer, "digest") : std::string();
    if (!is_sha256_digest(digest)) bad_archive("a manifest has a layer without a sha256 digest");
    image.layers[i].blob_digest = digest;
    image.layers[i].entry = resolve("blobs/sha256/" + digest_hex(digest));
    image.layers[i].size = entries_.at(image.layers[i].entry).size;
    if (auto size = layer.find("size");
        size != layer.end() && size->is_number_integer() && size->get<std::int64_t>() != image.layers[i].size) {
      bad_archive("the layer " + digest + " is not the size its manifest says");
    }
  }
  image.names = std::move(names);
  images_.push_back(std::move(image));
}

// OCI: index.json lists manifests (or indexes of them, one per platform);
// names come from the annotations containerd, Docker and skopeo write.
void ImageArchive::read_oci(const json& index) {
  if (!index.is_object()) bad_archive("index.json is not an object");
  const auto manifests = index.find("manifests");
  if (manifests == index.end() || !manifests->is_array()) bad_archive("index.json lists no manifests");
  for (const auto& d : *manifests) {
    if (!d.is_object()) bad_archive("index.json has a descriptor that is not an object");
    std::vector<std::string> names;
    if (auto ann = d.find("annotations"); ann != d.end() && ann->is_object()) {
      const std::string full = string_field(*ann, "io.containerd.image.name");
      const std::string ref = string_field(*ann, "org.opencontainers.image.ref.name");
      if (!full.empty()) {
        names.push_back(full);
      } else if (!ref.empty()) {
        names.push_back(ref);  // a tag alone, or a whole name: the store tells them apart
      }
    }
    const std::string type = string_field(d, "mediaType");
    if (is_index_type(type)) {
      const json nested = blob_json(d, "image index");
      const auto list = nested.find("manifests");
      if (list == nested.end() || !list->is_array()) bad_archive("an image index lists no manifests");
      for (const auto& m : *list) {
        if (m.is_object() && is_manifest_type(string_field(m, "mediaType")) && m.contains("platform") &&
            platform_matches(m["platform"])) {
          add_oci_image(blob_json(m, "manifest"), names);
          break;
        }
      }
    } else if (is_manifest_type(type) || type.empty()) {
      if (d.contains("platform") && !platform_matches(d["platform"])) continue;
      add_oci_image(blob_json(d, "manifest"), names);
    }
  }
}

}  // namespace mayura::rootfs
