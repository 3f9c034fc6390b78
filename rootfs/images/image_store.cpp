// The store's records, names, removal and collection. Every change is a
// rename or an unlink under the store's lock, so a reader (holding the lock
// shared) sees the store before or after it, never half of it.

#include "mayura/rootfs/image_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "digest.hpp"
#include "mayura/base/random_bytes.hpp"
#include "image_archive.hpp"
#include "store_files.hpp"

namespace mayura::rootfs {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

std::vector<std::string> strings(const json& j, const char* key) {
  std::vector<std::string> out;
  if (auto it = j.find(key); it != j.end() && it->is_array()) {
    for (const auto& s : *it) {
      if (s.is_string()) out.push_back(s.get<std::string>());
    }
  }
  return out;
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool is_hex(const std::string& s) { return s.find_first_not_of("0123456789abcdef") == std::string::npos; }

}  // namespace

namespace store {

std::string random_name(const char* prefix) {
  unsigned char bytes[12];
  if (const int error = random_bytes(bytes, sizeof bytes); error != 0)
    throw ImageError("no random bytes for a name: " + std::string(std::strerror(error)), ImageError::Kind::store);
  return prefix + hex_of(bytes, sizeof bytes);
}

std::optional<std::string> read_small(const std::string& path, std::size_t max) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return std::nullopt;
  std::string out;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
    if (out.size() > max) return std::nullopt;
  }
  return out;
}

void write_atomic(const std::string& tmp_dir, const std::string& path, const std::string& data) {
  const std::string tmp = tmp_dir + "/" + random_name("write-");
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) throw ImageError("the store cannot write " + tmp + ": " + std::strerror(errno), ImageError::Kind::store);
  if (write_all(fd.get(), data.data(), data.size()) != 0 || ::fsync(fd.get()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw ImageError("the store cannot write " + path + ": " + std::strerror(e), ImageError::Kind::store);
  }
  fd.reset();
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    throw ImageError("the store cannot write " + path + ": " + std::strerror(e), ImageError::Kind::store);
  }
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::map<std::string, std::string> read_refs(const std::string& dir) {
  std::map<std::string, std::string> refs;
  const std::string path = dir + "/refs.json";
  if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return refs;
  // Anything but the names as written is an error: an empty answer would
  // let the next collection take every image.
  const auto bytes = read_small(path, 64 << 20);
  if (!bytes) throw ImageError("the store's refs.json cannot be read", ImageError::Kind::store);
  try {
    const json j = parse_bounded_json(*bytes);
    if (!j.is_object()) throw ImageError("the store's refs.json is corrupt", ImageError::Kind::store);
    for (const auto& [k, v] : j.items()) {
      if (!v.is_string() || !is_sha256_digest(v.get<std::string>())) {
        throw ImageError("the store's refs.json is corrupt", ImageError::Kind::store);
      }
      refs[k] = v.get<std::string>();
    }
  } catch (const json::exception&) {
    throw ImageError("the store's refs.json is corrupt", ImageError::Kind::store);
  } catch (const std::length_error&) {
    throw ImageError("the store's refs.json is corrupt", ImageError::Kind::store);
  }
  return refs;
}

void write_refs(const std::string& dir, const std::map<std::string, std::string>& refs) {
  json j = json::object();
  for (const auto& [k, v] : refs) j[k] = v;
  write_atomic(dir + "/tmp", dir + "/refs.json", j.dump(2) + "\n");
}

}  // namespace store

ImageStore::ImageStore(std::string dir) : dir_(std::move(dir)) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  if (dir_.empty() || dir_.front() != '/')
    throw ImageError("the image store must be an absolute path", ImageError::Kind::bad_input);
}

void ImageStore::ensure_dirs() const {
  for (const std::string& d : {dir_, dir_ + "/images", dir_ + "/layers", dir_ + "/tmp"}) {
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) throw ImageError("cannot make the image store " + d + ": " + ec.message(), ImageError::Kind::store);
  }
  // Images are not secret, but the store is the engine's: no host user
  // changes it, and only root walks it.
  ::chmod(dir_.c_str(), 0700);
}

UniqueFd ImageStore::lock(int how) const {
  if (how == LOCK_EX) ensure_dirs();
  UniqueFd fd(::open((dir_ + "/lock").c_str(), (how == LOCK_EX ? O_RDWR | O_CREAT : O_RDONLY) | O_CLOEXEC, 0600));
  if (!fd) {
    if (how != LOCK_EX && errno == ENOENT) return fd;  // no store yet: nothing to read
    throw ImageError("cannot open the image store's lock in " + dir_ + ": " + std::strerror(errno),
                     ImageError::Kind::store);
  }
  while (::flock(fd.get(), how) != 0) {
    if (errno != EINTR)
      throw ImageError("cannot lock the image store: " + std::string(std::strerror(errno)), ImageError::Kind::store);
  }
  return fd;
}

std::optional<StoredImage> ImageStore::load(const std::string& id_hex) const {
  const std::string path = dir_ + "/images/" + id_hex + ".json";
  const auto bytes = store::read_small(path, 64 << 20);
  if (!bytes) {
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return std::nullopt;
    throw ImageError("the store's record of sha256:" + id_hex + " cannot be read", ImageError::Kind::store);
  }
  // Anything but the record as the store wrote it is the store's failure.
  try {
    const json j = parse_bounded_json(*bytes);
    StoredImage image;
    image.id = text(j, "id");
    const json config = j.contains("config") && j["config"].is_object() ? j["config"] : json::object();
    image.env = strings(config, "Env");
    image.working_dir = text(config, "WorkingDir");
    image.user = text(config, "User");
    image.entrypoint = strings(config, "Entrypoint");
    image.cmd = strings(config, "Cmd");
    if (auto ports = config.find("ExposedPorts"); ports != config.end() && ports->is_object()) {
      for (const auto& [port, ignored] : ports->items()) image.exposed_ports.push_back(port);
    }
    if (auto labels = config.find("Labels"); labels != config.end() && labels->is_object()) {
      for (const auto& [k, v] : labels->items()) {
        if (v.is_string()) image.labels[k] = v.get<std::string>();
      }
    }
    image.architecture = text(j, "architecture");
    image.os = text(j, "os");
    image.created = text(j, "created");
    image.imported = text(j, "imported");
    const auto layers = j.find("layers");
    if (!is_sha256_digest(image.id) || layers == j.end() || !layers->is_array()) throw std::invalid_argument("shape");
    for (const auto& l : *layers) {
      StoredLayer layer;
      layer.diff_id = text(l, "diff_id");
      if (!is_sha256_digest(layer.diff_id)) throw std::invalid_argument("diff_id");
      layer.dir = dir_ + "/layers/" + digest_hex(layer.diff_id);
      const auto b = l.find("bytes");
      layer.bytes = b != l.end() && b->is_number_unsigned() ? b->get<std::uint64_t>() : 0;
      image.bytes += layer.bytes;
      image.layers.push_back(std::move(layer));
    }
    return image;
  } catch (const std::exception&) {
    throw ImageError("the store's record of sha256:" + id_hex + " is corrupt", ImageError::Kind::store);
  }
}

std::vector<StoredImage> ImageStore::list() const {
  UniqueFd held = lock(LOCK_SH);
  std::vector<StoredImage> out;
  if (!held) return out;
  std::map<std::string, std::vector<std::string>> names;
  for (const auto& [name, id] : store::read_refs(dir_)) names[id].push_back(name);
  for (const auto& [id, n] : names) {
    if (auto image = load(digest_hex(id))) {
      image->names = n;
      out.push_back(std::move(*image));
    }
  }
  return out;
}

// The id `what` names in `refs`: a name:tag, or an id (sha256:… or a
// prefix of 12 hex digits or more, unique among the named images). Empty
// when nothing matches.
std::string ImageStore::resolve(const std::map<std::string, std::string>& refs, const std::string& what) const {
  if (auto ref = parse_image_reference(what); ref && refs.count(ref->str())) return refs.at(ref->str());
  const std::string hex = what.rfind("sha256:", 0) == 0 ? what.substr(7) : what;
  if (hex.size() < 12 || hex.size() > 64 || !is_hex(hex)) return {};
  std::string id;
  for (const auto& [name, image_id] : refs) {
    if (image_id.compare(7, hex.size(), hex) == 0) {
      if (!id.empty() && id != image_id)
        throw ImageError("'" + what + "' names more than one image", ImageError::Kind::bad_input);
      id = image_id;
    }
  }
  return id;
}

std::optional<StoredImage> ImageStore::find(const std::string& what) const {
  UniqueFd held = lock(LOCK_SH);
  if (!held) return std::nullopt;
  const auto refs = store::read_refs(dir_);
  const std::string id = resolve(refs, what);
  if (id.empty()) return std::nullopt;
  auto image = load(digest_hex(id));
  if (!image) return std::nullopt;
  for (const auto& [name, image_id] : refs) {
    if (image_id == id) image->names.push_back(name);
  }
  return image;
}

std::pair<StoredImage, UniqueFd> ImageStore::acquire(const ImageReference& ref) const {
  // Under the store's lock, shared: no removal runs between finding the
  // image and locking its record.
  const auto missing = [&] {
    return ImageError("image '" + ref.str() + "' is not in the store " + dir_, ImageError::Kind::not_found);
  };
  UniqueFd held = lock(LOCK_SH);
  if (!held) throw missing();
  const auto refs = store::read_refs(dir_);
  const auto it = refs.find(ref.str());
  if (it == refs.end()) throw missing();
  const std::string record = dir_ + "/images/" + digest_hex(it->second) + ".json";
  UniqueFd in_use(::open(record.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!in_use || ::flock(in_use.get(), LOCK_SH) != 0) {
    throw ImageError("the store's record of '" + ref.str() + "' is missing", ImageError::Kind::store);
  }
  auto image = load(digest_hex(it->second));
  if (!image) throw ImageError("the store's record of '" + ref.str() + "' is missing", ImageError::Kind::store);
  for (const auto& layer : image->layers) {
    struct stat st {};
    if (::stat(layer.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      throw ImageError("the store lacks layer " + layer.diff_id + " of '" + ref.str() + "'", ImageError::Kind::store);
    }
  }
  image->names.push_back(ref.str());
  return {std::move(*image), std::move(in_use)};
}

RemoveResult ImageStore::remove(const std::string& what) {
  const auto missing = [&] {
    return ImageError("image '" + what + "' is not in the store " + dir_, ImageError::Kind::not_found);
  };
  if (!find(what)) throw missing();  // without making a store that is not there
  // Resolved again under the lock: an import may have moved the name meanwhile.
  UniqueFd held = lock(LOCK_EX);
  auto refs = store::read_refs(dir_);
  const std::string id = resolve(refs, what);
  if (id.empty()) throw missing();
  RemoveResult result;
  // By name: that name. By id: every name of it.
  const auto ref = parse_image_reference(what);
  if (ref && refs.count(ref->str())) {
    refs.erase(ref->str());
    result.names_removed.push_back(ref->str());
  } else {
    for (auto it = refs.begin(); it != refs.end();) {
      if (it->second == id) {
        result.names_removed.push_back(it->first);
        it = refs.erase(it);
      } else {
        ++it;
      }
    }
  }
  store::write_refs(dir_, refs);
  result.layers_removed = collect_after_commit();
  result.image_removed = ::access((dir_ + "/images/" + digest_hex(id) + ".json").c_str(), F_OK) != 0;
  return result;
}

// After a change is committed: a failed collection leaves garbage for the
// next one, never a failure of what was done.
std::size_t ImageStore::collect_after_commit() noexcept {
  try {
    return collect();
  } catch (...) {
    return 0;
  }
}

// Under the store's lock, held exclusively: drops the records no name and
// no sandbox holds, then the layers no record uses. Returns the layers
// removed. A record it keeps but cannot read stops the layer sweep: its
// layers are not known, so none may go.
std::size_t ImageStore::collect() {
  const auto refs = store::read_refs(dir_);
  std::set<std::string> named;
  for (const auto& [name, id] : refs) named.insert(id);
  std::set<std::string> used_layers;
  std::unique_ptr<DIR, int (*)(DIR*)> images(::opendir((dir_ + "/images").c_str()), ::closedir);
  if (!images) return 0;
  while (const dirent* e = ::readdir(images.get())) {
    const std::string file = e->d_name;
    if (file.size() != 69 || file.compare(64, 5, ".json") != 0) continue;
    const std::string hex = file.substr(0, 64);
    const std::string path = dir_ + "/images/" + file;
    bool keep = named.count("sha256:" + hex) > 0;
    if (!keep) {
      UniqueFd record(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
      // A sandbox running on it holds it shared: it stays until then.
      keep = record && ::flock(record.get(), LOCK_EX | LOCK_NB) != 0;
      if (!keep) ::unlink(path.c_str());
    }
    if (keep) {
      const auto image = load(hex);  // throws if unreadable: no layer sweep then
      if (!image) return 0;
      for (const auto& l : image->layers) used_layers.insert(digest_hex(l.diff_id));
    }
  }
  std::size_t removed = 0;
  std::vector<std::string> trash;
  std::unique_ptr<DIR, int (*)(DIR*)> layers(::opendir((dir_ + "/layers").c_str()), ::closedir);
  while (layers) {
    const dirent* e = ::readdir(layers.get());
    if (!e) break;
    const std::string name = e->d_name;
    if (name.size() != 64 || !is_hex(name) || used_layers.count(name)) continue;
    // Out of the store at once (a rename), deleted after.
    const std::string gone = dir_ + "/tmp/" + store::random_name("trash-");
    if (::rename((dir_ + "/layers/" + name).c_str(), gone.c_str()) == 0) {
      trash.push_back(gone);
      ::unlink((dir_ + "/layers/" + name + ".json").c_str());
      ++removed;
    }
  }
  for (const auto& t : trash) store::remove_tree(t);
  return removed;
}

void ImageStore::sweep_staging() {
  std::unique_ptr<DIR, int (*)(DIR*)> tmp(::opendir((dir_ + "/tmp").c_str()), ::closedir);
  std::vector<std::string> names;
  while (tmp) {
    const dirent* e = ::readdir(tmp.get());
    if (!e) break;
    names.emplace_back(e->d_name);
  }
  for (const auto& name : names) {
    const std::string path = dir_ + "/tmp/" + name;
    if (name.rfind("trash-", 0) == 0 || name.rfind("write-", 0) == 0) {
      store::remove_tree(path);
    } else if (name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0) {
      UniqueFd l(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (l && ::flock(l.get(), LOCK_EX | LOCK_NB) == 0) {
        store::remove_tree(path.substr(0, path.size() - 5));
        ::unlink(path.c_str());
      }
    }
  }
}

namespace {

// What the merged image has at `path`: from the top layer down, the first
// layer that has it, hides it (a whiteout) or hides what is below one of its
// directories (opaque) decides. A symlink or file on the way is `blocked`:
// the path names nothing an engine may rely on.
struct Found {
  bool exists = false;
  bool blocked = false;
  std::string at;  // the host path, when it exists
};

Found lookup(const StoredImage& image, const std::string& path) {
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '/');) {
    if (!p.empty()) parts.push_back(p);
  }
  if (parts.empty() || std::find(parts.begin(), parts.end(), "..") != parts.end()) return {};
  for (auto it = image.layers.rbegin(); it != image.layers.rend(); ++it) {
    std::string at = it->dir;
    bool hidden_below = false;
    for (std::size_t i = 0; i < parts.size(); ++i) {
      at += "/" + parts[i];
      struct stat st {};
      if (::lstat(at.c_str(), &st) != 0) break;
      if (S_ISCHR(st.st_mode) && st.st_rdev == 0) return {};  // a whiteout
      if (i + 1 == parts.size()) return {true, false, at};
      if (!S_ISDIR(st.st_mode)) return {false, true, {}};
      char v = 0;
      if (::lgetxattr(at.c_str(), "user.overlay.opaque", &v, 1) == 1 && v == 'y') hidden_below = true;
    }
    if (hidden_below) return {};
  }
  return {};
}

}  // namespace

std::optional<std::string> read_image_file(const StoredImage& image, const std::string& path, std::size_t max_bytes) {
  const Found found = lookup(image, path);
  struct stat st {};
  if (!found.exists || ::lstat(found.at.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  return store::read_small(found.at, max_bytes);
}

ImagePath image_path(const StoredImage& image, const std::string& path) {
  const Found found = lookup(image, path);
  if (found.blocked) return ImagePath::other;
  if (!found.exists) return ImagePath::missing;
  struct stat st {};
  return ::lstat(found.at.c_str(), &st) == 0 && S_ISDIR(st.st_mode) ? ImagePath::directory : ImagePath::other;
}

namespace {

// The line of a passwd or group file whose first field (or, for a number,
// third) matches `key`.
std::optional<std::vector<std::string>> find_entry(const std::optional<std::string>& file, const std::string& key,
                                                   bool numeric) {
  if (!file) return std::nullopt;
  std::stringstream lines(*file);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> fields;
    std::stringstream fs_(line);
    for (std::string f; std::getline(fs_, f, ':');) fields.push_back(f);
    if (fields.size() < 3) continue;  // name:password:id, then (passwd) gid and more
    if ((!numeric && fields[0] == key) || (numeric && fields[2] == key)) return fields;
  }
  return std::nullopt;
}

std::optional<std::uint32_t> number(const std::string& s) {
  if (s.empty() || s.size() > 10 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const unsigned long long v = std::stoull(s);
  if (v > 0xfffffffeULL) return std::nullopt;
  return static_cast<std::uint32_t>(v);
}

}  // namespace

std::pair<std::uint32_t, std::uint32_t> image_user_ids(const StoredImage& image, const std::string& user) {
  const auto colon = user.find(':');
  const std::string u = user.substr(0, colon);
  const std::string g = colon == std::string::npos ? std::string() : user.substr(colon + 1);
  if (u.empty()) throw ImageError("the image's User '" + user + "' names no user", ImageError::Kind::bad_input);
  const auto passwd = read_image_file(image, "etc/passwd", 4 << 20);
  std::uint32_t uid = 0;
  std::optional<std::uint32_t> gid;
  if (auto n = number(u)) {
    uid = *n;
    if (auto entry = find_entry(passwd, u, true); entry && entry->size() > 3) gid = number((*entry)[3]);
  } else {
    const auto entry = find_entry(passwd, u, false);
    if (!entry) throw ImageError("the image's User '" + u + "' is not in its /etc/passwd", ImageError::Kind::bad_input);
    const auto id = number((*entry)[2]);
    if (!id) throw ImageError("the image's /etc/passwd has a bad uid for '" + u + "'", ImageError::Kind::bad_input);
    uid = *id;
    if (entry->size() > 3) gid = number((*entry)[3]);
  }
  if (!g.empty()) {
    if (auto n = number(g)) {
      gid = *n;
    } else {
      const auto entry = find_entry(read_image_file(image, "etc/group", 4 << 20), g, false);
      if (!entry)
        throw ImageError("the image's group '" + g + "' is not in its /etc/group", ImageError::Kind::bad_input);
      gid = number((*entry)[2]);
      if (!gid) throw ImageError("the image's /etc/group has a bad gid for '" + g + "'", ImageError::Kind::bad_input);
    }
  }
  // A user the image's passwd does not know runs in group 0, as under Docker.
  return {uid, gid.value_or(0)};
}

}  // namespace mayura::rootfs
