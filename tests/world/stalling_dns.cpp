#include "stalling_dns.hpp"

#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>
#include <array>
#include <atomic>

#include "mayura/netfilter/dns_message.hpp"
#include "mayura/netfilter/io_thread.hpp"

namespace mayura::testing {

namespace asio = boost::asio;
using asio::ip::udp;
namespace dns = netfilter::dns;

namespace {

bool stalls(const std::string& name) {
  const std::string suffix = "stall.test";
  return name.size() >= suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

struct StallingDns::State : std::enable_shared_from_this<StallingDns::State> {
  State(asio::io_context& context, udp::socket s, Resolve r)
      : io(context), socket(std::move(s)), resolve(std::move(r)) {}

  void receive() {
    socket.async_receive_from(asio::buffer(packet), sender,
                              [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                                if (ec == asio::error::operation_aborted || !self->socket.is_open()) return;
                                if (!ec) self->answer(std::string_view(self->packet.data(), n));
                                self->receive();
                              });
  }

  void answer(std::string_view query_packet) {
    const auto query = dns::parse_query(query_packet);
    if (query && stalls(query->name)) {
      dropped.fetch_add(1);
      return;
    }
    std::string reply;
    if (!query) {
      reply = dns::error(query_packet, query, dns::Rcode::format_error);
    } else {
      const auto address = resolve(query->name);
      if (!address) reply = dns::error(query_packet, query, dns::Rcode::name_error);
      else reply = dns::answer(query_packet, *query, query->type == dns::kTypeA ? address : std::nullopt, 60);
    }
    boost::system::error_code ignored;
    socket.send_to(asio::buffer(reply), sender, 0, ignored);
  }

  asio::io_context& io;
  udp::socket socket;
  Resolve resolve;
  std::array<char, 4096> packet{};
  udp::endpoint sender;
  std::atomic<std::uint64_t> dropped{0};
};

StallingDns::StallingDns(asio::io_context& io, int netns, std::uint32_t address, Resolve resolve)
    : state_(std::make_shared<State>(
          io, netfilter::bound_udp_socket_in(io, netns, address, 53, "the stalling DNS server"), std::move(resolve))) {
  asio::post(io, [s = state_] { s->receive(); });
}

StallingDns::~StallingDns() {
  netfilter::run_and_wait(state_->io, [s = state_] {
    boost::system::error_code ignored;
    s->socket.close(ignored);
  });
}

std::uint64_t StallingDns::dropped() const { return state_->dropped.load(); }

}  // namespace mayura::testing
