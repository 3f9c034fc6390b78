#include "mayura/base/fdpass.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>

namespace mayura::fdpass {

int send(int sock, const std::string& bytes, const std::vector<int>& fds, int timeout_ms) {
  if (fds.size() > kMaxFds || bytes.size() > kMaxMessage) {
    errno = EMSGSIZE;
    return -1;
  }
  iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  const int flags = MSG_NOSIGNAL | (timeout_ms >= 0 ? MSG_DONTWAIT : 0);
  for (;;) {
    const ssize_t n = ::sendmsg(sock, &msg, flags);
    if (n >= 0) return 0;
    if (errno == EINTR) continue;
    if (errno != EAGAIN || timeout_ms < 0) return -1;
    pollfd p{sock, POLLOUT, 0};
    const int r = ::poll(&p, 1, timeout_ms);
    if (r == 0) {
      errno = ETIMEDOUT;
      return -1;
    }
    if (r < 0 && errno != EINTR) return -1;
  }
}

int receive(int sock, std::string& bytes, std::vector<int>& fds) {
  fds.clear();
  // The message's real size first, so the buffer is only as large as it
  // (zero-filling the largest possible message costs more than the peek).
  char probe;
  ssize_t size;
  do {
    size = ::recv(sock, &probe, 1, MSG_PEEK | MSG_TRUNC);
  } while (size < 0 && errno == EINTR);
  if (size < 0) return -1;
  bytes.resize(static_cast<std::size_t>(std::min<ssize_t>(std::max<ssize_t>(size, 1), kMaxMessage)));
  iovec iov{bytes.data(), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
  }
  if (n == 0 && fds.empty()) return 0;
  // A truncated message or truncated fd list is malformed: drop what came.
  if (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) {
    for (int fd : fds) ::close(fd);
    fds.clear();
    errno = EMSGSIZE;
    return -1;
  }
  bytes.resize(static_cast<std::size_t>(n));
  return 1;
}

}  // namespace mayura::fdpass
