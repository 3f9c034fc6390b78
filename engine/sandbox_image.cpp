#include "sandbox_image.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "mayura/errors.hpp"
#include "mayura/rootfs/image_store.hpp"

namespace mayura {
namespace {

constexpr std::uint32_t kIdsInside = 65536;  // a sandbox maps ids 0..65535

// An absolute, normal path a tmpfs can be mounted on.
bool usable_dir(const std::string& path) {
  if (path.size() < 2 || path.size() > 1024 || path.front() != '/' || path.back() == '/') return false;
  std::size_t i = 1;
  while (i <= path.size()) {
    const auto slash = path.find('/', i);
    const std::string part = path.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    if (part.empty() || part == "." || part == "..") return false;
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
  if (path.find_first_of(std::string(",:\n\0", 4)) != std::string::npos) return false;
  // The places the engine makes or replaces itself are no working directory.
  if (path.rfind("/.mayura", 0) == 0) return false;
  for (const char* own : {"/etc", "/proc", "/dev", "/sys", "/tmp"}) {
    const std::string o = own;
    if (path == o || path.rfind(o + "/", 0) == 0) return false;
  }
  return true;
}

// "/app/" and "//app" as "/app"; "" as "/" (Docker's default).
std::string normalized(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out.empty() ? std::string("/") : out;
}

void set_user(SandboxImage& out, std::pair<std::uint32_t, std::uint32_t> ids, const std::string& user,
              const std::string& image) {
  if (ids.first >= kIdsInside || ids.second >= kIdsInside) {
    throw SandboxError(Reason::INVALID_CONFIG,
                       "image '" + image + "' would run as " + user + ", an id above the 65535 a sandbox maps");
  }
  out.uid = ids.first;
  out.gid = ids.second;
  const std::string name = user.substr(0, user.find(':'));
  if (name.find_first_not_of("0123456789") != std::string::npos) out.user_name = name;
}

// "UID" or "UID:GID", for images with no passwd of their own to look in.
std::pair<std::uint32_t, std::uint32_t> numeric_user(const std::string& user, const std::string& image) {
  const auto colon = user.find(':');
  const std::string u = user.substr(0, colon);
  const std::string g = colon == std::string::npos ? u : user.substr(colon + 1);
  auto number = [&](const std::string& s) -> std::uint32_t {
    if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) {
      throw SandboxError(Reason::INVALID_CONFIG, "image '" + image + "' takes a user by number only (UID or UID:GID)");
    }
    return static_cast<std::uint32_t>(std::stoul(s));
  };
  return {number(u), number(g)};
}

SandboxImage from_store(const rootfs::ImageReference& ref, rootfs::StoredImage stored, UniqueFd hold,
                        const CreateOptions& create, const NativeOptions& options) {
  SandboxImage out;
  out.image.name = ref.str();
  // A layer listed twice (builders repeat the empty one) is one directory,
  // which an overlay takes once: the topmost place gives the same merge.
  for (auto it = stored.layers.rbegin(); it != stored.layers.rend(); ++it) {
    if (std::find(out.image.layers.begin(), out.image.layers.end(), it->dir) == out.image.layers.end()) {
      out.image.layers.push_back(it->dir);
    }
  }
  std::reverse(out.image.layers.begin(), out.image.layers.end());
  if (out.image.layers.empty()) throw SandboxError(Reason::INVALID_CONFIG, "image '" + ref.str() + "' has no layers");
  out.hold = std::move(hold);
  for (const auto& kv : stored.env) {
    const auto eq = kv.find('=');
    if (eq == 0 || eq == std::string::npos) continue;
    out.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  const std::string working_dir = normalized(stored.working_dir);
  if (!create.workdir.empty()) {
    out.workdir = create.workdir;  // checked by the caller
  } else if (working_dir != "/" && working_dir != options.workdir) {
    if (!usable_dir(working_dir)) {
      throw SandboxError(Reason::INVALID_CONFIG,
                         "image '" + ref.str() + "' has a WorkingDir that cannot be a working directory");
    }
    out.workdir = working_dir;
  }
  // The workdir is a tmpfs over what the image has there: a directory (its
  // files stay visible), or nothing at the top level (the root grows it). A
  // symlink or file, or nothing deeper down (a read-only root grows no new
  // directories), cannot be one.
  const std::string workdir = out.workdir.empty() ? options.workdir : out.workdir;
  const rootfs::ImagePath there = rootfs::image_path(stored, workdir);
  const bool top_level = workdir.find('/', 1) == std::string::npos;
  if (there == rootfs::ImagePath::other || (there == rootfs::ImagePath::missing && !top_level)) {
    throw SandboxError(Reason::INVALID_CONFIG, "image '" + ref.str() + "' has no directory " + workdir +
                                                   " for a working directory (a symlink, a file, or nothing)");
  }
  const std::string user = create.user.empty() ? stored.user : create.user;
  if (!user.empty()) {
    try {
      set_user(out, rootfs::image_user_ids(stored, user), user, ref.str());
    } catch (const rootfs::ImageError& e) {
      throw SandboxError(Reason::INVALID_CONFIG, "image '" + ref.str() + "': " + e.what());
    }
  }
  return out;
}

}  // namespace

SandboxImage resolve_sandbox_image(const CreateOptions& create, const NativeOptions& options) {
  const std::string& image = create.image;
  if (!create.workdir.empty() && !usable_dir(create.workdir)) {
    throw SandboxError(Reason::INVALID_CONFIG, "workdir " + create.workdir + " cannot be a working directory");
  }
  const bool by_name = !image.empty() && image != "host" && image.front() != '/';
  std::string store_said;
  if (by_name) {
    if (const auto ref = rootfs::parse_image_reference(image)) {
      try {
        auto [stored, hold] = rootfs::ImageStore(options.image_store).acquire(*ref);
        return from_store(*ref, std::move(stored), std::move(hold), create, options);
      } catch (const rootfs::ImageError& e) {
        if (e.kind() != rootfs::ImageError::Kind::not_found) {
          throw SandboxError(Reason::INVALID_CONFIG, std::string("image '") + image + "' cannot be used: " + e.what());
        }
        store_said = e.what();
      }
    }
  }
  SandboxImage out;
  try {
    out.image = rootfs::resolve_image(image, options.image_dir);
  } catch (const rootfs::ImageError& e) {
    if (!store_said.empty()) {
      throw SandboxError(Reason::INVALID_CONFIG,
                         store_said + " (nor in " + options.image_dir + "); import it with `mayura-run image import`");
    }
    throw SandboxError(Reason::INVALID_CONFIG, e.what());
  }
  // The host and directory images: a user by number, and a workdir at the
  // top level (their directories are read-only binds that grow none).
  if (!create.user.empty()) {
    const std::string name = out.image.name.empty() ? std::string("host") : out.image.name;
    set_user(out, numeric_user(create.user, name), create.user, name);
  }
  if (!create.workdir.empty()) {
    if (create.workdir.find('/', 1) != std::string::npos) {
      throw SandboxError(
          Reason::INVALID_CONFIG,
          "workdir " + create.workdir + " is below the top level, which only an image from the store allows");
    }
    // The host image's own directories stay the host's, read-only.
    for (const char* own : {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
      if (out.image.host && create.workdir == own) {
        throw SandboxError(Reason::INVALID_CONFIG, "workdir " + create.workdir + " is the host image's own directory");
      }
    }
    out.workdir = create.workdir;
  }
  return out;
}

}  // namespace mayura
