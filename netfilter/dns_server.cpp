#include "mayura/netfilter/dns_server.hpp"

#include <array>
#include <atomic>
#include <boost/asio/ip/udp.hpp>
#include <boost/asio/post.hpp>

#include "mayura/netfilter/dns_message.hpp"
#include "mayura/netfilter/io_thread.hpp"

namespace mayura::netfilter {
namespace {

namespace asio = boost::asio;
using asio::ip::udp;

constexpr std::uint32_t kTtl = 60;

}  // namespace

struct DnsServer::State : std::enable_shared_from_this<DnsServer::State> {
  State(asio::io_context& context, udp::socket s, Resolve r, Unanswered u)
      : io(context), socket(std::move(s)), resolve(std::move(r)), unanswered(std::move(u)) {}

  void receive() {
    socket.async_receive_from(asio::buffer(packet), sender,
                              [self = shared_from_this()](const boost::system::error_code& ec, std::size_t n) {
                                if (ec == asio::error::operation_aborted || !self->socket.is_open()) return;
                                if (!ec) self->answer(std::string_view(self->packet.data(), n));
                                self->receive();
                              });
  }

  void answer(std::string_view query_packet) {
    if (query_packet.size() < 2) return;  // not even an id to answer
    const auto query = dns::parse_query(query_packet);
    if (query && unanswered && unanswered(query->name)) {
      dropped.fetch_add(1);
      return;
    }
    std::string reply;
    if (!query) {
      reply = dns::error(query_packet, query, dns::Rcode::format_error);
    } else if (query->klass != dns::kClassIN) {
      reply = dns::error(query_packet, query, dns::Rcode::not_implemented);
    } else if (const auto address = resolve(query->name)) {
      reply = dns::answer(query_packet, *query, query->type == dns::kTypeA ? address : std::nullopt, kTtl);
    } else {
      reply = dns::error(query_packet, query, dns::Rcode::name_error);
    }
    answered.fetch_add(1);              // before the send: whoever reads the answer sees it counted
    boost::system::error_code ignored;  // a full socket buffer drops the answer; the client asks again
    socket.send_to(asio::buffer(reply), sender, 0, ignored);
  }

  asio::io_context& io;
  udp::socket socket;
  Resolve resolve;
  Unanswered unanswered;
  std::array<char, 4096> packet{};
  udp::endpoint sender;
  std::atomic<std::uint64_t> answered{0};
  std::atomic<std::uint64_t> dropped{0};
};

DnsServer::DnsServer(asio::io_context& io, int netns, std::uint32_t address, std::uint16_t port, Resolve resolve,
                     Unanswered unanswered)
    : state_(std::make_shared<State>(io, bound_udp_socket_in(io, netns, address, port, "the DNS server"),
                                     std::move(resolve), std::move(unanswered))) {
  asio::post(io, [s = state_] { s->receive(); });
}

DnsServer::~DnsServer() {
  run_and_wait(state_->io, [s = state_] {
    boost::system::error_code ignored;
    s->socket.close(ignored);
  });
}

std::uint64_t DnsServer::answered() const { return state_->answered.load(); }
std::uint64_t DnsServer::dropped() const { return state_->dropped.load(); }

}  // namespace mayura::netfilter
