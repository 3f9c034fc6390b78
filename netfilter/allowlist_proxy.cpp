#include "mayura/netfilter/allowlist_proxy.hpp"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <list>
#include <boost/asio/post.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <cerrno>
#include <cstring>

#include "mayura/errors.hpp"
#include "mayura/netfilter/io_thread.hpp"
#include "mayura/netfilter/proxy_request.hpp"
#include "mayura/netfilter/sandbox_services.hpp"
#include "mayura/netfilter/splice.hpp"

namespace mayura::netfilter {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

// A sandbox gets this many proxied connections at once (a request head still
// arriving counts), and this many being opened; more are reset, so one
// sandbox cannot use up the engine's descriptors or its lookup threads. The
// engine as a whole has a budget too (Egress).
constexpr std::size_t kMaxConnections = 256;
constexpr std::size_t kMaxOpening = 16;
// After a failed accept (out of descriptors), a pause before the next.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);
// A client that does not finish its request head in this time is dropped.
constexpr auto kHeadTimeout = std::chrono::seconds(30);

struct Destination {
  std::string name;
  std::uint16_t port = 0;
};

tcp::acceptor listen_in(asio::io_context& io, int netns, std::uint16_t port) {
  UniqueFd fd(bound_socket_in(netns, SOCK_STREAM, kServiceAddress, port, "the proxy on port " + std::to_string(port)));
  tcp::acceptor acceptor(io);
  boost::system::error_code ec;
  acceptor.assign(tcp::v4(), fd.get(), ec);
  if (ec) throw SandboxError(Reason::INTERNAL, "serving the proxy's socket: " + ec.message());
  fd.release();  // the acceptor's now
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    throw SandboxError(Reason::INTERNAL,
                       "listening on the sandbox's proxy port " + std::to_string(port) + ": " + ec.message());
  return acceptor;
}

// Where the sandbox meant to connect before nftables sent it here.
std::optional<tcp::endpoint> original_destination(tcp::socket& s) {
  sockaddr_in original{};
  socklen_t length = sizeof original;
  if (::getsockopt(s.native_handle(), SOL_IP, SO_ORIGINAL_DST, &original, &length) != 0) return std::nullopt;
  return tcp::endpoint(asio::ip::address_v4(ntohl(original.sin_addr.s_addr)), ntohs(original.sin_port));
}

std::string status_response(int status, const std::string& text) {
  const char* phrase = status == 403   ? "Forbidden"
                       : status == 400 ? "Bad Request"
                       : status == 431 ? "Request Header Fields Too Large"
                       : status == 502 ? "Bad Gateway"
                       : status == 503 ? "Service Unavailable"
                       : status == 505 ? "HTTP Version Not Supported"
                                       : "Error";
  const std::string body = "mayura: " + text + "\n";
  return "HTTP/1.1 " + std::to_string(status) + " " + phrase +
         "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

struct AllowlistProxy::State : std::enable_shared_from_this<AllowlistProxy::State> {
  State(asio::io_context& context, std::shared_ptr<AllowlistPolicy> p, Egress& e)
      : io(context), transparent(context), http(context), policy(std::move(p)), egress(e) {}

  // One accepted connection's place in the sandbox's and the engine's
  // budgets, given back when the last thing holding it (the request head's
  // reader, the lookup, the splice) is gone.
  struct Ticket {
    explicit Ticket(std::shared_ptr<State> s) : state(std::move(s)) { state->open_count.fetch_add(1); }
    ~Ticket() {
      state->open_count.fetch_sub(1);
      state->egress.give_back_connection();
    }
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    std::shared_ptr<State> state;
  };

  void accept(tcp::acceptor& acceptor, bool is_transparent) {
    acceptor.async_accept([self = shared_from_this(), &acceptor, is_transparent](const boost::system::error_code& ec,
                                                                                 tcp::socket client) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
      if (ec) return self->pause_then_accept(acceptor, is_transparent);
      if (self->open_count.load() >= kMaxConnections || !self->egress.take_connection()) {
        self->refused.fetch_add(1);
        reset(client);
      } else {
        auto ticket = std::make_shared<Ticket>(self);
        if (is_transparent) {
          self->serve_transparent(std::move(client), ticket);
        } else {
          self->serve_http(std::move(client), std::move(ticket));
        }
      }
      self->accept(acceptor, is_transparent);
    });
  }

  void pause_then_accept(tcp::acceptor& acceptor, bool is_transparent) {
    auto timer = std::make_shared<asio::steady_timer>(io, kAcceptPause);
    timer->async_wait([self = shared_from_this(), timer, &acceptor, is_transparent](const boost::system::error_code&) {
      if (!self->stopped) self->accept(acceptor, is_transparent);
    });
  }

  bool allowed(const std::string& name, std::uint16_t port) const { return policy->allowlist()->allows(name, port); }

  void serve_transparent(tcp::socket client, const std::shared_ptr<Ticket>& ticket) {
    const auto original = original_destination(client);
    std::optional<std::string> name;
    if (original && original->address().is_v4())
      name = policy->addresses().name_of(original->address().to_v4().to_uint());
    if (!name || !allowed(*name, original->port())) {
      refused.fetch_add(1);
      return reset(client);
    }
    auto shared_client = std::make_shared<tcp::socket>(std::move(client));
    open(Destination{*name, original->port()},
         [shared_client, ticket](std::optional<tcp::socket> upstream, const std::string&,
                                 const std::shared_ptr<State>& self, const Destination& d) {
           if (!upstream) return reset(*shared_client);
           self->join(std::move(*shared_client), std::move(*upstream), d, {}, ticket);
         });
  }

  void serve_http(tcp::socket client, std::shared_ptr<Ticket> ticket) {
    auto conn = std::make_shared<HttpClient>(std::move(client), io, std::move(ticket));
    std::erase_if(heads, [](const std::weak_ptr<HttpClient>& w) { return w.expired(); });
    heads.push_back(conn);
    conn->timer.expires_after(kHeadTimeout);
    conn->timer.async_wait([conn](const boost::system::error_code& ec) {
      if (!ec) reset(conn->socket);
    });
    read_head(conn);
  }

  struct HttpClient {
    HttpClient(tcp::socket s, asio::io_context& io, std::shared_ptr<Ticket> t)
        : socket(std::move(s)), ticket(std::move(t)), timer(io) {}
    tcp::socket socket;
    std::shared_ptr<Ticket> ticket;
    asio::steady_timer timer;
    std::string data;
    std::array<char, 4096> chunk{};
  };

  void read_head(const std::shared_ptr<HttpClient>& conn) {
    conn->socket.async_read_some(asio::buffer(conn->chunk),
                                 [self = shared_from_this(), conn](const boost::system::error_code& ec, std::size_t n) {
                                   if (ec) {
                                     conn->timer.cancel();
                                     return;
                                   }
                                   conn->data.append(conn->chunk.data(), n);
                                   const auto end = proxy_head_end(conn->data);
                                   if (!end) {
                                     if (conn->data.size() > kMaxProxyHead)
                                       return self->answer(conn, 431, "the request head is too large");
                                     return self->read_head(conn);
                                   }
                                   conn->timer.cancel();
                                   self->route(conn, conn->data.substr(0, *end), conn->data.substr(*end));
                                 });
  }

  void route(const std::shared_ptr<HttpClient>& conn, const std::string& head, const std::string& rest) {
    const ProxyParse parsed = parse_proxy_request(head);
    if (!parsed.request) return answer(conn, parsed.status, parsed.why);
    const ProxyRequest& r = *parsed.request;
    if (r.ip_literal) return answer(conn, 403, "addresses are not reachable from this sandbox, only allowed names");
    if (!allowed(r.host, r.port)) {
      return answer(conn, 403, r.host + ":" + std::to_string(r.port) + " is not in this sandbox's allowlist");
    }
    // A plain request goes upstream in origin form, then whatever the client
    // sent after its head; a tunnel starts with what follows CONNECT.
    std::string upstream_head = r.tunnel ? rest : r.upstream_head + rest;
    const bool tunnel = r.tunnel;
    open(Destination{r.host, r.port}, [conn, tunnel, upstream_head = std::move(upstream_head)](
                                          std::optional<tcp::socket> upstream, const std::string& why,
                                          const std::shared_ptr<State>& self, const Destination& d) mutable {
      if (!upstream) return self->answer(conn, 502, d.name + ": " + why);
      if (!tunnel)
        return self->join(std::move(conn->socket), std::move(*upstream), d, std::move(upstream_head), conn->ticket);
      auto established = std::make_shared<std::string>("HTTP/1.1 200 Connection established\r\n\r\n");
      auto shared_upstream = std::make_shared<tcp::socket>(std::move(*upstream));
      asio::async_write(conn->socket, asio::buffer(*established),
                        [self, conn, established, shared_upstream, d, upstream_head = std::move(upstream_head)](
                            const boost::system::error_code& ec, std::size_t) mutable {
                          if (ec) return;
                          self->join(std::move(conn->socket), std::move(*shared_upstream), d, std::move(upstream_head),
                                     conn->ticket);
                        });
    });
  }

  void answer(const std::shared_ptr<HttpClient>& conn, int status, const std::string& why) {
    if (status == 403) refused.fetch_add(1);
    auto text = std::make_shared<std::string>(status_response(status, why));
    asio::async_write(conn->socket, asio::buffer(*text), [conn, text](const boost::system::error_code&, std::size_t) {
      boost::system::error_code ignored;
      conn->socket.shutdown(tcp::socket::shutdown_both, ignored);
      conn->socket.close(ignored);
    });
  }

  using Opened = std::function<void(std::optional<tcp::socket>, const std::string& why, const std::shared_ptr<State>&,
                                    const Destination&)>;
  void open(const Destination& d, Opened then) {
    if (pending.load() >= kMaxOpening) {
      refused.fetch_add(1);
      return then(std::nullopt, "too many connections are being opened at once", shared_from_this(), d);
    }
    pending.fetch_add(1);
    egress.connect(io, this, d.name, d.port,
                   [self = shared_from_this(), d, then = std::move(then)](std::optional<tcp::socket> upstream,
                                                                          const std::string& why) mutable {
                     self->pending.fetch_sub(1);
                     // The policy may have changed, or the proxy stopped, while it resolved.
                     if (self->stopped || !self->allowed(d.name, d.port)) upstream.reset();
                     if (!upstream) self->refused.fetch_add(1);
                     then(std::move(upstream), self->stopped ? "the sandbox's network changed" : why, self, d);
                   });
  }

  void join(tcp::socket client, tcp::socket upstream, const Destination& d, std::string head,
            std::shared_ptr<Ticket> ticket) {
    auto splice = std::make_shared<Splice>(std::move(client), std::move(upstream));
    // Checked again: a CONNECT's "200" was written since the last check, and
    // a policy change in between would not have seen this connection.
    if (stopped || !allowed(d.name, d.port)) return splice->cut();
    if (!splices.add(splice, d)) return;
    splice->hold(std::move(ticket));
    allowed_count.fetch_add(1);
    splice->start(std::move(head));
  }

  void stop() {
    stopped = true;
    egress.forget(this);  // its lookups not yet started never will be
    boost::system::error_code ignored;
    transparent.close(ignored);
    http.close(ignored);
    for (const auto& w : heads) {
      if (auto conn = w.lock()) {
        conn->timer.cancel();
        conn->socket.close(ignored);
      }
    }
    heads.clear();
    splices.stop();
  }

  asio::io_context& io;
  tcp::acceptor transparent;
  tcp::acceptor http;
  std::shared_ptr<AllowlistPolicy> policy;
  Egress& egress;
  SpliceSet<Destination> splices;
  std::atomic<std::size_t> open_count{0};      // connections holding a ticket
  std::atomic<std::size_t> pending{0};         // being opened upstream
  std::list<std::weak_ptr<HttpClient>> heads;  // request heads being read; only on the io thread
  bool stopped = false;                        // only on the io thread
  std::atomic<std::uint64_t> allowed_count{0};
  std::atomic<std::uint64_t> refused{0};
};

AllowlistProxy::AllowlistProxy(asio::io_context& io, int netns, std::shared_ptr<AllowlistPolicy> policy, Egress& egress)
    : state_(std::make_shared<State>(io, std::move(policy), egress)) {
  state_->transparent = listen_in(io, netns, kTransparentPort);
  state_->http = listen_in(io, netns, kProxyPort);
  asio::post(io, [s = state_] {
    s->accept(s->transparent, true);
    s->accept(s->http, false);
  });
}

AllowlistProxy::~AllowlistProxy() {
  run_and_wait(state_->io, [s = state_] { s->stop(); });
}

void AllowlistProxy::recheck() {
  run_and_wait(state_->io, [s = state_] {
    const auto now = s->policy->allowlist();
    s->splices.cut_if([&](const Destination& d) { return !now->allows(d.name, d.port); });
  });
}

AllowlistProxy::Counts AllowlistProxy::counts() const { return {state_->allowed_count.load(), state_->refused.load()}; }

}  // namespace mayura::netfilter
