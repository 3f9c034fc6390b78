// File requests, each served in a child of the init that acts as the
// sandbox user (its file system ids, no capability): what it may touch is
// exactly what a command may touch, and every path resolves inside the
// sandbox's own root. Its real ids stay the init's, so the sandbox cannot
// stop it and stall the engine.

#include <dirent.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "mayura/base/capabilities.hpp"
#include "mayura/base/unique_fd.hpp"
#include "init.hpp"

namespace mayura::init {
namespace {

// Never opens anything but a regular file: the path is first opened with
// O_PATH (which opens nothing), checked, then reopened through that same
// inode, so a FIFO never hangs and a device never sees an open.
int open_regular(const std::string& path, int flags, int& fd) {
  const int handle = ::open(path.c_str(), O_PATH | O_CLOEXEC);
  if (handle < 0) return errno;
  struct stat st {};
  if (::fstat(handle, &st) != 0) {
    const int e = errno;
    ::close(handle);
    return e;
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(handle);
    return S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
  }
  fd = ::open(("/proc/self/fd/" + std::to_string(handle)).c_str(), flags | O_NOCTTY | O_CLOEXEC);
  const int e = errno;
  ::close(handle);
  return fd < 0 ? e : 0;
}

std::int64_t do_read(const protocol::FileRequest& r, int out, int& error) {
  int opened = -1;
  error = open_regular(r.path, O_RDONLY, opened);
  const UniqueFd fd(opened);
  if (error) return 0;
  struct stat st {};
  ::fstat(fd.get(), &st);
  if (static_cast<std::uint64_t>(st.st_size) > r.max_bytes) {
    error = EFBIG;
    return 0;
  }
  std::int64_t total = 0;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      return total;
    }
    total += n;
    // The file grew while we read it: the bound holds all the same.
    if (static_cast<std::uint64_t>(total) > r.max_bytes) {
      error = EFBIG;
      return total;
    }
    if ((error = write_all(out, buf, static_cast<std::size_t>(n))) != 0) return total;
  }
  return total;
}

int make_parents(const std::string& path) {
  for (std::size_t slash = path.find('/', 1); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    const std::string dir = path.substr(0, slash);
    if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return errno;
  }
  return 0;
}

// Writes to a temporary file beside the target and renames it into place, so
// a failed or cut-off write never leaves a half-written file. Both names are
// taken in one directory, opened once: a sandbox that swaps the directory
// (for a symlink elsewhere) while the write runs cannot split the rename
// across two directories (EXDEV) or leave the temporary file behind.
std::int64_t do_write(const protocol::FileRequest& r, int in, int& error) {
  if ((error = make_parents(r.path)) != 0) return 0;
  const auto slash = r.path.rfind('/');
  const std::string parent = slash == 0 ? std::string("/") : r.path.substr(0, slash);
  const std::string name = r.path.substr(slash + 1);
  const std::string temp = ".mayura-write-" + std::to_string(::getpid());
  const int dir = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    error = errno;
    return 0;
  }
  mode_t mode = 0644;
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, 0) == 0) {
    if (S_ISDIR(st.st_mode) || !S_ISREG(st.st_mode)) {
      error = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
      ::close(dir);
      return 0;
    }
    mode = st.st_mode & 07777;
  }
  const int fd = ::openat(dir, temp.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = errno;
    ::close(dir);
    return 0;
  }
  std::int64_t total = 0;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(in, buf, sizeof buf);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    total += n;
    if ((error = write_all(fd, buf, static_cast<std::size_t>(n))) != 0) break;
  }
  if (!error && static_cast<std::uint64_t>(total) != r.max_bytes) error = EPIPE;  // the engine stopped sending
  if (!error && ::fchmod(fd, mode) != 0) error = errno;
  if (::close(fd) != 0 && !error) error = errno;
  if (!error && ::renameat(dir, temp.c_str(), dir, name.c_str()) != 0) error = errno;
  if (error) ::unlinkat(dir, temp.c_str(), 0);
  ::close(dir);
  return total;
}

std::uint32_t type_of(mode_t mode) {
  if (S_ISREG(mode)) return protocol::ListEntry::kFile;
  if (S_ISDIR(mode)) return protocol::ListEntry::kDirectory;
  if (S_ISLNK(mode)) return protocol::ListEntry::kSymlink;
  return protocol::ListEntry::kOther;
}

std::int64_t do_list(const protocol::FileRequest& r, int out, int& error) {
  const int fd = ::open(r.path.c_str(), O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    error = errno;
    return 0;
  }
  DIR* dir = ::fdopendir(fd);
  if (!dir) {
    error = errno;
    return 0;
  }
  std::string chunk;
  std::int64_t count = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // removed meanwhile
    protocol::ListEntry entry;
    entry.type = type_of(st.st_mode);
    entry.mode = st.st_mode & 07777;
    entry.size = static_cast<std::uint64_t>(st.st_size);
    entry.mtime_ms = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    entry.name = e->d_name;
    chunk += protocol::encode(entry);
    ++count;
    if (chunk.size() > 60000) {
      if ((error = write_all(out, chunk.data(), chunk.size())) != 0) break;
      chunk.clear();
    }
  }
  if (!error) error = write_all(out, chunk.data(), chunk.size());
  ::closedir(dir);
  return count;
}

// Removes every entry of `dir` that is not a directory, and names one
// that is, if any is left (in `subdirectory`).
int remove_files_of(int dir, std::string& subdirectory) {
  subdirectory.clear();
  const int copy = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return errno;
  DIR* listing = ::fdopendir(copy);
  if (!listing) {
    const int error = errno;
    ::close(copy);
    return error;
  }
  int error = 0;
  while (const dirent* e = ::readdir(listing)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    struct stat st {};
    if (::fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // removed meanwhile
    if (S_ISDIR(st.st_mode)) {
      subdirectory = e->d_name;
      break;
    }
    if (::unlinkat(dir, e->d_name, 0) != 0 && errno != ENOENT) {
      error = errno;
      break;
    }
  }
  ::closedir(listing);
  return error;
}

bool same_file(int fd, const struct stat& expected) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 && st.st_dev == expected.st_dev && st.st_ino == expected.st_ino;
}

// rm -r that never follows a symlink out of the tree it removes, and holds
// three descriptors however deep the tree is (a tree 10,000 directories
// deep must go, not fail on the descriptor limit): it walks down to a
// directory with none below, empties and removes it, and climbs back by
// "..", checked to be the directory it came from (a sandbox that moves its
// directories meanwhile gets ENOTEMPTY, and nothing outside the tree goes).
int remove_tree(int parent, const char* name) {
  struct stat st {};
  if (::fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
  if (!S_ISDIR(st.st_mode)) return ::unlinkat(parent, name, 0) == 0 ? 0 : errno;
  struct Level {
    std::string name;
    struct stat st;
  };
  std::vector<Level> below{{name, st}};  // the directories from the tree's top down to `dir`
  UniqueFd dir(::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return errno;
  if (!same_file(dir.get(), st)) return ENOTEMPTY;
  std::string subdirectory;
  for (;;) {
    if (const int error = remove_files_of(dir.get(), subdirectory)) return error;
    if (!subdirectory.empty()) {
      UniqueFd child(::openat(dir.get(), subdirectory.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!child) {
        if (errno == ENOENT) continue;  // removed meanwhile
        return errno;
      }
      struct stat child_st {};
      if (::fstat(child.get(), &child_st) != 0) return errno;
      below.push_back({subdirectory, child_st});
      dir = std::move(child);
      continue;
    }
    // `dir` is empty: remove it from the directory above
    const std::string done = std::move(below.back().name);
    below.pop_back();
    if (below.empty()) return ::unlinkat(parent, done.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : errno;
    UniqueFd up(::openat(dir.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!up) return errno;
    if (!same_file(up.get(), below.back().st)) return ENOTEMPTY;
    if (::unlinkat(up.get(), done.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) return errno;
    dir = std::move(up);
  }
}

std::int64_t do_remove(const protocol::FileRequest& r, int& error) {
  const auto slash = r.path.rfind('/');
  const std::string parent = slash == 0 ? "/" : r.path.substr(0, slash);
  const std::string name = r.path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    error = EINVAL;
    return 0;
  }
  const int fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    error = errno;
    return 0;
  }
  error = remove_tree(fd, name.c_str());
  ::close(fd);
  return 0;
}

}  // namespace

void serve_file_request(protocol::Request kind, const protocol::FileRequest& request, const std::vector<int>& fds,
                        const Identity& who) {
  const int status = fds.back();
  const pid_t pid = ::fork();
  if (pid < 0) {
    report(status, protocol::Status::done, errno);
    return;
  }
  if (pid > 0) return;  // reaped by the init's loop like any other child

  // Only this request's fds stay open: not the engine's socket, not another
  // command's status pipe.
  int next = 3;
  std::vector<int> keep(fds.begin(), fds.end());
  std::sort(keep.begin(), keep.end());
  for (int fd : keep) {
    if (fd > next) ::syscall(SYS_close_range, next, fd - 1, 0);
    next = fd + 1;
  }
  ::syscall(SYS_close_range, next, ~0u, 0);

  ::signal(SIGPIPE, SIG_IGN);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int error = 0;
  std::int64_t amount = 0;
  // Changing the file system ids resets dumpability to the host's
  // fs.suid_dumpable, which may be 1: nothing inside may ptrace or read
  // this helper, whatever the host says.
  if (caps::act_as_user(who.uid, who.gid) != 0 || ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    error = errno;
  } else {
    switch (kind) {
      case protocol::Request::read: amount = do_read(request, fds[0], error); break;
      case protocol::Request::write: amount = do_write(request, fds[0], error); break;
      case protocol::Request::list: amount = do_list(request, fds[0], error); break;
      case protocol::Request::remove: amount = do_remove(request, error); break;
      default: error = EINVAL; break;
    }
  }
  if (fds.size() > 1) ::close(fds[0]);  // the data pipe ends before the answer
  report(status, protocol::Status::done, error, amount);
  ::_exit(0);
}

}  // namespace mayura::init
