#include "bound_socket.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "mayura/netfilter/io_thread.hpp"

namespace mayura::testing {

int bound_socket(int netns, int type, std::uint16_t port) {
  const std::string what = (type == SOCK_STREAM ? "TCP " : "UDP ") + std::to_string(port);
  const int fd = netfilter::socket_in(netns, AF_INET, type | SOCK_NONBLOCK);
  if (fd < 0) throw std::runtime_error("making the socket for " + what + ": " + std::strerror(errno));
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_port = htons(port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0 ||
      (type == SOCK_STREAM && ::listen(fd, SOMAXCONN) != 0)) {
    const int e = errno;
    ::close(fd);
    throw std::runtime_error("listening on " + what + " in the world: " + std::strerror(e));
  }
  return fd;
}

}  // namespace mayura::testing
