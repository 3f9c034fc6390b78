#include "mayura/netfilter/dns_forwarder.hpp"

#include <array>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>

#include "mayura/netfilter/io_thread.hpp"
#include "mayura/netfilter/sandbox_services.hpp"

namespace mayura::netfilter {

namespace asio = boost::asio;
using asio::ip::udp;

// Queries of one sandbox being answered at once; more are dropped (the
// client asks again), so one sandbox cannot hold every lookup thread.
constexpr std::size_t kMaxOutstanding = 16;

struct DnsForwarder::State : std::enable_shared_from_this<DnsForwarder::State> {
  State(asio::io_context& context, udp::socket s, Egress& e) : io(context), socket(std::move(s)), egress(e) {}

  void receive() {
    socket.async_receive_from(asio::buffer(packet), sender,
                              [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                                if (ec == asio::error::operation_aborted || !self->socket.is_open()) return;
                                if (!ec && n >= 12 && self->outstanding < kMaxOutstanding)
                                  self->forward(std::string(self->packet.data(), n));
                                self->receive();
                              });
  }

  void forward(std::string query) {
    ++outstanding;
    egress.forward_dns(io, this, std::move(query),
                       [self = shared_from_this(), to = sender](std::optional<std::string> answer) {
                         --self->outstanding;
                         if (!answer || !self->socket.is_open()) return;
                         boost::system::error_code ignored;
                         self->socket.send_to(asio::buffer(*answer), to, 0, ignored);
                       });
  }

  asio::io_context& io;
  udp::socket socket;
  Egress& egress;
  std::array<char, 4096> packet{};
  udp::endpoint sender;
  std::size_t outstanding = 0;  // only on the io thread
};

DnsForwarder::DnsForwarder(asio::io_context& io, int netns, Egress& egress)
    : state_(std::make_shared<State>(io, bound_udp_socket_in(io, netns, kServiceAddress, kDnsPort, "the DNS forwarder"),
                                     egress)) {
  asio::post(io, [s = state_] { s->receive(); });
}

DnsForwarder::~DnsForwarder() {
  run_and_wait(state_->io, [s = state_] {
    boost::system::error_code ignored;
    s->socket.close(ignored);
    s->egress.forget(s.get());  // its lookups not yet started never will be
  });
}

}  // namespace mayura::netfilter
