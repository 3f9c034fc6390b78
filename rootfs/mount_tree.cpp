// The sandbox's root, step by step: clone every host source first
// (clone_sources, so that mounting the new root can hide none of them), make
// the new root a tmpfs,
// carry out the plan with every target resolved inside the new root (so a
// symlink in an image can never point a mount at a host path), then
// pivot_root into it, detach the old root, and make the root read-only.

#include "mayura/rootfs/mount_tree.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace mayura::rootfs {
namespace {

using Fd = UniqueFd;

constexpr const char* kStaging = "/tmp";

int openat2_in_root(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<__u64>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
}

// The same, refusing any symlink on the way (a workdir an image could point elsewhere).
int openat2_no_symlinks(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<__u64>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS;
  return static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
}

std::string relative(const std::string& path) {
  std::size_t i = 0;
  while (i < path.size() && path[i] == '/') ++i;
  return i == path.size() ? std::string(".") : path.substr(i);
}

std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? std::string("/") : path.substr(0, slash);
}

std::string base_of(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string fd_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

// mkdir -p inside the new root; returns an O_PATH fd of the directory.
Fd ensure_dir(int root, const std::string& path, mode_t mode) {
  Fd fd(openat2_in_root(root, relative(path), O_PATH | O_DIRECTORY));
  if (fd) return fd;
  if (errno != ENOENT) return Fd();
  if (path == "/") return Fd();
  Fd parent = ensure_dir(root, parent_of(path), 0755);
  if (!parent) return Fd();
  if (::mkdirat(parent.get(), base_of(path).c_str(), mode) != 0 && errno != EEXIST) return Fd();
  return Fd(openat2_in_root(root, relative(path), O_PATH | O_DIRECTORY));
}

// An empty regular file to mount a file over; an O_PATH fd of it.
Fd ensure_file(int root, const std::string& path) {
  Fd fd(openat2_in_root(root, relative(path), O_PATH));
  if (fd) return fd;
  if (errno != ENOENT) return Fd();
  Fd parent = ensure_dir(root, parent_of(path), 0755);
  if (!parent) return Fd();
  // O_PATH cannot create; make it, then open it again by path in the root.
  const int made = ::openat(parent.get(), base_of(path).c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
  if (made < 0 && errno != EEXIST) return Fd();
  if (made >= 0) ::close(made);
  return Fd(openat2_in_root(root, relative(path), O_PATH));
}

int attach(int tree, int target) {
  return ::move_mount(tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

int set_attrs(int tree, std::uint32_t flags, bool recursive) {
  mount_attr attr{};
  attr.attr_set = bind_attributes(flags);
  const unsigned at = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0u);
  return ::mount_setattr(tree, "", at, &attr, sizeof attr);
}

int mount_fs(const char* type, int target, unsigned long flags, const std::string& data) {
  return ::mount(type, fd_path(target).c_str(), type, flags, data.empty() ? nullptr : data.c_str());
}

int write_string(int fd, const std::string& data) {
  const int error = write_all(fd, data.data(), data.size());
  errno = error;
  return error == 0 ? 0 : -1;
}

// A file with `data`, made in the root tmpfs under a hidden name and cloned
// as a read-only mount; the caller unlinks the name once the clone is
// attached (the mount keeps the file, the root shows nothing).
Fd staged_file(int root, const std::string& name, const std::string& data, mode_t mode) {
  Fd file(::openat(root, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, mode));
  if (!file) return Fd();
  if (write_string(file.get(), data) != 0 || ::fchmod(file.get(), mode) != 0) {
    ::unlinkat(root, name.c_str(), 0);
    return Fd();
  }
  file.reset();
  Fd tree(::open_tree(root, name.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (!tree || set_attrs(tree.get(), kNoExec, false) != 0) {
    const int saved = errno;
    ::unlinkat(root, name.c_str(), 0);
    errno = saved;
    return Fd();
  }
  return tree;
}

bool skipped(const std::string& names, const std::string& name) {
  std::size_t i = 0;
  while (i <= names.size()) {
    const auto slash = names.find('/', i);
    if (names.compare(i, slash == std::string::npos ? std::string::npos : slash - i, name) == 0 &&
        (slash == std::string::npos ? names.size() - i : slash - i) == name.size()) {
      return true;
    }
    if (slash == std::string::npos) return false;
    i = slash + 1;
  }
  return false;
}

// Binds every top-level entry of `image` (an open directory) into the root,
// read-only unless `writable`; symlinks are made again.
int bind_entries(int root, int image, const std::string& skip, bool writable) {
  const int copy = ::dup(image);
  std::unique_ptr<DIR, int (*)(DIR*)> dir(copy >= 0 ? ::fdopendir(copy) : nullptr, ::closedir);
  if (!dir) {
    if (copy >= 0) ::close(copy);
    return -1;
  }
  while (const dirent* e = ::readdir(dir.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name.rfind(".mayura", 0) == 0 || skipped(skip, name)) continue;
    struct stat st {};
    if (::fstatat(image, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
    if (S_ISLNK(st.st_mode)) {
      char target[4097];
      const ssize_t n = ::readlinkat(image, name.c_str(), target, sizeof target - 1);
      if (n <= 0 || n >= static_cast<ssize_t>(sizeof target - 1)) return errno = ENAMETOOLONG, -1;
      target[n] = '\0';
      if (::symlinkat(target, root, name.c_str()) != 0) return -1;
      continue;
    }
    if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) continue;
    Fd tree(::open_tree(image, name.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW));
    if (!tree || set_attrs(tree.get(), writable ? std::uint32_t{kWritable} : 0u, true) != 0) return -1;
    Fd target = S_ISDIR(st.st_mode) ? ensure_dir(root, "/" + name, 0755) : ensure_file(root, "/" + name);
    if (!target || attach(tree.get(), target.get()) != 0) return -1;
  }
  return 0;
}

// The scaffolding of an image's mounts lives under this name in the root;
// no image entry of that name is bound (bind_entries skips them), and every
// path handed to the kernel is an fd's, so nothing an image ships can
// redirect a mount.
constexpr const char* kScaffold = ".mayura-scaffold";

int detach(int fd) { return ::umount2(fd_path(fd).c_str(), MNT_DETACH); }

// A directory `name` of `parent`, made if missing; an O_PATH fd of it,
// reached with no symlink.
Fd own_dir(int parent, const char* name, mode_t mode) {
  if (::mkdirat(parent, name, mode) != 0 && errno != EEXIST) return Fd();
  return Fd(::openat(parent, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// A stored image: its layers attached in the scaffolding, an overlay of them
// mounted (userxattr: the store marks opaque directories with
// user.overlay.opaque, and an overlay mounted in a user namespace reads no
// trusted xattrs), its entries bound into the root, and the scaffolding
// detached again. The bound entries keep the overlay alive. Read-only; or,
// with kWritable, written over on the disk whose top is the last mount
// handed (its kDiskRoot holds the upper and work directories).
int mount_image(int root, const Op& op, std::vector<Fd>& handed) {
  const bool writable = (op.flags & kWritable) != 0;
  Fd disk;
  if (writable && !handed.empty()) {
    disk = std::move(handed.back());
    handed.pop_back();
  }
  std::vector<Fd>& layers = handed;
  if (layers.empty() || layers.size() > 128 || (writable && !disk)) return errno = EINVAL, -1;
  if (::mkdirat(root, kScaffold, 0700) != 0) return -1;
  Fd scaffold(::openat(root, kScaffold, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!scaffold) return -1;
  auto subdir = [&](const std::string& name, int flags) {
    return Fd(::openat(scaffold.get(), name.c_str(), flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  };
  std::vector<Fd> lowers;
  std::string lower;
  int result = -1;
  for (std::size_t i = layers.size(); i-- > 0;) {  // the top layer first
    const std::string name = std::to_string(i);
    if (::mkdirat(scaffold.get(), name.c_str(), 0700) != 0) return -1;
    Fd at = subdir(name, O_PATH);
    if (!at || attach(layers[i].get(), at.get()) != 0) return -1;
    layers[i].reset();
    lowers.push_back(subdir(name, O_PATH));  // the attached layer's root
    if (!lowers.back()) return -1;
    lower += (lower.empty() ? "" : ":") + fd_path(lowers.back().get());
  }
  // An overlay without an upper layer needs two lower ones.
  if (lowers.size() == 1 && !writable) {
    if (::mkdirat(scaffold.get(), "empty", 0555) != 0) return -1;
    lowers.push_back(subdir("empty", O_PATH));
    if (!lowers.back()) return -1;
    lower += ":" + fd_path(lowers.back().get());
  }
  std::string data = "lowerdir=" + lower;
  Fd top;  // the disk's, attached in the scaffolding while the overlay is made
  std::vector<Fd> upper_and_work;
  if (writable) {
    if (::mkdirat(scaffold.get(), "disk", 0700) != 0) return -1;
    Fd at = subdir("disk", O_PATH);
    if (!at || attach(disk.get(), at.get()) != 0) return -1;
    disk.reset();
    top = subdir("disk", O_PATH);
    Fd dir = top ? own_dir(top.get(), kDiskRoot, 0755) : Fd();
    Fd upper = dir ? own_dir(dir.get(), "upper", 0755) : Fd();
    Fd work = dir ? own_dir(dir.get(), "work", 0700) : Fd();
    if (!upper || !work) {
      const int saved = errno;
      if (top) detach(top.get());
      errno = saved;
      return -1;
    }
    // The overlay holds the directories it names; the paths need only
    // last until it is mounted.
    data += ",upperdir=" + fd_path(upper.get()) + ",workdir=" + fd_path(work.get());
    upper_and_work.push_back(std::move(upper));
    upper_and_work.push_back(std::move(work));
  }
  Fd merged;
  if (::mkdirat(scaffold.get(), "merged", 0700) == 0) {
    Fd merged_at = subdir("merged", O_PATH);
    const unsigned long flags = MS_NOSUID | MS_NODEV | (writable ? 0 : MS_RDONLY);
    if (merged_at && mount_fs("overlay", merged_at.get(), flags, data + ",userxattr") == 0) {
      merged = subdir("merged", O_RDONLY);
      result = merged ? bind_entries(root, merged.get(), op.src, writable) : -1;
    }
  }
  const int saved = errno;
  if (merged) detach(merged.get());
  for (const auto& l : lowers) detach(l.get());
  merged.reset();
  lowers.clear();
  upper_and_work.clear();
  if (top) detach(top.get());
  top.reset();
  // Empty directories now; the scaffold goes from the root.
  for (std::size_t i = 0; i < layers.size(); ++i) ::unlinkat(scaffold.get(), std::to_string(i).c_str(), AT_REMOVEDIR);
  ::unlinkat(scaffold.get(), "empty", AT_REMOVEDIR);
  ::unlinkat(scaffold.get(), "merged", AT_REMOVEDIR);
  ::unlinkat(scaffold.get(), "disk", AT_REMOVEDIR);
  ::unlinkat(root, kScaffold, AT_REMOVEDIR);
  errno = saved;
  return result;
}

bool has_entries(int dir) {
  const int copy = ::dup(dir);
  std::unique_ptr<DIR, int (*)(DIR*)> d(copy >= 0 ? ::fdopendir(copy) : nullptr, ::closedir);
  if (!d) {
    if (copy >= 0) ::close(copy);
    return false;
  }
  while (const dirent* e = ::readdir(d.get())) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") return true;
  }
  return false;
}

// The tmpfs as the upper layer of an overlay over what the image has at
// dst: the image's files show, and whatever is written goes to the tmpfs
// (bounded by its size). The tmpfs is mounted in the scaffolding and
// detached again once the overlay holds it. `contents` is dst, reached with
// no symlink on the way.
int mount_over_contents(int root, const Op& op, int contents, const char* tmpfs_data) {
  if (::mkdirat(root, kScaffold, 0700) != 0) return -1;
  int result = -1;
  Fd scratch_at(::openat(root, kScaffold, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (scratch_at && mount_fs("tmpfs", scratch_at.get(), MS_NOSUID | MS_NODEV, tmpfs_data) == 0) {
    Fd scratch(::openat(root, kScaffold, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (scratch && ::mkdirat(scratch.get(), "upper", op.mode) == 0 &&
        ::fchownat(scratch.get(), "upper", op.uid, op.gid, AT_SYMLINK_NOFOLLOW) == 0 &&
        ::fchmodat(scratch.get(), "upper", op.mode, 0) == 0 && ::mkdirat(scratch.get(), "work", 0700) == 0) {
      Fd upper(::openat(scratch.get(), "upper", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      Fd work(::openat(scratch.get(), "work", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (upper && work) {
        const std::string data = "lowerdir=" + fd_path(contents) + ",upperdir=" + fd_path(upper.get()) +
                                 ",workdir=" + fd_path(work.get()) + ",userxattr";
        result = mount_fs("overlay", contents, MS_NOSUID | MS_NODEV, data);
      }
    }
    const int saved = errno;
    if (scratch) detach(scratch.get());
    errno = saved;
  }
  const int saved = errno;
  ::unlinkat(root, kScaffold, AT_REMOVEDIR);
  errno = saved;
  return result;
}

// A masked directory gets an empty, read-only directory of the root's own
// tmpfs, and a masked file an empty, read-only file of it, one of each for
// every mask of a sandbox: a mount of a superblock already there, and no
// file made and removed per mask. A superblock costs the create and the
// release their time, and the kernel keeps a slot for each one alive in
// every memory cgroup (its shrinker's), so a sandbox makes as few as it can.
// Both lie under where /proc is mounted, out of reach once it is; the first
// mask of each kind takes the clone made before that, the others clone it.
constexpr const char* kEmptyDir = "proc/.mayura-empty";
constexpr const char* kEmptyFile = "proc/.mayura-empty-file";

struct EmptyMask {
  Fd source;    // the clone, until the first mask takes it
  Fd attached;  // the first mask, once made
};

struct EmptyMasks {
  EmptyMask dir, file;
};

// Both empty sources, cloned before /proc is mounted over them; the file is
// made as any staged file is, and stays there.
EmptyMasks empty_sources(int root) {
  EmptyMasks empty;
  if ((::mkdirat(root, "proc", 0555) != 0 && errno != EEXIST) || ::mkdirat(root, kEmptyDir, 0555) != 0) return empty;
  Fd tree(::open_tree(root, kEmptyDir, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (!tree || set_attrs(tree.get(), kNoExec, false) != 0) return empty;  // read-only: no kWritable
  empty.dir.source = std::move(tree);
  empty.file.source = staged_file(root, kEmptyFile, {}, 0444);
  return empty;
}

int mask_with(int root, const Op& op, int target, bool dir, EmptyMask& empty) {
  if (empty.attached) {
    // A clone keeps the mount's attributes: read-only, nosuid, nodev, noexec.
    Fd tree(::open_tree(empty.attached.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
    if (!tree) return -1;
    return attach(tree.get(), target);
  }
  if (!empty.source) return (errno = EINVAL, -1);
  if (attach(empty.source.get(), target) != 0) return -1;
  empty.source.reset();
  // the mask just made
  empty.attached = Fd(openat2_in_root(root, relative(op.dst), O_PATH | (dir ? O_DIRECTORY : 0)));
  return empty.attached ? 0 : -1;
}

int run_op(int root, const Op& op, std::size_t index, Fd& source, EmptyMasks& empty) {
  switch (op.kind) {
    case OpKind::bind: {
      if (!source) return (op.flags & kOptional) ? 0 : -1;
      struct stat st {};
      if (::fstat(source.get(), &st) != 0) return -1;
      Fd target = S_ISDIR(st.st_mode) ? ensure_dir(root, op.dst, 0755) : ensure_file(root, op.dst);
      if (!target) return -1;
      return attach(source.get(), target.get());
    }
    case OpKind::mkdir: return ensure_dir(root, op.dst, op.mode) ? 0 : -1;
    case OpKind::symlink: {
      Fd parent = ensure_dir(root, parent_of(op.dst), 0755);
      if (!parent) return -1;
      return ::symlinkat(op.data.c_str(), parent.get(), base_of(op.dst).c_str());
    }
    case OpKind::file: {
      Fd parent = ensure_dir(root, parent_of(op.dst), 0755);
      if (!parent) return -1;
      Fd file(::openat(parent.get(), base_of(op.dst).c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, op.mode));
      if (!file) return -1;
      return write_string(file.get(), op.data) == 0 ? ::fchmod(file.get(), op.mode) : -1;
    }
    case OpKind::tmpfs: {
      Fd target = ensure_dir(root, op.dst, 0755);
      if (!target) return -1;
      char data[160];
      std::snprintf(data, sizeof data, "size=%llu,nr_inodes=%llu,mode=%o,uid=%u,gid=%u",
                    static_cast<unsigned long long>(op.size), static_cast<unsigned long long>(op.inodes), op.mode,
                    op.uid, op.gid);
      if ((op.flags & kKeepContents) && op.dst != "/") {
        Fd contents(openat2_no_symlinks(root, relative(op.dst), O_RDONLY | O_DIRECTORY));
        if (!contents) return -1;
        if (has_entries(contents.get())) return mount_over_contents(root, op, contents.get(), data);
      }
      unsigned long flags = MS_NOSUID | MS_NODEV;
      if (op.flags & kNoExec) flags |= MS_NOEXEC;
      return mount_fs("tmpfs", target.get(), flags, data);
    }
    case OpKind::proc: {
      Fd target = ensure_dir(root, op.dst, 0555);
      if (!target) return -1;
      return mount_fs("proc", target.get(), MS_NOSUID | MS_NODEV | MS_NOEXEC, {});
    }
    case OpKind::devpts: {
      Fd target = ensure_dir(root, op.dst, 0755);
      if (!target) return -1;
      // Read-only: ptys are made through /dev/ptmx all the same, and no writable
      // mount may carry devices.
      return mount_fs("devpts", target.get(), MS_RDONLY | MS_NOSUID | MS_NOEXEC,
                      "newinstance,ptmxmode=0666,mode=0620,gid=5");
    }
    case OpKind::read_only: {
      Fd target(openat2_in_root(root, relative(op.dst), O_PATH));
      if (!target) return (errno == ENOENT && (op.flags & kOptional)) ? 0 : -1;
      Fd tree(::open_tree(target.get(), "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
      if (!tree || set_attrs(tree.get(), kNoExec, true) != 0) return -1;
      return attach(tree.get(), target.get());
    }
    case OpKind::override_file:
    case OpKind::mask: {
      Fd target(openat2_in_root(root, relative(op.dst), O_PATH));
      if (!target) return (errno == ENOENT && (op.flags & kOptional)) ? 0 : -1;
      struct stat st {};
      if (::fstat(target.get(), &st) != 0) return -1;
      if (op.kind == OpKind::mask) {
        const bool dir = S_ISDIR(st.st_mode);
        return mask_with(root, op, target.get(), dir, dir ? empty.dir : empty.file);
      }
      if (!S_ISREG(st.st_mode)) return (op.flags & kOptional) ? 0 : (errno = EINVAL, -1);
      const std::string staged = ".mayura-stage-" + std::to_string(index);
      Fd tree = staged_file(root, staged, op.data, op.mode);
      if (!tree) return -1;
      const int attached = attach(tree.get(), target.get());
      const int saved = errno;
      ::unlinkat(root, staged.c_str(), 0);
      errno = saved;
      return attached;
    }
    case OpKind::image_layers:
    case OpKind::handed: break;  // build() runs them: they need what the engine handed over
  }
  errno = EINVAL;
  return -1;
}

}  // namespace

std::uint64_t bind_attributes(std::uint32_t flags) {
  std::uint64_t attrs = MOUNT_ATTR_NOSUID;
  if (!(flags & kWritable)) attrs |= MOUNT_ATTR_RDONLY;
  if (!(flags & kAllowDevices)) attrs |= MOUNT_ATTR_NODEV;
  if (flags & kNoExec) attrs |= MOUNT_ATTR_NOEXEC;
  return attrs;
}

BuildResult clone_sources(const Plan& plan, std::vector<UniqueFd>& trees) {
  trees.clear();
  trees.resize(plan.size());
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const Op& op = plan[i];
    if (op.kind != OpKind::bind) continue;
    // No symlink at the last step: an image entry swapped for a link after
    // the plan was made must not bind what the link names.
    Fd tree(::open_tree(AT_FDCWD, op.src.c_str(),
                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW));
    if (!tree) {
      if (errno == ENOENT && (op.flags & kOptional)) continue;
      return {false, static_cast<std::uint32_t>(i), errno};
    }
    mount_attr attr{};
    attr.attr_set = bind_attributes(op.flags);
    // Private: a mount the host makes later under a bound tree (a shared
    // one, on systemd hosts) must never show up inside.
    attr.propagation = MS_PRIVATE;
    if (::mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) {
      return {false, static_cast<std::uint32_t>(i), errno};
    }
    trees[i] = std::move(tree);
  }
  return {};
}

namespace {

// How many of the handed mounts an op takes.
std::size_t handed_to(const Op& op) {
  if (op.kind == OpKind::handed) return 1;
  if (op.kind != OpKind::image_layers) return 0;
  std::size_t n = (op.flags & kWritable) ? 1 : 0;  // the disk's top after the layers
  for (std::size_t at = 0; at < op.data.size();) {
    const std::size_t end = std::min(op.data.find('\n', at), op.data.size());
    n += end > at ? 1 : 0;
    at = end + 1;
  }
  return n;
}

// The handed op: the engine's mount attached on dst (made if missing). Its
// path follows no symlink an image planted (ELOOP): a volume's path names
// the place it goes, not another the image points to.
int attach_handed(int root, const Op& op, Fd& mount) {
  if (!mount) return errno = EINVAL, -1;
  if (!ensure_dir(root, op.dst, 0755)) return -1;
  Fd target(openat2_no_symlinks(root, relative(op.dst), O_PATH | O_DIRECTORY));
  if (!target) return -1;
  if (op.src.empty()) {
    const int done = attach(mount.get(), target.get());
    mount.reset();
    return done;
  }
  // The mount is a disk's top, and its directory `src` goes on dst. A
  // detached mount cannot be cloned from on every kernel (6.1 refuses), so
  // the top is attached in the scaffold first, the directory cloned from
  // there, and the top detached again (the clone keeps the file system).
  if (::mkdirat(root, kScaffold, 0700) != 0) return -1;
  int result = -1;
  int saved = 0;
  {
    Fd at(::openat(root, kScaffold, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (at && attach(mount.get(), at.get()) == 0) {
      Fd top(::openat(root, kScaffold, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      Fd dir(top ? ::open_tree(top.get(), op.src.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW)
                 : -1);
      result = dir ? attach(dir.get(), target.get()) : -1;
      saved = errno;
      if (top) detach(top.get());
    } else {
      saved = errno;
    }
  }
  mount.reset();
  ::unlinkat(root, kScaffold, AT_REMOVEDIR);
  errno = saved;
  return result;
}

}  // namespace

BuildResult build(const Plan& plan, std::vector<UniqueFd>& sources, std::vector<UniqueFd>& handed) {
  // Nothing we mount may propagate back to the host.
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return {false, kStepPrivate, errno};
  sources.resize(plan.size());

  if (::mount("tmpfs", kStaging, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m,nr_inodes=4096") != 0) {
    return {false, kStepRoot, errno};
  }
  Fd root(::open(kStaging, O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return {false, kStepRoot, errno};

  EmptyMasks empty = empty_sources(root.get());
  if (!empty.dir.source || !empty.file.source) return {false, kStepRoot, errno};
  std::size_t next_handed = 0;
  for (std::size_t i = 0; i < plan.size(); ++i) {
    const std::size_t takes = handed_to(plan[i]);
    if (next_handed + takes > handed.size()) return {false, static_cast<std::uint32_t>(i), EINVAL};
    std::vector<Fd> own(std::make_move_iterator(handed.begin() + static_cast<std::ptrdiff_t>(next_handed)),
                        std::make_move_iterator(handed.begin() + static_cast<std::ptrdiff_t>(next_handed + takes)));
    next_handed += takes;
    int done = 0;
    switch (plan[i].kind) {
      case OpKind::image_layers: done = mount_image(root.get(), plan[i], own); break;
      case OpKind::handed: done = attach_handed(root.get(), plan[i], own.front()); break;
      default: done = run_op(root.get(), plan[i], i, sources[i], empty);
    }
    if (done != 0) return {false, static_cast<std::uint32_t>(i), errno};
    sources[i].reset();
  }

  empty = {};
  // Once more, over everything the plan attached: nothing propagates in or out.
  if (::mount(nullptr, kStaging, nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return {false, kStepPrivate, errno};
  // pivot_root(".", ".") stacks the old root under the new one; detaching it
  // leaves no path to any host file.
  if (::fchdir(root.get()) != 0 || ::syscall(SYS_pivot_root, ".", ".") != 0 || ::umount2(".", MNT_DETACH) != 0 ||
      ::chdir("/") != 0) {
    return {false, kStepPivot, errno};
  }
  if (::mount(nullptr, "/", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return {false, kStepReadOnly, errno};
  }
  return {};
}

}  // namespace mayura::rootfs
