#pragma once
// How the image fixture's self-test reads what the writers made
// (image_archives_test.cpp): members as libarchive sees them, GNU tar's
// listing, and a small verifier walking an archive as an importer would.

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "image_archives.hpp"
#include "tests/support/temp_dir.hpp"

namespace mayura::testing::images::checks {

namespace img = mayura::testing::images;
namespace fs = std::filesystem;
using nlohmann::json;

using mayura::testing::TempDir;

struct Member {
  std::string path;
  mode_t type = 0;
  unsigned perm = 0;
  std::int64_t uid = 0, gid = 0, size = 0;
  unsigned rdev_major = 0, rdev_minor = 0;
  std::string data, symlink, hardlink;
};
using Members = std::map<std::string, Member>;

struct ReadFree {
  void operator()(archive* a) const { archive_read_free(a); }
};

inline std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string read_data(archive* a) {
  std::string data;
  char buffer[65536];
  la_ssize_t n;
  while ((n = archive_read_data(a, buffer, sizeof buffer)) > 0) data.append(buffer, static_cast<std::size_t>(n));
  if (n < 0) throw std::runtime_error(std::string("read data: ") + archive_error_string(a));
  return data;
}

// Every member of a tar, compressed or not, in order.
inline std::vector<Member> read_tar(const std::string& bytes) {
  std::unique_ptr<archive, ReadFree> a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_tar(a.get());
  if (archive_read_open_memory(a.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    throw std::runtime_error(std::string("open: ") + archive_error_string(a.get()));
  }
  std::vector<Member> members;
  archive_entry* e;
  int rc;
  while ((rc = archive_read_next_header(a.get(), &e)) == ARCHIVE_OK) {
    Member m;
    m.path = archive_entry_pathname(e);
    m.type = archive_entry_filetype(e);
    m.perm = archive_entry_perm(e);
    m.uid = archive_entry_uid(e);
    m.gid = archive_entry_gid(e);
    m.size = archive_entry_size(e);
    m.rdev_major = static_cast<unsigned>(archive_entry_rdevmajor(e));
    m.rdev_minor = static_cast<unsigned>(archive_entry_rdevminor(e));
    if (const char* s = archive_entry_symlink(e)) m.symlink = s;
    if (const char* h = archive_entry_hardlink(e)) m.hardlink = h;
    m.data = read_data(a.get());
    members.push_back(std::move(m));
  }
  if (rc != ARCHIVE_EOF) throw std::runtime_error(std::string("next header: ") + archive_error_string(a.get()));
  return members;
}

inline Members by_path(const std::vector<Member>& members) {
  Members m;
  for (const auto& member : members) m[member.path] = member;
  return m;
}

inline Members read_archive(const fs::path& path) { return by_path(read_tar(slurp(path))); }

// A blob as its uncompressed bytes, whatever filter libarchive finds on it.
inline std::string decompress(const std::string& blob) {
  std::unique_ptr<archive, ReadFree> a(archive_read_new());
  archive_read_support_filter_all(a.get());
  archive_read_support_format_raw(a.get());
  archive_read_open_memory(a.get(), blob.data(), blob.size());
  archive_entry* e;
  if (archive_read_next_header(a.get(), &e) != ARCHIVE_OK) throw std::runtime_error("decompress: no data");
  return read_data(a.get());
}

inline std::string hex_of(const std::string& digest) { return digest.substr(7); }

// Walks an OCI layout as an importer would, from index.json through nested
// indexes to manifests, configs and layers, and says what does not hold.
class OciVerifier {
 public:
  explicit OciVerifier(const Members& members) : m_(members) {}

  std::vector<std::string> problems() {
    const auto index = m_.find("index.json");
    if (index == m_.end()) return {"no index.json"};
    if (!m_.contains("oci-layout")) problems_.push_back("no oci-layout");
    walk_index(json::parse(index->second.data));
    return problems_;
  }
  std::vector<json> configs;  // of the manifests reached, in order

 private:
  const std::string* blob(const json& d) {
    const std::string digest = d.at("digest");
    const auto it = m_.find("blobs/sha256/" + hex_of(digest));
    if (it == m_.end()) {
      problems_.push_back("missing " + digest);
      return nullptr;
    }
    // An importer stops at the first check a blob fails.
    if (img::sha256_digest(it->second.data) != digest) {
      problems_.push_back("digest mismatch " + digest);
      return nullptr;
    }
    if (d.at("size").get<std::size_t>() != it->second.data.size()) {
      problems_.push_back("size mismatch " + digest);
      return nullptr;
    }
    return &it->second.data;
  }
  void walk_index(const json& index) {
    for (const json& d : index.at("manifests")) {
      const std::string* bytes = blob(d);
      if (!bytes) continue;
      if (d.at("mediaType") == "application/vnd.oci.image.index.v1+json") {
        walk_index(json::parse(*bytes));
      } else {
        walk_manifest(json::parse(*bytes));
      }
    }
  }
  void walk_manifest(const json& manifest) {
    const std::string* config_bytes = blob(manifest.at("config"));
    if (!config_bytes) return;
    const json config = json::parse(*config_bytes);
    configs.push_back(config);
    const json& layers = manifest.at("layers");
    const json& diff_ids = config.at("rootfs").at("diff_ids");
    if (layers.size() != diff_ids.size()) problems_.push_back("layer count mismatch");
    for (std::size_t i = 0; i < layers.size() && i < diff_ids.size(); ++i) {
      const std::string* layer = blob(layers[i]);
      if (layer && img::sha256_digest(decompress(*layer)) != diff_ids[i]) {
        problems_.push_back("diff_id mismatch " + std::to_string(i));
      }
    }
  }

  const Members& m_;
  std::vector<std::string> problems_;
};

// The same for `docker save` archives: manifest.json to configs and layers,
// through layer symlinks.
inline std::vector<std::string> docker_problems(const Members& m) {
  const auto manifest = m.find("manifest.json");
  if (manifest == m.end()) return {"no manifest.json"};
  std::vector<std::string> problems;
  for (const json& image : json::parse(manifest->second.data)) {
    const std::string config_path = image.at("Config");
    const auto config = m.find(config_path);
    if (config == m.end()) {
      problems.push_back("missing " + config_path);
      continue;
    }
    if (img::sha256_hex(config->second.data) != fs::path(config_path).stem().string()) {
      problems.push_back("config digest mismatch");
    }
    const json diff_ids = json::parse(config->second.data).at("rootfs").at("diff_ids");
    const json& layers = image.at("Layers");
    for (std::size_t i = 0; i < layers.size() && i < diff_ids.size(); ++i) {
      std::string path = layers[i];
      auto layer = m.find(path);
      if (layer != m.end() && layer->second.type == AE_IFLNK) {
        path = (fs::path(path).parent_path() / layer->second.symlink).lexically_normal().string();
        layer = m.find(path);
      }
      if (layer == m.end()) {
        problems.push_back("missing " + path);
        continue;
      }
      // In the docker 25+ shape the layer's name is its digest too.
      if (path.starts_with("blobs/sha256/") && img::sha256_hex(layer->second.data) != fs::path(path).filename()) {
        problems.push_back("digest mismatch " + path);
        continue;
      }
      if (img::sha256_digest(decompress(layer->second.data)) != diff_ids[i]) {
        problems.push_back("diff_id mismatch " + std::to_string(i));
      }
    }
  }
  return problems;
}

// The output and exit status of a shell command.
inline std::pair<std::string, int> run(const std::string& command) {
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(command.c_str(), "r"), pclose);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, p.get())) > 0;) out.append(buffer, n);
  const int status = pclose(p.release());
  return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

inline std::vector<std::string> names(const Members& m) {
  std::vector<std::string> n;
  for (const auto& [path, member] : m) n.push_back(path);
  return n;
}

// A small image with a layer of every kind, quick to write.
inline img::ImageSpec small_spec(img::Compression compression) {
  img::ImageSpec spec;
  spec.layers = {{img::dir("etc"), img::file("etc/base", "base\n")},
                 {img::dir("etc"), img::file("etc/middle", "middle\n"), img::whiteout("etc", "base")},
                 {img::file("top", "top\n", 0600, 1234, 1234)}};
  spec.compression = compression;
  spec.env = {"A=1"};
  spec.cmd = {"/bin/true"};
  return spec;
}

}  // namespace mayura::testing::images::checks
