#include "udp_echo.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "bound_socket.hpp"
#include "mayura/netfilter/io_thread.hpp"

namespace mayura::testing {

namespace asio = boost::asio;
using asio::ip::udp;

struct UdpEcho::State : std::enable_shared_from_this<UdpEcho::State> {
  explicit State(asio::io_context& context) : io(context), socket(context) {}

  void receive() {
    socket.async_wait(udp::socket::wait_read, [self = shared_from_this()](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted || !self->socket.is_open()) return;
      while (self->echo_one()) {
      }
      self->receive();
    });
  }

  // Echoes one waiting datagram from the address it was sent to: the socket
  // is bound to them all, and a reply from another one (the kernel's choice
  // for the route back) would be dropped by a connected client.
  bool echo_one() {
    const int fd = socket.native_handle();
    sockaddr_in sender{};
    iovec data{packet.data(), packet.size()};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(in_pktinfo))> control{};
    msghdr message{};
    message.msg_name = &sender;
    message.msg_namelen = sizeof sender;
    message.msg_iov = &data;
    message.msg_iovlen = 1;
    message.msg_control = control.data();
    message.msg_controllen = control.size();
    const ssize_t n = ::recvmsg(fd, &message, MSG_DONTWAIT);
    if (n < 0) return errno == EINTR;
    received.fetch_add(1);  // before the echo: whoever got it back sees it counted
    for (cmsghdr* c = CMSG_FIRSTHDR(&message); c != nullptr; c = CMSG_NXTHDR(&message, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
        in_pktinfo info{};
        std::memcpy(&info, CMSG_DATA(c), sizeof info);
        info.ipi_spec_dst = info.ipi_addr;  // reply from the address asked
        info.ipi_ifindex = 0;
        std::memcpy(CMSG_DATA(c), &info, sizeof info);
      }
    }
    data.iov_len = static_cast<std::size_t>(n);
    ::sendmsg(fd, &message, MSG_DONTWAIT);  // a full buffer drops it, as UDP may
    return true;
  }

  asio::io_context& io;
  udp::socket socket;
  std::array<char, 65536> packet{};
  std::atomic<std::uint64_t> received{0};
};

UdpEcho::UdpEcho(asio::io_context& io, int netns, std::uint16_t port) : state_(std::make_shared<State>(io)) {
  const int fd = bound_socket(netns, SOCK_DGRAM, port);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &one, sizeof one);
  boost::system::error_code ec;
  state_->socket.assign(udp::v4(), fd, ec);
  if (ec) {
    ::close(fd);
    throw std::runtime_error("serving UDP " + std::to_string(port) + ": " + ec.message());
  }
  asio::post(io, [s = state_] { s->receive(); });
}

UdpEcho::~UdpEcho() {
  netfilter::run_and_wait(state_->io, [s = state_] {
    boost::system::error_code ignored;
    s->socket.close(ignored);
  });
}

std::uint64_t UdpEcho::received() const { return state_->received.load(); }

}  // namespace mayura::testing
