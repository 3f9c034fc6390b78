#include "proc_sys.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "mayura/errors.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::netfilter {
namespace {

[[noreturn]] void fail(const std::string& step, const std::string& path, int error) {
  throw SandboxError(Reason::INTERNAL, step + " " + path + ": " + std::strerror(error));
}

}  // namespace

bool set_proc_sys(const std::string& path, const std::string& value) {
  const UniqueFd file(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (file.get() < 0) {
    if (errno == ENOENT) return false;
    fail("opening", path, errno);
  }
  char current[64] = {};
  const ssize_t n = ::read(file.get(), current, sizeof current - 1);
  if (n < 0) fail("reading", path, errno);
  std::string held(current, static_cast<std::size_t>(n));
  while (!held.empty() && (held.back() == '\n' || held.back() == ' ')) held.pop_back();
  if (held == value) return true;
  // A /proc/sys file takes the whole value in one write at offset 0.
  const std::string line = value + "\n";
  const ssize_t written = ::pwrite(file.get(), line.data(), line.size(), 0);
  if (written < 0) fail("writing", path, errno);
  if (static_cast<std::size_t>(written) != line.size()) fail("writing", path, EIO);
  return true;
}

}  // namespace mayura::netfilter
