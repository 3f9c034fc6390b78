#include "mayura/netfilter/egress.hpp"

#include <sys/resource.h>

#include <algorithm>
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

Egress::Egress(Options options) : options_(std::move(options)), upstream_(options_.dns_servers, options_.dns_wait) {}

Egress::~Egress() {
  {
    std::lock_guard lock(shares_mutex_);
    stopping_ = true;
  }
  lookups_.join();
}

void Egress::forget(Caller caller) {
  std::lock_guard lock(shares_mutex_);
  const auto it = shares_.find(caller);
  if (it != shares_.end()) it->second.waiting.clear();
}

bool Egress::take_connection() {
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  // What is left after the engine's own needs, six per connection.
  const long budget = std::max(64L, (static_cast<long>(std::min<rlim_t>(files.rlim_cur, 1u << 20)) - 512) / 6);
  if (connections_.fetch_add(1) >= budget) {
    connections_.fetch_sub(1);
    return false;
  }
  return true;
}

void Egress::give_back_connection() { connections_.fetch_sub(1); }

std::vector<asio::ip::address> Egress::own_addresses() {
  // Read again every second: cheap enough per connection burst, fresh
  // enough for an address the host gains.
  std::lock_guard lock(own_mutex_);
  const auto now = std::chrono::steady_clock::now();
  if (now >= own_until_) {
    own_ = host_addresses();
    own_until_ = now + std::chrono::seconds(1);
  }
  return own_;
}

std::vector<asio::ip::address> Egress::permitted(const std::vector<asio::ip::address>& resolved, std::string& why) {
  const auto own = own_addresses();
  std::vector<asio::ip::address> out;
  for (const auto& a : resolved) {
    if (may_connect(a, options_.rules, own)) out.push_back(a);
  }
  if (resolved.empty()) why = "the name does not resolve";
  else if (out.empty()) why = "the name resolves only to addresses sandboxes may not reach";
  return out;
}

void Egress::look_up(Caller caller, std::function<void()> work) {
  std::lock_guard lock(shares_mutex_);
  Share& share = shares_[caller];
  if (share.running >= kLookupsPerCaller) return share.waiting.push_back(std::move(work));
  ++share.running;
  start_locked(caller, std::move(work));
}

void Egress::start_locked(Caller caller, std::function<void()> work) {
  asio::post(lookups_, [this, caller, work = std::move(work)] {
    work();
    finished(caller);
  });
}

void Egress::finished(Caller caller) {
  std::lock_guard lock(shares_mutex_);
  const auto it = shares_.find(caller);
  if (it == shares_.end()) return;
  Share& share = it->second;
  if (!share.waiting.empty() && !stopping_) {
    // Its next lookup takes the place this one leaves.
    std::function<void()> next = std::move(share.waiting.front());
    share.waiting.pop_front();
    return start_locked(caller, std::move(next));
  }
  if (--share.running == 0) shares_.erase(it);
}

void Egress::connect(asio::io_context& io, Caller caller, const std::string& name, std::uint16_t port, Connected done) {
  auto attempt = [&io, port](std::vector<asio::ip::address> addresses, const std::string& why, Connected then) {
    if (addresses.empty()) return then(std::nullopt, why);
    std::make_shared<Attempt>(io, std::move(addresses), port, std::move(then))->next();
  };
  // A name looked up a moment ago connects at once, on this thread; every
  // address is checked again either way.
  if (auto kept = upstream_.cached(name)) {
    std::string why;
    auto addresses = permitted(*kept, why);
    return asio::post(io, [attempt, addresses = std::move(addresses), why, done = std::move(done)]() mutable {
      attempt(std::move(addresses), why, std::move(done));
    });
  }
  look_up(caller, [this, &io, name, attempt, done = std::move(done)]() mutable {
    std::string why;
    auto addresses = permitted(upstream_.lookup(name), why);
    asio::post(io, [attempt, addresses = std::move(addresses), why, done = std::move(done)]() mutable {
      attempt(std::move(addresses), why, std::move(done));
    });
  });
}

void Egress::forward_dns(asio::io_context& io, Caller caller, std::string query,
                         std::function<void(std::optional<std::string>)> done) {
  look_up(caller, [this, &io, query = std::move(query), done = std::move(done)]() mutable {
    auto answer = upstream_.forward(query);
    asio::post(io, [answer = std::move(answer), done = std::move(done)]() mutable { done(std::move(answer)); });
  });
}

}  // namespace mayura::netfilter
