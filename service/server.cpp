// The server: accept loops on a Unix socket and on TLS, one coroutine per
// connection that reads a request (its head, then a body bounded by what the
// route takes, each within its timeout), and answers it. Provider calls run
// on a small pool of blocking threads; an exec streams its output as NDJSON
// while it runs, and a client that goes away cancels it.

#include "mayura/service/server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
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
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "memory_budget.hpp"
#include "output_pace.hpp"
#include "per_client.hpp"
#include "routes.hpp"
#include "status.hpp"

namespace mayura::service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

using UnixStream = beast::basic_stream<asio::local::stream_protocol>;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using Request = http::request<http::string_body>;

constexpr std::size_t kHeaderLimit = 16 * 1024;
constexpr std::size_t kChannelDepth = 16;  // output chunks an exec may be ahead of its client

// One event of a running exec, from its thread to the connection.
struct ExecEvent {
  enum Kind { out, err, done } kind = done;
  std::string data;
  std::exception_ptr error;  // done: the failure, if it failed
  ExecResult result;         // done: the result, if not
};
using ExecChannel = asio::experimental::concurrent_channel<void(boost::system::error_code, ExecEvent)>;

}  // namespace

// What the connections share. Coroutines hold it by reference: the Server
// joins every thread before it goes, and the io_context (destroyed first of
// what its handlers use, being declared after it) takes their frames with it.
struct Server::State {
  State(Sandboxes s, ServiceInfo info, const ServerOptions& o)
      : options(o),
        buffered(o.max_buffered_bytes, o.max_buffered_bytes / 4),
        registry({o.max_sandboxes_per_client, o.max_memory_mib_per_client}),
        routes(std::move(s), std::move(info), registry, metrics, o.max_json_bytes, o.max_file_bytes,
               o.default_memory_mib, o.hidden_paths),
        output_pace(o.client_output_bytes_per_second),
        blocking(o.blocking_threads) {}

  ServerOptions options;
  // Request bodies held at once: each request holds its body's size (its
  // bound, when chunked) until it is answered.
  MemoryBudget buffered;
  Metrics metrics;
  Registry registry;
  Routes routes;
  // Each listener's connections, counted against its own budget.
  std::atomic<std::size_t> unix_connections{0};
  std::atomic<std::size_t> tls_connections{0};
  // Each client's connections (Unix peers, TLS addresses and tokens).
  PerClient connections_per_client;
  // Each client's connections past its share, waiting out their refusal's
  // pause (as many as its share at most).
  PerClient refusals_per_client;
  std::atomic<std::size_t> tls_handshakes{0};
  // Each client's calls on the blocking pool (a desktop action may hold its
  // thread for seconds): a quarter of the pool's threads each, root apart.
  PerClient blocking_per_client;
  std::size_t blocking_cap() const { return std::max<std::size_t>(1, options.blocking_threads / 4); }
  // Each client's streamed output, root apart.
  OutputPace output_pace;
  std::size_t per_client_cap() const {
    return options.max_connections_per_client ? options.max_connections_per_client
                                              : std::max<std::size_t>(1, options.max_connections / 4);
  }
  std::atomic<bool> stopped{false};
  // The channels of the execs under way: closed at stop, so that no exec's
  // thread waits on a client that will never take its output.
  std::mutex channels_mutex;
  std::vector<std::weak_ptr<ExecChannel>> channels;
  asio::thread_pool blocking;
  asio::io_context ioc;
  std::vector<std::unique_ptr<asio::local::stream_protocol::acceptor>> unix_acceptors;
  std::vector<std::string> unix_paths;
  std::unique_ptr<asio::ip::tcp::acceptor> tls_acceptor;
  std::unique_ptr<asio::ssl::context> tls_context;
  Tokens tokens;
};

namespace {

using State = Server::State;

// Runs a blocking call on the pool, and resumes the caller's coroutine on its
// own executor with the result.
template <class Fn>
awaitable<Reply> offload(asio::thread_pool& pool, std::atomic<std::uint64_t>& running, Fn fn) {
  return asio::async_initiate<decltype(use_awaitable), void(std::exception_ptr, Reply)>(
      [&pool, &running](auto handler, Fn work) {
        asio::post(pool, [handler = std::move(handler), work = std::move(work), &running]() mutable {
          std::exception_ptr error;
          Reply reply;
          ++running;
          try {
            reply = work();
          } catch (...) {
            error = std::current_exception();
          }
          --running;
          auto ex = asio::get_associated_executor(handler);
          asio::dispatch(ex, [handler = std::move(handler), error, reply = std::move(reply)]() mutable {
            std::move(handler)(error, std::move(reply));
          });
        });
      },
      use_awaitable, std::move(fn));
}

template <class Stream>
auto& socket_of(Stream& stream) {
  return beast::get_lowest_layer(stream).socket();
}

template <class Stream>
awaitable<bool> write_reply(Stream& stream, State& s, Reply reply, unsigned version, bool keep_alive) {
  http::response<http::string_body> res{static_cast<http::status>(reply.status), version};
  res.set(http::field::server, "mayurad");
  if (!reply.content_type.empty()) res.set(http::field::content_type, reply.content_type);
  if (reply.retry_after_s) res.set(http::field::retry_after, std::to_string(reply.retry_after_s));
  res.keep_alive(keep_alive);
  res.body() = std::move(reply.body);
  res.prepare_payload();
  beast::get_lowest_layer(stream).expires_after(s.options.write_timeout);
  auto [ec, n] = co_await http::async_write(stream, res, asio::as_tuple(use_awaitable));
  co_return !ec && keep_alive;
}

// Asks the command to stop once the client has closed its end (or only its
// sending side, as remote_sandboxes does to cancel: it still reads the
// CANCELLED that comes once the command is stopped). Never completes on its
// own, so that the exec's stream is never cut mid-write; it is cancelled once
// the stream is done. A client that sends more (a pipelined request) is no
// client gone; its bytes stay unread for the next request, so from then on
// the kernel's word that the peer shut its end (POLLRDHUP, which unread
// bytes do not hide) is asked now and then instead.
template <class Stream>
awaitable<void> stop_when_gone(Stream& stream, std::stop_source& stop, bool& gone) {
  auto& socket = socket_of(stream);
  const int fd = socket.native_handle();
  for (;;) {
    auto [ec] = co_await socket.async_wait(asio::socket_base::wait_read, asio::as_tuple(use_awaitable));
    if (ec == asio::error::operation_aborted) co_return;
    char c;
    const ssize_t n = ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (!ec && n < 0 && (errno == EAGAIN || errno == EINTR)) continue;  // a readiness already taken
    if (!ec && n > 0) break;                                            // pipelined: see below
    gone = true;
    stop.request_stop();
    break;
  }
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (!gone) {
    pollfd p{fd, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
      gone = true;
      stop.request_stop();
      break;
    }
    timer.expires_after(std::chrono::milliseconds(200));
    auto [ec] = co_await timer.async_wait(asio::as_tuple(use_awaitable));
    if (ec) co_return;
  }
  timer.expires_at(asio::steady_timer::time_point::max());
  co_await timer.async_wait(asio::as_tuple(use_awaitable));
}

std::string event_line(const json& value) { return dump(value) + "\n"; }

// Streams an exec's events to the client: output chunks as they come, then
// the result (or the failure). The head goes with the first event, so a
// failure before any output is an ordinary error answer with its status.
// The last line of an exec's stream: the result without its output, which
// the lines before carried (the client keeps what it wants of it).
std::string streamed_result_json(const ExecResult& result) {
  json j = exec_result_json(result);
  j.erase("stdout");
  j.erase("stderr");
  return event_line(j);
}

template <class Stream>
awaitable<bool> stream_exec(Stream& stream, State& s, ExecChannel& channel, unsigned version, bool keep_alive,
                            std::function<void()>* before_last, const std::string& paced_as) {
  std::optional<http::response<http::empty_body>> head;
  std::optional<http::response_serializer<http::empty_body>> serializer;
  auto send_head = [&]() -> awaitable<bool> {
    head.emplace(http::status::ok, version);
    head->set(http::field::server, "mayurad");
    head->set(http::field::content_type, "application/x-ndjson");
    head->keep_alive(keep_alive);
    head->chunked(true);
    serializer.emplace(*head);
    beast::get_lowest_layer(stream).expires_after(s.options.write_timeout);
    auto [ec, n] = co_await http::async_write_header(stream, *serializer, asio::as_tuple(use_awaitable));
    co_return !ec;
  };
  auto send_line = [&](std::string line) -> awaitable<bool> {
    beast::get_lowest_layer(stream).expires_after(s.options.write_timeout);
    auto [ec, n] =
        co_await asio::async_write(stream, http::make_chunk(asio::buffer(line)), asio::as_tuple(use_awaitable));
    co_return !ec;
  };
  for (;;) {
    auto [ec, event] = co_await channel.async_receive(asio::as_tuple(use_awaitable));
    if (ec) co_return false;
    // (no co_await inside a condition: GCC 12 destroys temporaries there twice)
    bool ok = true;
    if (event.kind != ExecEvent::done) {
      if (!head) ok = co_await send_head();
      if (!ok) co_return false;
      const json line = {{"stream", event.kind == ExecEvent::out ? "stdout" : "stderr"},
                         {"data", bytes_json(event.data)}};
      std::string text = event_line(line);
      const std::size_t sent = text.size();
      ok = co_await send_line(std::move(text));
      if (!ok) co_return false;
      const auto wait = paced_as.empty() ? OutputPace::Clock::duration::zero() : s.output_pace.sent(paced_as, sent);
      if (wait > OutputPace::Clock::duration::zero()) {
        asio::steady_timer pause(co_await asio::this_coro::executor, wait);
        co_await pause.async_wait(asio::as_tuple(use_awaitable));
      }
      continue;
    }
    if (*before_last) (*before_last)();
    std::optional<Reply> failure;
    if (event.error) {
      try {
        std::rethrow_exception(event.error);
      } catch (const SandboxError& e) {
        s.routes.metrics().failed(e.reason());
        failure = error_reply(e.reason(), s.routes.told(e.what()));
      } catch (...) {
        s.routes.metrics().failed(Reason::INTERNAL);
        failure = error_reply(Reason::INTERNAL, "the command failed in the service");
      }
    }
    if (!head && failure) {
      ok = co_await write_reply(stream, s, std::move(*failure), version, keep_alive);
      co_return ok;
    }
    if (!head) ok = co_await send_head();
    if (!ok) co_return false;
    std::string last = failure ? failure->body + "\n" : streamed_result_json(event.result);
    ok = co_await send_line(std::move(last));
    if (!ok) co_return false;
    beast::get_lowest_layer(stream).expires_after(s.options.write_timeout);
    auto [wec, n] = co_await asio::async_write(stream, http::make_chunk_last(), asio::as_tuple(use_awaitable));
    co_return !wec && keep_alive;
  }
}

// Runs a command and streams it to the client; a client that goes away
// stops it. (Arguments by value: GCC 12's coroutines.)
template <class Stream>
awaitable<bool> stream_command(Stream& stream, State& s, unsigned version, bool keep_alive, Sandbox sandbox,
                               ExecRequest request, std::function<void()>* before_last, std::string paced_as) {
  auto channel = std::make_shared<ExecChannel>(co_await asio::this_coro::executor, kChannelDepth);
  {
    std::lock_guard lock(s.channels_mutex);
    std::erase_if(s.channels, [](const auto& weak) { return weak.expired(); });
    s.channels.push_back(channel);
  }
  auto stop = std::make_shared<std::stop_source>();
  // The command's output waits for the client to take it: the engine reads
  // its pipe again only once the chunk is in the channel (the command is
  // slowed, never its output lost, and no thread waits). A client that is
  // gone closes the channel, and what is left is read and dropped.
  request.options.on_output = [channel](OutputStream from, std::string_view chunk, std::function<void()> more) {
    const auto kind = from == OutputStream::out ? ExecEvent::out : ExecEvent::err;
    channel->async_send(boost::system::error_code{}, ExecEvent{kind, std::string(chunk), {}, {}},
                        [more = std::move(more)](boost::system::error_code) { more(); });
  };
  request.options.cancellation = stop->get_token();
  // Every chunk went to the client: the daemon never holds it twice.
  request.options.keep_output = false;
  ++s.routes.metrics().execs;
  const auto started = std::chrono::steady_clock::now();
  Metrics* metrics = &s.routes.metrics();
  sandbox.async_exec(std::move(request.argv), std::move(request.options),
                     [channel, started, metrics](std::exception_ptr error, ExecResult result) {
                       metrics->exec_seconds.observe(
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
                       channel->async_send(boost::system::error_code{},
                                           ExecEvent{ExecEvent::done, {}, std::move(error), std::move(result)},
                                           asio::detached);
                     });
  beast::get_lowest_layer(stream).expires_never();
  bool gone = false;
  auto outcome = co_await (stream_exec(stream, s, *channel, version, keep_alive, before_last, paced_as) ||
                           stop_when_gone(stream, *stop, gone));
  // However the stream ended (a write that failed or timed out included),
  // the command ends with it: a command that has ended already is not
  // touched by this.
  stop->request_stop();
  channel->close();  // an exec thread still sending is let go
  const bool more = outcome.index() == 0 && std::get<0>(outcome) && !gone;
  co_return more;
}

template <class Stream>
awaitable<bool> serve_exec(Stream& stream, State& s, const Request& req, const std::string& id, const Client& client) {
  ++s.routes.metrics().requests;
  Sandbox sandbox;
  ExecRequest request;
  std::optional<Reply> refused;
  try {
    std::tie(sandbox, request) = s.routes.exec_target(id, req.body(), client);
  } catch (const SandboxError& e) {
    s.routes.metrics().failed(e.reason());
    const std::string said = s.routes.told(e.what());
    refused = e.reason() == Reason::GONE ? error_reply(404, Reason::GONE, said) : error_reply(e.reason(), said);
  }
  if (refused) {
    const bool more = co_await write_reply(stream, s, std::move(*refused), req.version(), req.keep_alive());
    co_return more;
  }
  std::function<void()> nothing;
  // (named first: GCC 12 destroys a co_await's temporaries twice)
  std::string paced_as = client.admin ? std::string() : client.name;
  const bool more = co_await stream_command(stream, s, req.version(), req.keep_alive(), std::move(sandbox),
                                            std::move(request), &nothing, std::move(paced_as));
  co_return more;
}

// A client's turn on the blocking pool, waited for without a thread, up to
// the body timeout: one client's slow calls then hold its own share of the
// pool, never the threads other clients' calls need. The wait ends when one
// of the client's turns is given back (the wake cancels the timer, on this
// connection's strand) or at the timeout. False when the wait was too long.
// (Arguments by reference: the caller's frame outlives this.)
awaitable<bool> blocking_turn(State& s, const Client& client, std::optional<PerClient::Lease>& turn) {
  if (client.admin) co_return true;
  const auto give_up = std::chrono::steady_clock::now() + s.options.body_timeout;
  struct Waiting {
    std::atomic<std::uint64_t>& count;
    ~Waiting() { --count; }
  } waiting{s.metrics.blocking_waiting};
  ++waiting.count;
  auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  for (;;) {
    timer->expires_at(give_up);
    auto taken = s.blocking_per_client.take_or_wait(
        client.name, s.blocking_cap(), [timer] { asio::post(timer->get_executor(), [timer] { timer->cancel(); }); });
    if (auto* lease = std::get_if<PerClient::Lease>(&taken)) {
      turn.emplace(std::move(*lease));
      co_return true;
    }
    auto [ec] = co_await timer->async_wait(asio::as_tuple(use_awaitable));
    if (!ec) {
      s.blocking_per_client.stop_waiting(client.name, std::get<std::uint64_t>(taken));
      co_return false;
    }
  }
}

Reply blocking_share_spent() {
  return error_reply(503, Reason::LIMIT_REACHED,
                     "this client's calls fill its share of the daemon's threads: try again");
}

// A run: the create on the blocking pool, the command streamed as an exec's,
// then the release, after the answer has ended (the client has all it waits
// for) and before the connection's next request.
template <class Stream>
awaitable<bool> serve_run(Stream& stream, State& s, const Request& req, const Client& client) {
  // What the pool's calls use, held here: their lambdas capture pointers
  // only (GCC 12 destroys a co_await's temporaries twice, and a capture that
  // owns memory would be freed twice).
  State* state = &s;
  const Request* request = &req;
  const Client* who = &client;
  std::optional<Routes::Run> run;
  auto* made = &run;
  std::optional<PerClient::Lease> turn;
  const bool turned = co_await blocking_turn(s, client, turn);
  if (!turned) {
    const bool more = co_await write_reply(stream, s, blocking_share_spent(), req.version(), false);
    co_return more;
  }
  Reply refused = co_await offload(s.blocking, s.metrics.blocking_running, [state, request, who, made]() -> Reply {
    auto started = state->routes.start_run(request->body(), *who);
    if (started.index() == 1) return std::get<1>(std::move(started));
    made->emplace(std::get<0>(std::move(started)));
    return {};
  });
  turn.reset();
  if (!run) {
    const bool more = co_await write_reply(stream, s, std::move(refused), req.version(), req.keep_alive());
    co_return more;
  }
  // Said before the answer's last line goes, so that the client's next
  // create, which may come at once, finds this run counted until released.
  bool ending = false;
  std::function<void()> before_last = [state, &ending] {
    state->routes.run_ending();
    ending = true;
  };
  std::string paced_as = client.admin ? std::string() : client.name;
  const bool more = co_await stream_command(stream, s, req.version(), req.keep_alive(), run->sandbox, run->request,
                                            &before_last, std::move(paced_as));
  if (!ending) s.routes.run_ending();
  co_await offload(s.blocking, s.metrics.blocking_running, [state, made]() -> Reply {
    state->routes.end_run(**made);
    return {};
  });
  co_return more;
}

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

// Serves one connection's requests in turn. `peer`: the Unix client, known
// from the socket; none over TLS, where each request's token names it.
// `address_share`: what the connection holds of its client's share from
// before (a TLS address's, taken before the handshake), until it ends.
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

template <class Stream>
awaitable<void> serve(State* s, Stream stream, std::optional<Client> peer, std::atomic<std::size_t>* listener,
                      [[maybe_unused]] std::optional<PerClient::Lease> address_share) {
  Count count{*s, *listener};
  ++s->metrics.connections;
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
    const auto method = parser.get().method();
    const std::string target(parser.get().target());
    const std::size_t limit = s->routes.body_limit(method, target);
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
    if (req.target() == "/metrics" && req.method() == http::verb::get) {
      const Reply reply{200, "text/plain; version=0.0.4",
                        s->metrics.text(s->routes.sandboxes().size(), s->buffered.held())};
      more = co_await write_reply(stream, *s, reply, req.version(), req.keep_alive());
      continue;
    }
    if (const auto id = s->routes.exec_id(req.method(), req.target())) {
      more = co_await serve_exec(stream, *s, req, *id, *client);
      continue;
    }
    if (s->routes.is_run(req.method(), req.target())) {
      more = co_await serve_run(stream, *s, req, *client);
      continue;
    }
    if (auto call = s->routes.file_call(req.method(), req.target(), *client)) {
      // On the provider's async forms: no thread waits for the sandbox.
      Reply reply;
      if (call->index() == 1) {
        reply = std::get<1>(std::move(*call));
      } else {
        reply = co_await run_file_call(s, std::get<0>(std::move(*call)), std::move(req.body()));
      }
      more = co_await write_reply(stream, *s, reply, req.version(), req.keep_alive());
      continue;
    }
    std::optional<PerClient::Lease> turn;
    const bool turned = co_await blocking_turn(*s, *client, turn);
    if (!turned) {
      co_await write_reply(stream, *s, blocking_share_spent(), req.version(), false);
      break;
    }
    const Reply reply = co_await offload(s->blocking, s->metrics.blocking_running, [s, &req, &client] {
      return s->routes.handle(req.method(), req.target(), req.body(), *client);
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
  state_ = std::make_unique<State>(create_sandboxes(std::move(provider), std::move(limits)), std::move(info), options);
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
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < n; ++i) threads.emplace_back([&s] { s.ioc.run(); });
  if (!s.stopped) s.ioc.run();
  for (auto& t : threads) t.join();
  guard.reset();
  // Every sandbox goes, and the execs' threads are let go of their clients.
  close_streams();
  s.routes.sandboxes().close();
}

void Server::stop() {
  state_->stopped = true;
  state_->ioc.stop();
}

}  // namespace mayura::service
