#pragma once
// The server's insides, shared by its parts (server.cpp: connections and
// listeners; exec_stream.cpp: execs and runs streamed as NDJSON): what every
// connection shares, the streams it serves, and how a part answers (a reply
// written, a blocking call moved onto the pool).

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mayura/service/server.hpp"
#include "memory_budget.hpp"
#include "client_pace.hpp"
#include "per_client.hpp"
#include "routes.hpp"

namespace mayura::service {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::awaitable;
using asio::use_awaitable;

using UnixStream = beast::basic_stream<asio::local::stream_protocol>;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
using Request = http::request<http::string_body>;

// One event of a running exec, from its thread to the connection.
struct ExecEvent {
  enum Kind { out, err, done } kind = done;
  std::string data;
  std::exception_ptr error;  // done: the failure, if it failed
  ExecResult result;         // done: the result, if not
};
using ExecChannel = asio::experimental::concurrent_channel<void(boost::system::error_code, ExecEvent)>;

// What the connections share. Coroutines hold it by reference: the Server
// joins every thread before it goes, and the io_context (destroyed first of
// what its handlers use, being declared after it) takes their frames with it.
struct Server::State {
  State(Sandboxes s, ServiceInfo info, const ServerOptions& o)
      : options(o),
        buffered(o.max_buffered_bytes, o.max_buffered_bytes / 4),
        registry({o.max_sandboxes_per_client, o.max_memory_mib_per_client, o.max_disk_mib_per_client,
                  o.max_snapshot_mib_per_client, o.max_volume_mib_per_client},
                 o.live_restore),
        routes(std::move(s), std::move(info), registry, metrics, o.max_json_bytes, o.max_file_bytes,
               o.default_memory_mib, o.hidden_paths),
        output_pace(o.client_output_bytes_per_second),
        request_pace(o.client_requests_per_second),
        blocking(o.blocking_threads) {}

  ServerOptions options;
  // Request bodies held at once: each request holds its body's size (its
  // bound, when chunked) until it is answered.
  MemoryBudget buffered;
  Metrics metrics;
  Registry registry;
  Routes routes;
  std::size_t taken_back = 0;  // sandboxes an earlier server left, served again
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
  ClientPace output_pace;
  // Each client's requests, root apart.
  ClientPace request_pace;
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

}  // namespace mayura::service
