#pragma once
// Reading and writing one cgroup interface file, relative to a directory fd.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <sstream>
#include <string>

#include "sys_error.hpp"

namespace mayura::cgroups {

// 0 or the errno. One write: cgroup files take a value per write.
inline int write_at(int dir, const char* file, const std::string& value) noexcept {
  const int fd = ::openat(dir, file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno;
  const ssize_t n = ::write(fd, value.data(), value.size());
  const int error = n == static_cast<ssize_t>(value.size()) ? 0 : (n < 0 ? errno : EIO);
  ::close(fd);
  return error;
}

// write_at, failing with the step it was: setting the sandbox's FILE.
inline void set_file(int dir, const char* file, const std::string& value) {
  const int error = write_at(dir, file, value);
  if (error) fail_step(std::string("setting the sandbox's ") + file + " to " + value, error);
}

// The whole of an open file, read again from its start (cgroup files give
// their current values on every read from offset 0).
inline std::string read_from(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(text.size()))) > 0 && text.size() < (1u << 20)) {
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

// A small file's whole contents by path ("" if it cannot be read).
inline std::string read_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text = read_from(fd);
  ::close(fd);
  return text;
}

inline std::string read_at(int dir, const char* file) {
  const int fd = ::openat(dir, file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text = read_from(fd);
  ::close(fd);
  return text;
}

// The number after `key` in a "key value" file (memory.events, memory.oom_control).
inline std::uint64_t keyed_value(const std::string& text, const std::string& key) {
  std::istringstream lines(text);
  std::string k;
  std::uint64_t v = 0;
  while (lines >> k >> v) {
    if (k == key) return v;
  }
  return 0;
}

}  // namespace mayura::cgroups
