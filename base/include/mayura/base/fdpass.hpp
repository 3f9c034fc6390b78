#pragma once
// Messages with file descriptors over a SOCK_SEQPACKET unix socket.

#include <cstddef>
#include <string>
#include <vector>

namespace mayura::fdpass {

constexpr std::size_t kMaxMessage = 512 * 1024;
constexpr std::size_t kMaxFds = 128;  // a stored image's layers travel in one message

// Sends one message with `fds` attached. 0, or -1 with errno. With a
// timeout (ms, >= 0) it never blocks longer than that (ETIMEDOUT).
int send(int sock, const std::string& bytes, const std::vector<int>& fds, int timeout_ms = -1);

// Receives one message; the fds that came with it are owned by the caller
// (close-on-exec). 1 on a message, 0 on end of stream, -1 with errno.
int receive(int sock, std::string& bytes, std::vector<int>& fds);

}  // namespace mayura::fdpass
