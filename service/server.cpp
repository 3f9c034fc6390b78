// The server: accept loops on a Unix socket and on TLS, one coroutine per
// connection that reads a request (its head, then a body bounded by what the
// route takes, each within its timeout), and answers it. Provider calls run
// on a small pool of blocking threads; an exec streams its output as NDJSON
// while it runs (exec_stream.cpp), and a client that goes away cancels it.

#include "mayura/service/server.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "command_attach.hpp"
#include "exec_stream.hpp"
#include "kept_sandboxes.hpp"
#include "server_state.hpp"
#include "status.hpp"
#include "mayura/runtime.hpp"

namespace mayura::service {
namespace {

constexpr std::size_t kHeaderLimit = 16 * 1024;

// A file call, and the reply it ends in. (Arguments by value, and no
// co_await in a condition: GCC 12's coroutines.)
awaitable<Reply> run_file_call(State* s, FileCall call, std::string body) {
  std::exception_ptr error;
  std::string data;
  std::vector<FileEntry> entries;
  const auto token = asio::as_tuple(use_awaitable);
  switch (call.kind) {
    case FileCall::Kind::read: {
      auto result = co_await call.sandbox.async_read_file(call.path, call.read, token);
      error = std::get<0>(result);
      data = std::move(std::get<1>(result));
      break;
    }
    case FileCall::Kind::write: {
      auto result = co_await call.sandbox.async_write_file(call.path, std::move(body), token);
      error = std::get<0>(result);
      break;
    }
    case FileCall::Kind::remove: {
      auto result = co_await call.sandbox.async_remove(call.path, token);
      error = std::get<0>(result);
      break;
    }
    case FileCall::Kind::list: {
      auto result = co_await call.sandbox.async_list(call.path, token);
      error = std::get<0>(result);
      entries = std::move(std::get<1>(result));
      break;
    }
  }
  co_return s->routes.file_reply(call, error, std::move(data), entries);
}

std::optional<Client> client_of_token(const State& s, const Request& req) {
  const auto auth = req[http::field::authorization];
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() <= kBearer.size() || auth.substr(0, kBearer.size()) != kBearer) return std::nullopt;
  const std::string_view token(auth.data() + kBearer.size(), auth.size() - kBearer.size());
  std::optional<Client> found;
  for (const auto& [known, name] : s.tokens) {
    // every token compared in full, so the time says nothing of which matched
    if (known.size() == token.size() && CRYPTO_memcmp(known.data(), token.data(), token.size()) == 0)
      found = Client{"token:" + name, false, std::nullopt};
  }
  return found;
}

// A connection's place in its listener's budget and the gauge, until it
// ends or is refused.
struct Count {
  State& s;
  std::atomic<std::size_t>& listener;
  bool counted = true;
  void end() {
    if (!std::exchange(counted, false)) return;
    --listener;
    --s.metrics.connections;
  }
  ~Count() { end(); }
};

// How long a connection past its client's share waits for its 503. A
// client that retries at once, in a loop, would otherwise cost the daemon
// a connection's work each time, without end (measured: four such loops
// made another tenant's p99 six times what it was alone).
constexpr std::chrono::seconds kRefusalPause{1};

// Refuses a connection past its client's share: 503 after kRefusalPause,
// out of the listener's budget meanwhile (the pause holds nobody else's
// place). Past as many paused refusals as its share, the connection is
// closed at once, without an answer: a client with many threads holds a
// bounded number of descriptors.
template <class Stream>
awaitable<void> refuse_past_share(Stream& stream, State& s, Count& count, const std::string& who, unsigned version) {
  count.end();
  ++s.metrics.share_refusals;
  const std::optional<PerClient::Lease> paused = s.refusals_per_client.take(who, s.per_client_cap());
  if (!paused) co_return;
  asio::steady_timer pause(co_await asio::this_coro::executor, kRefusalPause);
  co_await pause.async_wait(asio::as_tuple(use_awaitable));
  Reply reply = error_reply(503, Reason::LIMIT_REACHED, "too many connections of this client at once");
  reply.retry_after_s = static_cast<unsigned>(kRefusalPause.count());
  co_await write_reply(stream, s, std::move(reply), version, false);
}

// Serves one connection's requests in turn. `peer`: the Unix client, known
// from the socket; none over TLS, where each request's token names it.
// `address_share`: what the connection holds of its client's share from
// before (a TLS address's, taken before the handshake), until it ends.
template <class Stream>
awaitable<void> serve(State* s, Stream stream, std::optional<Client> peer, std::atomic<std::size_t>* listener,
                      [[maybe_unused]] std::optional<PerClient::Lease> address_share) {
  Count count{*s, *listener};
  ++s->metrics.connections;
  ++s->metrics.connections_accepted;
  beast::flat_buffer buffer;
  if (++*listener > s->options.max_connections) {
    co_await write_reply(stream, *s, error_reply(503, Reason::LIMIT_REACHED, "too many connections"), 11, false);
    co_return;
  }
  std::optional<PerClient::Lease> client_share;
  if (peer && !peer->admin) {
    client_share = s->connections_per_client.take(peer->name, s->per_client_cap());
    if (!client_share) {
      co_await refuse_past_share(stream, *s, count, peer->name, 11);
      co_return;
    }
  }
  // Over TLS, the client the first valid token named: the connection is its
  // own from then on.
  std::optional<std::string> token_client;
  for (bool more = true; more && !s->stopped;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    // The route's own bound is checked once the head says which it is.
    parser.body_limit(std::max(s->options.max_json_bytes, s->options.max_file_bytes));
    beast::get_lowest_layer(stream).expires_after(s->options.header_timeout);
    auto [hec, hn] = co_await http::async_read_header(stream, buffer, parser, asio::as_tuple(use_awaitable));
    if (hec == http::error::end_of_stream || hec == beast::error::timeout || hec == asio::error::operation_aborted)
      break;
    if (hec == http::error::body_limit) {
      co_await write_reply(stream, *s,
                           error_reply(413, Reason::LIMIT_REACHED, "the request's body is larger than the limit"), 11,
                           false);
      break;
    }
    if (hec) {
      const bool large = hec == http::error::header_limit;
      co_await write_reply(stream, *s,
                           error_reply(large ? 431 : 400, Reason::INVALID_INPUT,
                                       large ? "the request's head is too large" : "the request is malformed HTTP"),
                           11, false);
      break;
    }
    // Who asks, from the head alone: a TLS request without a valid token is
    // refused before its body is read, and its connection closed.
    const std::optional<Client> client = peer ? peer : client_of_token(*s, parser.get());
    if (!client || (token_client && client->name != *token_client)) {
      co_await write_reply(stream, *s,
                           error_reply(401, Reason::PERMISSION_DENIED,
                                       client ? "a connection serves the client its first token named"
                                              : "a valid bearer token is needed"),
                           parser.get().version(), false);
      break;
    }
    if (!peer && !token_client) {
      client_share = s->connections_per_client.take(client->name, s->per_client_cap());
      if (!client_share) {
        co_await refuse_past_share(stream, *s, count, client->name, parser.get().version());
        break;
      }
      token_client = client->name;
    }
    // Past its rate, the request waits before anything is done for it.
    if (!client->admin) {
      const auto wait = s->request_pace.sent(client->name, 1);
      if (wait > ClientPace::Clock::duration::zero()) {
        ++s->metrics.paced_requests;
        asio::steady_timer pause(co_await asio::this_coro::executor, wait);
        co_await pause.async_wait(asio::as_tuple(use_awaitable));
      }
    }
    // The target matched once, from the head: it names the body's bound.
    const RouteMatch route = match_route(parser.get().method(), parser.get().target());
    const std::size_t limit = s->routes.body_limit(route);
    const bool over = parser.content_length() && *parser.content_length() > limit;
    // Its body (its bound, when chunked): past the daemon's budget or the
    // client's share of it, the request is refused before its body is read.
    // (A read's answer is not counted ahead: its size is known only once
    // read, and reserving each read's bound would refuse a client's many
    // small reads.)
    const std::size_t holds = over ? 0 : parser.content_length().value_or(parser.chunked() ? limit : 0);
    const std::optional<MemoryBudget::Hold> held =
        holds > 0 ? s->buffered.take(client->name, holds, client->admin) : std::nullopt;
    if (holds > 0 && !held) {
      ++s->metrics.budget_refusals;
      co_await write_reply(stream, *s,
                           error_reply(503, Reason::LIMIT_REACHED,
                                       "the daemon holds as much request and answer data as it may: try again"),
                           parser.get().version(), false);
      break;
    }
    boost::system::error_code bec;
    if (!over) {
      parser.body_limit(limit);
      beast::get_lowest_layer(stream).expires_after(s->options.body_timeout);
      auto [read_ec, bn] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(use_awaitable));
      bec = read_ec;
    }
    if (over || bec == http::error::body_limit) {
      co_await write_reply(stream, *s,
                           error_reply(413, Reason::LIMIT_REACHED, "the request's body is larger than the limit"),
                           parser.get().version(), false);
      break;
    }
    if (bec) break;  // a body that never came, or a malformed one: nothing to answer
    Request req = parser.release();
    switch (route.route ? route.route->serving : Serving::blocking) {
      case Serving::metrics: {
        const Reply reply{200, "text/plain; version=0.0.4",
                          s->metrics.text(s->routes.sandboxes().size(), s->buffered.held())};
        more = co_await write_reply(stream, *s, reply, req.version(), req.keep_alive());
        continue;
      }
      case Serving::exec: more = co_await serve_exec(stream, *s, req, route.id, *client); continue;
      case Serving::run: more = co_await serve_run(stream, *s, req, *client); continue;
      case Serving::file_call: {
        // On the provider's async forms: no thread waits for the sandbox.
        auto call = s->routes.file_call(route, *client);
        Reply reply;
        if (call.index() == 1) {
          reply = std::get<1>(std::move(call));
        } else {
          reply = co_await run_file_call(s, std::get<0>(std::move(call)), std::move(req.body()));
        }
        more = co_await write_reply(stream, *s, reply, req.version(), req.keep_alive());
        continue;
      }
      case Serving::command_wait: {
        auto wait = s->routes.command_wait(route, *client);
        Reply reply;
        if (wait.index() == 1) {
          reply = std::get<1>(std::move(wait));
        } else {
          reply = co_await wait_for_command(*s, std::get<0>(std::move(wait)));
        }
        more = co_await write_reply(stream, *s, reply, req.version(), req.keep_alive());
        continue;
      }
      case Serving::attach: {
        auto attach = s->routes.command_attach(route, *client, beast::websocket::is_upgrade(req));
        if (attach.index() == 1) {
          more = co_await write_reply(stream, *s, std::get<1>(std::move(attach)), req.version(), req.keep_alive());
          continue;
        }
        // The connection is the WebSocket's from here, to its end.
        co_await serve_attach(stream, *s, req, std::get<0>(std::move(attach)));
        more = false;
        continue;
      }
      case Serving::blocking: break;
    }
    std::optional<PerClient::Lease> turn;
    const bool turned = co_await blocking_turn(*s, *client, turn);
    if (!turned) {
      co_await write_reply(stream, *s, blocking_share_spent(), req.version(), false);
      break;
    }
    const Reply reply = co_await offload(s->blocking, s->metrics.blocking_running, [s, &req, &client, &route] {
      return s->routes.handle(route, req.body(), *client);
    });
    turn.reset();
    more = co_await write_reply(stream, *s, reply, req.version(), req.keep_alive());
  }
  boost::system::error_code ignored;
  socket_of(stream).shutdown(asio::socket_base::shutdown_both, ignored);
}

// After a failed accept (EMFILE and the like), a pause: the next one may
// be taken once descriptors are free, and the loop does not spin meanwhile.
awaitable<void> pause_after_failed_accept() {
  asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(50));
  co_await pause.async_wait(asio::as_tuple(use_awaitable));
}

awaitable<void> accept_unix(State* s, asio::local::stream_protocol::acceptor& acceptor) {
  while (!s->stopped) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(s->ioc), asio::as_tuple(use_awaitable));
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      co_await pause_after_failed_accept();
      continue;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) continue;
    Client client{"uid:" + std::to_string(cred.uid), cred.uid == 0, cred.uid};
    auto ex = socket.get_executor();
    asio::co_spawn(
        ex, serve(s, UnixStream(std::move(socket)), std::optional<Client>(client), &s->unix_connections, std::nullopt),
        asio::detached);
  }
}

// A TLS connection: its address's share taken and a handshake's place
// (both bounded, or it is closed at once), the handshake within the head's
// timeout, then its requests.
awaitable<void> serve_tls(State* s, asio::ip::tcp::socket socket) {
  boost::system::error_code ec;
  const auto remote = socket.remote_endpoint(ec);
  if (ec) co_return;
  std::optional<PerClient::Lease> address_share =
      s->connections_per_client.take("address:" + remote.address().to_string(), s->per_client_cap());
  if (!address_share) co_return;
  struct Handshake {
    std::atomic<std::size_t>& under_way;
    bool counted = true;
    void done() {
      if (std::exchange(counted, false)) --under_way;
    }
    ~Handshake() { done(); }
  } handshake{s->tls_handshakes};
  if (++s->tls_handshakes > s->options.max_tls_handshakes) co_return;
  TlsStream stream(std::move(socket), *s->tls_context);
  beast::get_lowest_layer(stream).expires_after(s->options.header_timeout);
  auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::server, asio::as_tuple(use_awaitable));
  handshake.done();
  if (hec) co_return;
  co_await serve(s, std::move(stream), std::nullopt, &s->tls_connections, std::move(address_share));
}

awaitable<void> accept_tls(State* s, asio::ip::tcp::acceptor& acceptor) {
  while (!s->stopped) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::make_strand(s->ioc), asio::as_tuple(use_awaitable));
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      co_await pause_after_failed_accept();
      continue;
    }
    auto ex = socket.get_executor();
    asio::co_spawn(ex, serve_tls(s, std::move(socket)), asio::detached);
  }
}

[[noreturn]] void listen_failed(const std::string& what, const boost::system::error_code& ec) {
  throw SandboxError(Reason::INVALID_CONFIG, what + ": " + ec.message());
}

}  // namespace

Server::Server(std::shared_ptr<SandboxProvider> provider, SandboxesOptions limits, ServerOptions options) {
  ServiceInfo info{provider->id(), std::min(provider->max_lifetime_ms(), limits.max_lifetime_ms), limits.network};
  if (options.max_file_bytes > limits.max_write_bytes) options.max_file_bytes = limits.max_write_bytes;
  if (options.blocking_threads == 0) options.blocking_threads = 8;
  const std::shared_ptr<SandboxProvider> restoring = options.live_restore ? provider : nullptr;
  state_ = std::make_unique<State>(create_sandboxes(std::move(provider), std::move(limits)), std::move(info), options);
  if (restoring) state_->taken_back = take_back_sandboxes(*restoring, state_->routes.sandboxes(), state_->registry);
}

std::size_t Server::taken_back() const { return state_->taken_back; }
std::size_t Server::sandboxes_alive() const { return state_->routes.sandboxes().size(); }

void Server::remove_socket_files() noexcept {
  for (const auto& path : state_->unix_paths) ::unlink(path.c_str());
}

Server::~Server() {
  stop();
  close_streams();
  state_->blocking.join();
  for (const auto& path : state_->unix_paths) ::unlink(path.c_str());
}

void Server::close_streams() {
  std::lock_guard lock(state_->channels_mutex);
  for (auto& weak : state_->channels) {
    if (auto channel = weak.lock()) channel->close();
  }
  state_->channels.clear();
}

void Server::listen_unix(const std::string& path, mode_t mode, std::optional<gid_t> group) {
  auto& s = *state_;
  // An old socket of a dead daemon is replaced; anything else there is not.
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) throw SandboxError(Reason::INVALID_CONFIG, path + " exists and is no socket");
    ::unlink(path.c_str());
  }
  auto acceptor = std::make_unique<asio::local::stream_protocol::acceptor>(s.ioc);
  boost::system::error_code ec;
  acceptor->open(asio::local::stream_protocol(), ec);
  if (ec) listen_failed("opening a Unix socket", ec);
  // Made with no permission for anyone, then given its mode: no client can
  // connect in between. (The file takes the socket's own mode, less the
  // umask: no process-wide umask changes while other threads run.)
  if (::fchmod(acceptor->native_handle(), 0) != 0) {
    throw SandboxError(Reason::INVALID_CONFIG,
                       "shutting the Unix socket before its bind: " + std::string(std::strerror(errno)));
  }
  acceptor->bind(asio::local::stream_protocol::endpoint(path), ec);
  if (ec) listen_failed("binding " + path, ec);
  s.unix_paths.push_back(path);
  if (group && ::chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0) {
    throw SandboxError(Reason::INVALID_CONFIG, "giving " + path + " its group: " + std::strerror(errno));
  }
  if (::chmod(path.c_str(), mode) != 0)
    throw SandboxError(Reason::INVALID_CONFIG, "setting " + path + "'s mode: " + std::strerror(errno));
  acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) listen_failed("listening on " + path, ec);
  s.unix_acceptors.push_back(std::move(acceptor));
}

void Server::adopt_unix(int fd) {
  auto& s = *state_;
  const std::string which = "the socket passed as fd " + std::to_string(fd);
  // What it is, asked of the kernel before the server owns it.
  auto option = [&](int name, const char* what) {
    int value = 0;
    socklen_t len = sizeof value;
    if (::getsockopt(fd, SOL_SOCKET, name, &value, &len) != 0) {
      throw SandboxError(Reason::INVALID_CONFIG, "asking " + which + " its " + what + ": " + std::strerror(errno));
    }
    return value;
  };
  if (option(SO_DOMAIN, "family") != AF_UNIX || option(SO_TYPE, "type") != SOCK_STREAM ||
      !option(SO_ACCEPTCONN, "state")) {
    throw SandboxError(Reason::INVALID_CONFIG, which + " is no listening Unix stream socket");
  }
  // Whoever may connect is a client: a socket unit whose SocketMode= lets
  // anyone in is refused (its group is for who may call).
  sockaddr_un bound{};
  socklen_t bound_len = sizeof bound;
  struct stat st {};
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_len) == 0 && bound.sun_path[0] != '\0' &&
      ::stat(bound.sun_path, &st) == 0 && (st.st_mode & 0007)) {
    throw SandboxError(
        Reason::INVALID_CONFIG,
        which + " (" + bound.sun_path + ") lets any user connect: its SocketMode= must give others no access");
  }
  // A socket inherited across exec may lack close-on-exec; no process the
  // engine starts may inherit it.
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) {
    throw SandboxError(Reason::INVALID_CONFIG, "marking " + which + " close-on-exec: " + std::strerror(errno));
  }
  auto acceptor = std::make_unique<asio::local::stream_protocol::acceptor>(s.ioc);
  boost::system::error_code ec;
  acceptor->assign(asio::local::stream_protocol(), fd, ec);
  if (ec) listen_failed("taking " + which, ec);
  // (not in unix_paths: its file is the socket unit's, never removed here)
  s.unix_acceptors.push_back(std::move(acceptor));
}

void Server::listen_tls(const std::string& address, unsigned short port, const TlsCredentials& credentials,
                        Tokens tokens) {
  auto& s = *state_;
  if (tokens.empty()) throw SandboxError(Reason::INVALID_CONFIG, "a TLS listener needs at least one bearer token");
  auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  context->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                       asio::ssl::context::no_compression);
  // No client-started renegotiation (a cpu cost a client could repeat at
  // will), and the server's order of ciphers.
  SSL_CTX_set_options(context->native_handle(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // TLS 1.2: forward-secret AEAD only (TLS 1.3's suites all are).
  if (SSL_CTX_set_cipher_list(context->native_handle(), "ECDHE+AESGCM:ECDHE+CHACHA20") != 1)
    throw SandboxError(Reason::INVALID_CONFIG, "setting the TLS ciphers");
  boost::system::error_code ec;
  context->use_certificate_chain(asio::buffer(credentials.certificate_chain), ec);
  if (ec) listen_failed("reading the TLS certificate", ec);
  context->use_private_key(asio::buffer(credentials.private_key), asio::ssl::context::pem, ec);
  if (ec) listen_failed("reading the TLS key", ec);
  const auto ip = asio::ip::make_address(address, ec);
  if (ec) listen_failed("the TLS address " + address, ec);
  auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(s.ioc);
  const asio::ip::tcp::endpoint endpoint(ip, port);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) listen_failed("listening on " + address + ":" + std::to_string(port), ec);
  s.tls_context = std::move(context);
  s.tls_acceptor = std::move(acceptor);
  s.tokens = std::move(tokens);
}

unsigned short Server::tls_port() const {
  return state_->tls_acceptor ? state_->tls_acceptor->local_endpoint().port() : 0;
}

void Server::run() {
  auto& s = *state_;
  for (auto& acceptor : s.unix_acceptors) asio::co_spawn(s.ioc, accept_unix(&s, *acceptor), asio::detached);
  if (s.tls_acceptor) asio::co_spawn(s.ioc, accept_tls(&s, *s.tls_acceptor), asio::detached);
  auto guard = asio::make_work_guard(s.ioc);
  std::size_t n = s.options.io_threads ? s.options.io_threads : 2 * std::max(1u, std::thread::hardware_concurrency());
  std::vector<OwnedThread> threads;
  try {
    for (std::size_t i = 1; i < n; ++i) threads.emplace_back("mayurad-io", [&s] { s.ioc.run(); });
    if (!s.stopped) s.ioc.run();
  } catch (...) {
    s.ioc.stop();  // the threads started return, and are joined as they go
    throw;
  }
  for (auto& t : threads) t.join();
  guard.reset();
  // Every sandbox goes, and the execs' threads are let go of their clients;
  // with live restore, every sandbox stays for the next server.
  close_streams();
  if (!s.options.live_restore) s.routes.sandboxes().close();
}

void Server::stop() {
  state_->stopped = true;
  state_->ioc.stop();
}

}  // namespace mayura::service
