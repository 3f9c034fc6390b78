#pragma once
// What every request to a sandbox's init shares on the engine side: the
// errors it ends in, its bounds, and waking a poll loop when the caller
// cancels.

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stop_token>
#include <string>

#include "io.hpp"
#include "mayura/errors.hpp"
#include "mayura/types.hpp"
#include "protocol.hpp"

namespace mayura::native {

using Clock = std::chrono::steady_clock;

// A request the init does not take within this long fails.
constexpr int kSendTimeoutMs = 5000;

[[noreturn]] inline void gone() { throw SandboxError(Reason::GONE, "the sandbox has ended"); }
[[noreturn]] inline void cancelled() { throw SandboxError(Reason::CANCELLED, "the operation was cancelled"); }

inline Reason reason_for(int error) {
  switch (error) {
    case ENOENT: return Reason::NOT_FOUND;
    case EACCES:
    case EPERM:
    case EROFS:
    case EBUSY: return Reason::PERMISSION_DENIED;
    case EFBIG:
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE: return Reason::LIMIT_REACHED;
    case EISDIR:
    case ENOTDIR:
    case EINVAL:
    case ENAMETOOLONG:
    case ELOOP:
    case ENOTEMPTY:
    case EEXIST: return Reason::INVALID_INPUT;
    default: return Reason::INTERNAL;
  }
}

[[noreturn]] inline void file_error(const char* what, const std::string& path, int error) {
  std::string message = std::string(what) + " " + path + ": ";
  switch (error) {
    case EFBIG: message += "the file is larger than the limit"; break;
    case EINVAL: message += "not a regular file"; break;
    default: message += std::strerror(error); break;
  }
  throw SandboxError(reason_for(error), message);
}

inline int ms_until(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 60000));
}

// Reads what is there; false at end of stream.
inline bool drain(int fd, std::string& sink, std::size_t limit, bool& truncated, const OutputCallback& callback) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EINTR;
    const std::string_view chunk(buf, static_cast<std::size_t>(n));
    if (callback) callback(chunk);
    const std::size_t room = sink.size() < limit ? limit - sink.size() : 0;
    if (chunk.size() > room) truncated = true;
    sink.append(chunk.substr(0, std::min(room, chunk.size())));
  }
}

// Reads one status record; false at end of stream (the init is gone).
inline bool read_status(int fd, protocol::Status& status) {
  for (;;) {
    const ssize_t n = ::read(fd, &status, sizeof status);
    if (n == sizeof status) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, -1);
      continue;
    }
    return false;
  }
}

// Wakes a poll loop when the caller cancels.
struct CancelWatch {
  struct Wake {
    int fd;
    void operator()() const noexcept { io::signal_eventfd(fd); }
  };
  UniqueFd event = io::make_eventfd();
  std::unique_ptr<std::stop_callback<Wake>> callback;
  explicit CancelWatch(const std::stop_token& token) {
    if (token.stop_possible()) callback = std::make_unique<std::stop_callback<Wake>>(token, Wake{event.get()});
  }
};


}  // namespace mayura::native
