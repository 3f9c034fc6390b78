// Image configs, manifests, and the archives around them: OCI image layouts
// and the two shapes of `docker save`.

#include <ctime>
#include <list>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "image_archives.hpp"
#include "tar_writer.hpp"

namespace mayura::testing::images {
namespace {

// Insertion order, so the JSON reads like what Docker and skopeo write; the
// bytes are deterministic either way.
using json = nlohmann::ordered_json;

constexpr const char* kIndexType = "application/vnd.oci.image.index.v1+json";
constexpr const char* kManifestType = "application/vnd.oci.image.manifest.v1+json";
constexpr const char* kConfigType = "application/vnd.oci.image.config.v1+json";
constexpr const char* kBlobDir = "blobs/sha256/";

std::string layer_type(Compression compression) {
  switch (compression) {
    case Compression::none: return "application/vnd.oci.image.layer.v1.tar";
    case Compression::gzip: return "application/vnd.oci.image.layer.v1.tar+gzip";
    case Compression::zstd: return "application/vnd.oci.image.layer.v1.tar+zstd";
  }
  throw std::logic_error("image fixture: unknown compression");
}

std::string rfc3339(std::int64_t t) {
  const std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

std::string hex_of(const std::string& digest) { return digest.substr(std::string_view("sha256:").size()); }

json descriptor(std::string_view media_type, const std::string& digest, std::size_t size) {
  return json{{"mediaType", media_type}, {"digest", digest}, {"size", size}};
}

// The config with the diff_ids given, so a corrupted one is written the same
// way as a right one.
std::string config_json(const ImageSpec& spec, const std::vector<std::string>& diff_ids) {
  json config = json::object();
  if (!spec.user.empty()) config["User"] = spec.user;
  if (!spec.env.empty()) config["Env"] = spec.env;
  if (!spec.entrypoint.empty()) config["Entrypoint"] = spec.entrypoint;
  if (!spec.cmd.empty()) config["Cmd"] = spec.cmd;
  if (!spec.working_dir.empty()) config["WorkingDir"] = spec.working_dir;
  json history = json::array();
  for (std::size_t i = 0; i < diff_ids.size(); ++i) {
    history.push_back(
        {{"created", rfc3339(kEpoch)}, {"created_by", "mayura test fixture: layer " + std::to_string(i)}});
  }
  return json{{"architecture", spec.architecture},
              {"os", spec.os},
              {"created", rfc3339(kEpoch)},
              {"config", config},
              {"rootfs", {{"type", "layers"}, {"diff_ids", diff_ids}}},
              {"history", history}}
      .dump();
}

std::vector<BuiltLayer> build_layers(const ImageSpec& spec) {
  std::vector<BuiltLayer> layers;
  for (const auto& entries : spec.layers) {
    BuiltLayer l;
    l.tar = layer_tar(entries, Compression::none);
    l.diff_id = sha256_digest(l.tar);
    l.blob = compress(l.tar, spec.compression);
    l.digest = sha256_digest(l.blob);
    l.media_type = layer_type(spec.compression);
    layers.push_back(std::move(l));
  }
  return layers;
}

BuiltImage build(const ImageSpec& spec, std::optional<std::size_t> wrong_diff_id) {
  BuiltImage image;
  image.layers = build_layers(spec);
  std::vector<std::string> diff_ids;
  for (std::size_t i = 0; i < image.layers.size(); ++i) {
    // A well-formed digest of other bytes: only comparing it with the
    // layer's tar shows it is wrong.
    diff_ids.push_back(i == wrong_diff_id ? sha256_digest(image.layers[i].tar + "not this layer")
                                          : image.layers[i].diff_id);
  }
  image.config = config_json(spec, diff_ids);
  image.config_digest = sha256_digest(image.config);
  json layers = json::array();
  for (const auto& l : image.layers) layers.push_back(descriptor(l.media_type, l.digest, l.blob.size()));
  image.manifest = json{
      {"schemaVersion", 2},
      {"mediaType", kManifestType},
      {"config", descriptor(kConfigType, image.config_digest, image.config.size())},
      {"layers",
       layers}}.dump();
  image.manifest_digest = sha256_digest(image.manifest);
  return image;
}

// The annotations docker 25+, containerd and skopeo put on a tagged image's
// descriptor in index.json.
json ref_annotations(std::string_view ref) {
  if (ref.empty()) return nullptr;
  const std::size_t slash = ref.rfind('/');
  const std::size_t colon = ref.rfind(':');
  const bool tagged = colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash);
  return json{{"io.containerd.image.name", ref},
              {"org.opencontainers.image.ref.name", tagged ? std::string(ref.substr(colon + 1)) : "latest"}};
}

// The blobs of an archive, once each, in the order they were first met.
// Clean blobs are keyed by their digest; a corrupted one keeps the digest
// its clean self had, which is the point of it.
class Blobs {
 public:
  void add(const std::string& digest, std::string bytes) {
    if (seen_.insert(digest).second) blobs_.emplace_back(hex_of(digest), std::move(bytes));
  }
  // The layers of an image as the corruption options say.
  void add_layers(BuiltImage& image, const Corruption& corrupt) {
    for (std::size_t i = 0; i < image.layers.size(); ++i) {
      BuiltLayer& l = image.layers[i];
      if (i == corrupt.omit_layer) {
        seen_.insert(l.digest);  // and not from another image either
        continue;
      }
      add(l.digest, i == corrupt.wrong_layer_digest ? damaged(l.blob) : std::move(l.blob));
    }
  }
  void write(detail::TarWriter& w) const {
    w.add_dir("blobs/");
    w.add_dir(kBlobDir);
    for (const auto& [hex, bytes] : blobs_) w.add_file(kBlobDir + hex, bytes);
  }

  // The same size, another digest.
  static std::string damaged(std::string bytes) {
    if (bytes.empty()) throw std::logic_error("image fixture: an empty blob cannot be damaged");
    bytes[bytes.size() / 2] = static_cast<char>(~bytes[bytes.size() / 2]);
    return bytes;
  }

 private:
  std::set<std::string> seen_;
  std::list<std::pair<std::string, std::string>> blobs_;
};

void add_oci_layout(detail::TarWriter& w) { w.add_file("oci-layout", json{{"imageLayoutVersion", "1.0.0"}}.dump()); }

json index_of(const json& manifests) {
  return json{{"schemaVersion", 2}, {"mediaType", kIndexType}, {"manifests", manifests}};
}

// The descriptor of one image in index.json, its blobs added.
json oci_image(const OciImage& image, const OciOptions& options, Blobs& blobs) {
  json annotations = ref_annotations(image.ref_name);
  const auto add = [&](const ImageSpec& spec) {
    BuiltImage built = build(spec, options.corrupt.wrong_diff_id);
    blobs.add_layers(built, options.corrupt);
    blobs.add(built.config_digest, built.config);
    blobs.add(built.manifest_digest, built.manifest);
    return descriptor(kManifestType, built.manifest_digest, built.manifest.size());
  };
  json d;
  if (options.platforms.empty()) {
    d = add(image.spec);
  } else {
    json manifests = json::array();
    for (const Platform& p : options.platforms) {
      ImageSpec spec = image.spec;
      spec.os = p.os;
      spec.architecture = p.architecture;
      std::string name = p.os + "/" + p.architecture + (p.variant.empty() ? "" : "/" + p.variant);
      if (options.platform_marker_layer) spec.layers.push_back({dir("etc"), file("etc/mayura-platform", name + "\n")});
      json m = add(spec);
      m["platform"] = json{{"architecture", p.architecture}, {"os", p.os}};
      if (!p.variant.empty()) m["platform"]["variant"] = p.variant;
      manifests.push_back(std::move(m));
    }
    const std::string index = index_of(manifests).dump();
    blobs.add(sha256_digest(index), index);
    d = descriptor(kIndexType, sha256_digest(index), index.size());
  }
  if (!annotations.is_null()) d["annotations"] = annotations;
  return d;
}

// "busybox:1" → ("busybox", "1"); a name without a tag is "latest".
std::pair<std::string, std::string> split_tag(const std::string& ref) {
  const std::size_t slash = ref.rfind('/');
  const std::size_t colon = ref.rfind(':');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return {ref, "latest"};
  return {ref.substr(0, colon), ref.substr(colon + 1)};
}

}  // namespace

std::string image_config(const ImageSpec& spec) { return build(spec, std::nullopt).config; }

BuiltImage build_image(const ImageSpec& spec) { return build(spec, std::nullopt); }

void write_oci_archive(const std::filesystem::path& path, const ImageSpec& spec, std::string_view ref_name,
                       const OciOptions& options) {
  write_oci_archive(path, std::vector<OciImage>{{spec, std::string(ref_name)}}, options);
}

void write_oci_archive(const std::filesystem::path& path, const std::vector<OciImage>& images,
                       const OciOptions& options) {
  Blobs blobs;
  json manifests = json::array();
  for (const OciImage& image : images) manifests.push_back(oci_image(image, options, blobs));
  // Blobs first and the small files after them, as docker and skopeo
  // write it: an importer cannot read index.json before the blobs go past.
  detail::TarWriter w(path, options.outer_compression);
  blobs.write(w);
  w.add_file("index.json", index_of(manifests).dump());
  add_oci_layout(w);
  w.finish();
}

void write_docker_archive(const std::filesystem::path& path, const ImageSpec& spec,
                          const std::vector<std::string>& repo_tags, const DockerOptions& options) {
  write_docker_archive(path, std::vector<DockerImage>{{spec, repo_tags}}, options);
}

void write_docker_archive(const std::filesystem::path& path, const std::vector<DockerImage>& images,
                          const DockerOptions& options) {
  const Corruption& corrupt = options.corrupt;
  json manifest = json::array();
  json repositories = json::object();
  json oci_manifests = json::array();
  Blobs blobs;  // the docker 25+ shape
  // The classic shape: layer directories (each written whole at once) and
  // config files, in the order met.
  struct LayerDir {
    std::string id, v1_json;
    std::optional<std::string> tar;      // absent: omitted
    std::optional<std::string> link_to;  // the id whose layer.tar this one links to
  };
  std::list<LayerDir> dirs;
  std::set<std::string> dir_ids;
  std::map<std::string, std::string> stored_at;  // layer digest → the first id holding its layer.tar
  std::list<std::pair<std::string, std::string>> configs;
  std::set<std::string> config_names;

  for (const DockerImage& image : images) {
    BuiltImage built = build(image.spec, corrupt.wrong_diff_id);
    json layer_paths = json::array();
    std::string top;
    if (options.oci_layout) {
      for (const auto& l : built.layers) layer_paths.push_back(kBlobDir + hex_of(l.digest));
      top = built.layers.empty() ? "" : hex_of(built.layers.back().digest);
      blobs.add_layers(built, corrupt);
      blobs.add(built.config_digest, built.config);
      blobs.add(built.manifest_digest, built.manifest);
      const json d = descriptor(kManifestType, built.manifest_digest, built.manifest.size());
      if (image.repo_tags.empty()) oci_manifests.push_back(d);
      for (const std::string& tag : image.repo_tags) {
        json tagged = d;
        tagged["annotations"] = ref_annotations(tag);
        oci_manifests.push_back(std::move(tagged));
      }
    } else {
      // Layer IDs as docker derives them: from the chain below and, on top,
      // the config, so a base shared by two images has one directory and
      // the same bytes over another chain get another one.
      std::string parent, chain;
      for (std::size_t i = 0; i < built.layers.size(); ++i) {
        BuiltLayer& l = built.layers[i];
        chain = i == 0 ? l.diff_id : sha256_digest(chain + " " + l.diff_id);
        const bool is_top = i + 1 == built.layers.size();
        const std::string id = sha256_hex(parent + "\n" + chain + (is_top ? "\n" + built.config_digest : ""));
        layer_paths.push_back(id + "/layer.tar");
        if (dir_ids.insert(id).second) {
          json v1{{"id", id}};
          if (!parent.empty()) v1["parent"] = parent;
          v1["created"] = rfc3339(kEpoch);
          v1["os"] = image.spec.os;
          if (is_top) v1["architecture"] = image.spec.architecture;
          LayerDir d{id, v1.dump(), std::nullopt, std::nullopt};
          if (i == corrupt.omit_layer) {
            // nothing: the directory without its layer.tar
          } else if (const auto it = stored_at.find(l.digest); options.shared_layer_symlink && it != stored_at.end()) {
            d.link_to = it->second;
          } else {
            d.tar = i == corrupt.wrong_layer_digest ? Blobs::damaged(l.blob) : std::move(l.blob);
            stored_at.emplace(l.digest, id);
          }
          dirs.push_back(std::move(d));
        }
        parent = id;
      }
      top = parent;
      const std::string name = hex_of(built.config_digest) + ".json";
      if (config_names.insert(name).second) configs.emplace_back(name, built.config);
    }
    manifest.push_back({{"Config", options.oci_layout ? kBlobDir + hex_of(built.config_digest)
                                                      : hex_of(built.config_digest) + ".json"},
                        {"RepoTags", image.repo_tags},
                        {"Layers", layer_paths}});
    for (const std::string& tag : image.repo_tags) {
      const auto [repo, name] = split_tag(tag);
      repositories[repo][name] = top;
    }
  }

  detail::TarWriter w(path, options.outer_compression);
  if (options.oci_layout) {
    blobs.write(w);
    w.add_file("index.json", index_of(oci_manifests).dump());
    w.add_file("manifest.json", manifest.dump());
    add_oci_layout(w);
  } else {
    for (const LayerDir& d : dirs) {
      w.add_dir(d.id + "/");
      w.add_file(d.id + "/VERSION", "1.0");
      w.add_file(d.id + "/json", d.v1_json);
      if (d.tar) w.add_file(d.id + "/layer.tar", *d.tar);
      if (d.link_to) w.add_symlink(d.id + "/layer.tar", "../" + *d.link_to + "/layer.tar");
    }
    for (const auto& [name, config] : configs) w.add_file(name, config);
    w.add_file("manifest.json", manifest.dump());
  }
  // docker writes `repositories` only when some image has a tag.
  if (!repositories.empty()) w.add_file("repositories", repositories.dump());
  w.finish();
}

}  // namespace mayura::testing::images
