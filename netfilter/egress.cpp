#include "mayura/netfilter/egress.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <memory>

namespace mayura::netfilter {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// How long one address may take to answer before the next one is tried.
constexpr auto kConnectTimeout = std::chrono::seconds(10);

// Tries `addresses` in order; the first that answers wins.
struct Attempt : std::enable_shared_from_this<Attempt> {
  Attempt(asio::io_context& io, std::vector<asio::ip::address> a, std::uint16_t p, Egress::Connected d)
      : socket(io), timer(io), addresses(std::move(a)), port(p), done(std::move(d)) {}

  void next() {
    if (index >= addresses.size()) return done(std::nullopt, "no address of it answered");
    const tcp::endpoint target(addresses[index++], port);
    boost::system::error_code ignored;
    socket.close(ignored);
    timer.expires_after(kConnectTimeout);
    timer.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
      if (!ec) {
        boost::system::error_code ignored2;
        self->socket.close(ignored2);  // the connect below ends with an error and tries the next
      }
    });
    socket.async_connect(target, [self = shared_from_this()](const boost::system::error_code& ec) {
      self->timer.cancel();
      if (ec) return self->next();
      self->done(std::move(self->socket), "");
    });
  }

  tcp::socket socket;
  asio::steady_timer timer;
  std::vector<asio::ip::address> addresses;
  std::size_t index = 0;
  std::uint16_t port;
  Egress::Connected done;
};

}  // namespace

Egress::Egress(Options options) : options_(std::move(options)), upstream_(options_.dns_servers) {}

Egress::~Egress() { lookups_.join(); }

void Egress::connect(asio::io_context& io, const std::string& name, std::uint16_t port, Connected done) {
  asio::post(lookups_, [this, &io, name, port, done = std::move(done)]() mutable {
    const auto resolved = upstream_.lookup(name);
    const auto own = host_addresses();
    std::vector<asio::ip::address> permitted;
    for (const auto& a : resolved) {
      if (may_connect(a, options_.rules, own)) permitted.push_back(a);
    }
    std::string why;
    if (resolved.empty()) why = "the name does not resolve";
    else if (permitted.empty()) why = "the name resolves only to addresses sandboxes may not reach";
    asio::post(io, [&io, permitted = std::move(permitted), port, why, done = std::move(done)]() mutable {
      if (permitted.empty()) return done(std::nullopt, why);
      std::make_shared<Attempt>(io, std::move(permitted), port, std::move(done))->next();
    });
  });
}

void Egress::forward_dns(asio::io_context& io, std::string query, std::function<void(std::optional<std::string>)> done) {
  asio::post(lookups_, [this, &io, query = std::move(query), done = std::move(done)]() mutable {
    auto answer = upstream_.forward(query);
    asio::post(io, [answer = std::move(answer), done = std::move(done)]() mutable { done(std::move(answer)); });
  });
}

}  // namespace mayura::netfilter
