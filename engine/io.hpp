#pragma once
// Small I/O helpers of the engine side.

#include <cstddef>
#include <string>

#include "mayura/base/unique_fd.hpp"

namespace mayura::io {

struct Pipe {
  UniqueFd read;
  UniqueFd write;
};

// A close-on-exec pipe; the engine's end non-blocking.
Pipe make_pipe(bool nonblocking_read, bool nonblocking_write);

// write(2) that never raises SIGPIPE in the host process: a sandbox that
// closes its end early must not kill the host. Returns bytes written, or -1
// with errno (EPIPE when the reader is gone).
long write_no_sigpipe(int fd, const char* data, std::size_t size) noexcept;

// An eventfd that a stop_callback signals, so a poll loop wakes on cancel.
UniqueFd make_eventfd();
void signal_eventfd(int fd) noexcept;

}  // namespace mayura::io
