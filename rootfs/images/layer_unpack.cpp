// The unpacking of one layer, entry by entry. Every name is resolved below
// the layer's directory with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS):
// a real image never reaches a path through a symlink of its own layer
// (tar records real paths), so a layer that tries is refused rather than
// followed.

#include "layer_unpack.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "mayura/rootfs/image_error.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::rootfs {
namespace {

constexpr std::string_view kWhiteout = ".wh.";
constexpr std::string_view kOpaque = ".wh..wh..opq";
constexpr std::size_t kMaxDepth = 256;

[[noreturn]] void bad(const std::string& path, const std::string& why) {
  throw ImageError("layer entry '" + path.substr(0, 200) + "': " + why, ImageError::Kind::bad_archive);
}

[[noreturn]] void failed(const std::string& path, const char* step, int error) {
  // The disk, not the archive: ENOSPC, EDQUOT, EIO.
  throw ImageError("unpacking '" + path.substr(0, 200) + "': " + step + ": " + std::strerror(error),
                   ImageError::Kind::store);
}

// "./a//b/" -> {"a", "b"}; refuses '..' anywhere.
std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t i = 0;
  while (i <= path.size()) {
    const auto slash = path.find('/', i);
    const std::string part = path.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
    if (part == "..") bad(path, "a path with '..' is refused");
    if (!part.empty() && part != ".") parts.push_back(part);
    if (slash == std::string::npos) break;
    i = slash + 1;
  }
  if (parts.size() > kMaxDepth) bad(path, "nested deeper than 256 directories");
  return parts;
}

std::string join(const std::vector<std::string>& parts, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    if (i) out += '/';
    out += parts[i];
  }
  return out.empty() ? std::string(".") : out;
}

int open_beneath(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<__u64>(flags | O_CLOEXEC | O_NOFOLLOW);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;
  return static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
}

// Removes `name` in `dir`, a whole tree if it is a directory.
void remove_entry(int dir, const std::string& name, const std::string& shown) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    UniqueFd sub(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) failed(shown, "opening a directory to replace it", errno);
    const int copy = ::dup(sub.get());
    DIR* d = copy >= 0 ? ::fdopendir(copy) : nullptr;
    if (!d) {
      const int error = errno;
      if (copy >= 0) ::close(copy);
      failed(shown, "reading a directory to replace it", error);
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    }
    ::closedir(d);
    for (const auto& n : names) remove_entry(sub.get(), n, shown);
    if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) != 0) failed(shown, "removing a directory", errno);
  } else if (::unlinkat(dir, name.c_str(), 0) != 0) {
    failed(shown, "removing an entry", errno);
  }
}

struct DirTimes {
  std::string path;
  timespec times[2];
};

class Unpacker {
 public:
  Unpacker(archive* tar, int root, const UnpackLimits& limits) : tar_(tar), root_(root), limits_(limits) {}

  LayerStats run() {
    for (;;) {
      archive_entry* entry = nullptr;
      const int r = archive_read_next_header(tar_, &entry);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) bad(last_path_, std::string("the layer's tar is unreadable after it: ") + error_text());
      if (++stats_.entries > limits_.max_entries) bad(path_of(entry), "the layer has more entries than allowed");
      take(entry);
    }
    // Directory times last: filling a directory changes its mtime. Each is
    // reached again beneath the root with no symlink on the way (a later
    // entry may have replaced a parent with one).
    for (auto it = dir_times_.rbegin(); it != dir_times_.rend(); ++it) {
      UniqueFd dir(open_beneath(root_, it->path, O_RDONLY | O_DIRECTORY));
      if (dir) ::futimens(dir.get(), it->times);
    }
    return stats_;
  }

 private:
  std::string error_text() const {
    const char* text = archive_error_string(tar_);
    return text ? text : "unknown error";
  }

  static std::string path_of(archive_entry* entry) {
    const char* p = archive_entry_pathname(entry);
    return p ? p : "";
  }

  void take(archive_entry* entry) {
    const std::string path = path_of(entry);
    last_path_ = path;
    if (path.size() > limits_.max_path) bad(path, "the path is longer than 4096 bytes");
    const std::vector<std::string> parts = components(path);
    if (parts.empty()) {
      // The layer's root itself: its mode, as the image's "/" has.
      if (archive_entry_filetype(entry) == AE_IFDIR) ::fchmod(root_, archive_entry_perm(entry) & 0777);
      return;
    }
    const std::string& name = parts.back();
    if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry)) check_space(path, 0);
    UniqueFd parent = open_parent(parts, path);

    if (name == kOpaque) {
      // The parent hides whatever lower layers have in it.
      if (::fsetxattr(parent.get(), "user.overlay.opaque", "y", 1, 0) != 0)
        failed(path, "marking a directory opaque", errno);
      return;
    }
    // Other AUFS metadata (.wh..wh.plnk, .wh..wh.aufs) means nothing here, as under Docker.
    if (name.compare(0, 8, ".wh..wh.") == 0) return;
    if (name.compare(0, kWhiteout.size(), kWhiteout) == 0) {
      const std::string hidden = name.substr(kWhiteout.size());
      if (hidden.empty() || hidden == "." || hidden == "..") bad(path, "a whiteout names nothing");
      remove_entry(parent.get(), hidden, path);
      if (::mknodat(parent.get(), hidden.c_str(), S_IFCHR | 0, ::makedev(0, 0)) != 0)
        failed(path, "making a whiteout", errno);
      return;
    }

    const char* hardlink = archive_entry_hardlink(entry);
    if (hardlink) return link(parent.get(), name, path, hardlink, entry);

    const mode_t type = archive_entry_filetype(entry);
    if (type == AE_IFCHR || type == AE_IFBLK || type == AE_IFSOCK) {
      ++stats_.dropped;
      return;
    }
    struct stat existing {};
    const bool exists = ::fstatat(parent.get(), name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0;
    // A directory over a directory merges; anything else replaces.
    if (exists && !(type == AE_IFDIR && S_ISDIR(existing.st_mode))) remove_entry(parent.get(), name, path);

    switch (type) {
      case AE_IFDIR:
        if (!(exists && S_ISDIR(existing.st_mode)) && ::mkdirat(parent.get(), name.c_str(), 0700) != 0) {
          failed(path, "making a directory", errno);
        }
        finish(parent.get(), name, path, entry, true);
        dir_times_.push_back({join(parts, parts.size()), {times_of(entry)[0], times_of(entry)[1]}});
        return;
      case AE_IFREG: return write_file(parent.get(), name, path, entry);
      case AE_IFLNK: return make_symlink(parent.get(), name, path, parts, entry);
      case AE_IFIFO:
        if (::mkfifoat(parent.get(), name.c_str(), 0600) != 0) failed(path, "making a fifo", errno);
        return finish(parent.get(), name, path, entry, false);
      default: bad(path, "an entry of an unknown type");
    }
  }

  // The entry's parent, made as a plain directory where the layer has none.
  UniqueFd open_parent(const std::vector<std::string>& parts, const std::string& path) {
    const std::string dir = join(parts, parts.size() - 1);
    UniqueFd fd(open_beneath(root_, dir, O_RDONLY | O_DIRECTORY));
    if (fd) return fd;
    if (errno != ENOENT) {
      if (errno == ELOOP || errno == ENOTDIR || errno == EXDEV)
        bad(path, "its parent is not a directory of the layer (a symlink or a file)");
      failed(path, "opening its parent", errno);
    }
    UniqueFd cur(open_beneath(root_, ".", O_RDONLY | O_DIRECTORY));
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      UniqueFd next(open_beneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY));
      if (!next && errno == ENOENT) {
        if (::mkdirat(cur.get(), parts[i].c_str(), 0755) != 0 && errno != EEXIST)
          failed(path, "making a parent", errno);
        next = UniqueFd(open_beneath(cur.get(), parts[i], O_RDONLY | O_DIRECTORY));
      }
      if (!next) {
        if (errno == ELOOP || errno == ENOTDIR)
          bad(path, "its parent is not a directory of the layer (a symlink or a file)");
        failed(path, "opening a parent", errno);
      }
      cur = std::move(next);
    }
    return cur;
  }

  // The store's disk keeps a reserve (1 GiB, or 5% of a smaller disk) and
  // some inodes, whatever the entry makes (a directory or a long symlink
  // takes a block too): an image never fills the host's disk.
  void check_space(const std::string& path, std::uint64_t bytes) const {
    struct statvfs vfs {};
    if (::fstatvfs(root_, &vfs) != 0) return;
    const std::uint64_t size = static_cast<std::uint64_t>(vfs.f_blocks) * vfs.f_frsize;
    const std::uint64_t reserve = std::min<std::uint64_t>(1ull << 30, size / 20);
    const std::uint64_t free = static_cast<std::uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    if (bytes + reserve + vfs.f_frsize > free) {
      if (bytes > free / 2)
        bad(path, "declares " + std::to_string(bytes) + " bytes, more than the store's disk has free");
      throw ImageError("the store's disk is full (unpacking '" + path.substr(0, 200) + "')", ImageError::Kind::store);
    }
    if (vfs.f_files > 0 && vfs.f_favail < std::min<std::uint64_t>(65536, vfs.f_files / 20)) {
      throw ImageError("the store's disk is out of inodes", ImageError::Kind::store);
    }
  }

  static const timespec* times_of(archive_entry* entry) {
    static thread_local timespec t[2];
    t[0] = {archive_entry_atime_is_set(entry) ? archive_entry_atime(entry) : archive_entry_mtime(entry),
            archive_entry_atime_is_set(entry) ? archive_entry_atime_nsec(entry) : archive_entry_mtime_nsec(entry)};
    t[1] = {archive_entry_mtime(entry), archive_entry_mtime_nsec(entry)};
    return t;
  }

  // Owner, mode (setuid and setgid cleared; setgid kept on directories, where
  // it only passes the group on) and times.
  void finish(int parent, const std::string& name, const std::string& path, archive_entry* entry, bool dir) {
    const la_int64_t uid = archive_entry_uid(entry);
    const la_int64_t gid = archive_entry_gid(entry);
    if (uid < 0 || gid < 0 || uid > 0xfffffffeLL || gid > 0xfffffffeLL) bad(path, "an owner id out of range");
    if (::fchownat(parent, name.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid), AT_SYMLINK_NOFOLLOW) != 0) {
      failed(path, "setting its owner", errno);
    }
    mode_t mode = archive_entry_perm(entry) & 07777;
    const mode_t cleared = dir ? S_ISUID : (S_ISUID | S_ISGID);
    if (mode & cleared) ++stats_.cleared;
    mode &= ~cleared;
    if (::fchmodat(parent, name.c_str(), mode, 0) != 0) failed(path, "setting its mode", errno);
    if (!dir) ::utimensat(parent, name.c_str(), times_of(entry), AT_SYMLINK_NOFOLLOW);
  }

  void write_file(int parent, const std::string& name, const std::string& path, archive_entry* entry) {
    const la_int64_t declared = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
    if (declared < 0) bad(path, "a negative size");
    declared_ += static_cast<std::uint64_t>(declared);
    if (declared_ > limits_.max_bytes) {
      bad(path, "declares " + std::to_string(declared) + " bytes, more than the layer may hold");
    }
    check_space(path, static_cast<std::uint64_t>(declared));
    UniqueFd file(::openat(parent, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!file) failed(path, "creating the file", errno);
    for (;;) {
      const void* block = nullptr;
      std::size_t size = 0;
      la_int64_t offset = 0;
      const int r = archive_read_data_block(tar_, &block, &size, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) bad(path, std::string("its contents are unreadable: ") + error_text());
      if (offset < 0 || static_cast<std::uint64_t>(offset) + size > static_cast<std::uint64_t>(declared)) {
        bad(path, "its contents run past its declared size");
      }
      const char* p = static_cast<const char*>(block);
      while (size > 0) {
        const ssize_t n = ::pwrite(file.get(), p, size, offset);
        if (n < 0) {
          if (errno == EINTR) continue;
          failed(path, "writing the file", errno);
        }
        p += n;
        size -= static_cast<std::size_t>(n);
        offset += n;
        stats_.bytes += static_cast<std::uint64_t>(n);
      }
    }
    // Sparse files end in a hole: the size is the header's.
    if (::ftruncate(file.get(), declared) != 0) failed(path, "sizing the file", errno);
    file.reset();
    finish(parent, name, path, entry, false);
  }

  // A symlink's target is the image's business, resolved inside the sandbox's
  // root when used, with one exception: a relative target climbing above the
  // image's root names a place no image has, and is refused.
  void make_symlink(int parent, const std::string& name, const std::string& path, const std::vector<std::string>& parts,
                    archive_entry* entry) {
    const char* target = archive_entry_symlink(entry);
    if (!target || !*target) bad(path, "a symlink without a target");
    const std::string t = target;
    if (t.size() > limits_.max_path) bad(path, "a symlink target longer than 4096 bytes");
    if (t.front() != '/') {
      long depth = static_cast<long>(parts.size()) - 1;
      std::size_t i = 0;
      while (i <= t.size()) {
        const auto slash = t.find('/', i);
        const std::string part = t.substr(i, slash == std::string::npos ? std::string::npos : slash - i);
        if (part == "..") {
          if (--depth < 0) bad(path, "a symlink pointing out of the image (" + t.substr(0, 200) + ")");
        } else if (!part.empty() && part != ".") {
          ++depth;
        }
        if (slash == std::string::npos) break;
        i = slash + 1;
      }
    }
    if (::symlinkat(t.c_str(), parent, name.c_str()) != 0) failed(path, "making a symlink", errno);
    const la_int64_t uid = archive_entry_uid(entry);
    const la_int64_t gid = archive_entry_gid(entry);
    if (uid >= 0 && gid >= 0 && uid <= 0xfffffffeLL && gid <= 0xfffffffeLL) {
      ::fchownat(parent, name.c_str(), static_cast<uid_t>(uid), static_cast<gid_t>(gid), AT_SYMLINK_NOFOLLOW);
    }
    ::utimensat(parent, name.c_str(), times_of(entry), AT_SYMLINK_NOFOLLOW);
  }

  // A hard link to an earlier entry of this layer.
  void link(int parent, const std::string& name, const std::string& path, const char* target, archive_entry*) {
    const std::vector<std::string> to = components(target);
    if (to.empty()) bad(path, "a hard link to the layer's root");
    UniqueFd source(open_beneath(root_, join(to, to.size()), O_PATH));
    if (!source)
      bad(path,
          std::string("a hard link to '") + std::string(target).substr(0, 200) + "', which the layer does not hold");
    struct stat st {};
    if (::fstat(source.get(), &st) != 0 || S_ISDIR(st.st_mode)) bad(path, "a hard link to a directory");
    remove_entry(parent, name, path);
    if (::linkat(source.get(), "", parent, name.c_str(), AT_EMPTY_PATH) != 0) failed(path, "making a hard link", errno);
  }

  archive* tar_;
  int root_;
  UnpackLimits limits_;
  LayerStats stats_;
  std::uint64_t declared_ = 0;
  std::string last_path_;
  std::vector<DirTimes> dir_times_;
};

}  // namespace

LayerStats unpack_layer(archive* tar, int root, const UnpackLimits& limits) {
  return Unpacker(tar, root, limits).run();
}

}  // namespace mayura::rootfs
