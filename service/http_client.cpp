#include "http_client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#if MAYURA_HTTP_TLS
#include <boost/asio/ssl.hpp>
#endif
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <utility>

#include "mayura/errors.hpp"

namespace mayura::service {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::awaitable;
using asio::use_awaitable;

// After a stop, how long the service's answer (CANCELLED, once it has
// stopped what it ran) is waited for.
constexpr std::chrono::seconds kCancelGrace{15};

[[noreturn]] void unreachable(const Endpoint& e, const std::string& what) {
  throw SandboxError(Reason::INTERNAL, "mayurad at " + e.text + ": " + what);
}

template <class Stream>
awaitable<void> exchange(Stream& stream, const Endpoint& e, const HttpCall& call, HttpAnswer& answer,
                         boost::system::error_code& failure) {
  http::request<http::string_body> req{call.method, call.target, 11};
  req.set(http::field::host, e.kind == Endpoint::Kind::https ? e.host : std::string("localhost"));
  req.set(http::field::user_agent, "mayura-remote");
  if (!e.token.empty()) req.set(http::field::authorization, "Bearer " + e.token);
  if (!call.content_type.empty()) req.set(http::field::content_type, call.content_type);
  req.keep_alive(false);
  req.body() = call.body;
  req.prepare_payload();
  auto [wec, wn] = co_await http::async_write(stream, req, asio::as_tuple(use_awaitable));
  // A service that refuses the body early (413) may close before all of it
  // is sent: its answer is still read.
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  if (call.on_chunk) parser.body_limit(boost::none);
  else parser.body_limit(call.max_answer_bytes);
  auto on_chunk = [&](std::uint64_t, std::string_view body, boost::system::error_code&) {
    call.on_chunk(body);
    return body.size();
  };
  if (call.on_chunk) parser.on_chunk_body(on_chunk);
  auto [rec, rn] = co_await http::async_read(stream, buffer, parser, asio::as_tuple(use_awaitable));
  if (rec && !parser.is_done()) {
    failure = rec ? rec : wec;
    co_return;
  }
  answer.status = parser.get().result_int();
  answer.body = std::move(parser.get().body());
}

}  // namespace

Endpoint parse_endpoint(const std::string& url) {
  Endpoint e;
  e.text = url;
  if (url.rfind("unix://", 0) == 0 || url.rfind('/', 0) == 0) {
    e.kind = Endpoint::Kind::unix_socket;
    e.path = url.rfind("unix://", 0) == 0 ? url.substr(7) : url;
    if (e.path.empty() || e.path.front() != '/')
      throw SandboxError(Reason::INVALID_CONFIG, "a unix:// address needs an absolute path: " + url);
    return e;
  }
  if (url.rfind("https://", 0) == 0) {
    e.kind = Endpoint::Kind::https;
    std::string rest = url.substr(8);
    if (const auto slash = rest.find('/'); slash != std::string::npos) rest.resize(slash);
    const auto colon = rest.rfind(':');
    if (rest.empty() || colon == std::string::npos || colon + 1 == rest.size()) {
      throw SandboxError(Reason::INVALID_CONFIG, "an https:// address needs a host and a port: " + url);
    }
    e.host = rest.substr(0, colon);
    e.port = rest.substr(colon + 1);
    if (e.host.size() > 2 && e.host.front() == '[' && e.host.back() == ']')
      e.host = e.host.substr(1, e.host.size() - 2);
    return e;
  }
  if (url.rfind("http://", 0) == 0) {
    throw SandboxError(Reason::INVALID_CONFIG, "mayurad is reached over TCP with TLS only (https://), not " + url);
  }
  throw SandboxError(Reason::INVALID_CONFIG, "a daemon's address is unix:///PATH or https://HOST:PORT, not " + url);
}

HttpAnswer http_call(const Endpoint& e, const HttpCall& call) {
  asio::io_context ioc;
  HttpAnswer answer;
  boost::system::error_code failure;
  std::exception_ptr thrown;
  asio::steady_timer deadline(ioc);
  bool timed_out = false;

  // Whatever the stream, ending it is closing its socket.
  std::function<void()> close_socket;
  std::function<void()> half_close;
  auto on_done = [&](std::exception_ptr error) {
    thrown = std::move(error);
    deadline.cancel();
  };
  std::optional<asio::local::stream_protocol::socket> unix_socket;
#if MAYURA_HTTP_TLS
  std::optional<asio::ssl::context> tls;
  std::optional<asio::ssl::stream<asio::ip::tcp::socket>> tls_stream;
#endif

  if (e.kind == Endpoint::Kind::unix_socket) {
    unix_socket.emplace(ioc);
    close_socket = [&] {
      boost::system::error_code ignored;
      unix_socket->close(ignored);
    };
    half_close = [&] {
      boost::system::error_code ignored;
      unix_socket->shutdown(asio::socket_base::shutdown_send, ignored);
    };
    asio::co_spawn(
        ioc,
        [&]() -> awaitable<void> {
          auto [ec] = co_await unix_socket->async_connect(asio::local::stream_protocol::endpoint(e.path),
                                                          asio::as_tuple(use_awaitable));
          if (ec) {
            failure = ec;
            co_return;
          }
          co_await exchange(*unix_socket, e, call, answer, failure);
        },
        on_done);
  } else {
#if !MAYURA_HTTP_TLS
    // The light mayura-run: it hands https:// over to mayura-run-local
    // before any call, so only a caller of this build's own gets here.
    throw SandboxError(Reason::UNSUPPORTED, "this build reaches mayurad over unix sockets only, not " + e.text);
#else
    tls.emplace(asio::ssl::context::tls_client);
    tls->set_options(asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    boost::system::error_code ec;
    if (e.ca_file.empty()) tls->set_default_verify_paths(ec);
    else tls->load_verify_file(e.ca_file, ec);
    if (ec) throw SandboxError(Reason::INVALID_CONFIG, "reading the CA for " + e.text + ": " + ec.message());
    tls->set_verify_mode(asio::ssl::verify_peer);
    tls_stream.emplace(ioc, *tls);
    tls_stream->set_verify_callback(asio::ssl::host_name_verification(e.host));
    // SNI (SSL_set_tlsext_host_name, without the macro's C cast)
    SSL_ctrl(tls_stream->native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
             const_cast<char*>(e.host.c_str()));
    close_socket = [&] {
      boost::system::error_code ignored;
      tls_stream->lowest_layer().close(ignored);
    };
    half_close = [&] {
      boost::system::error_code ignored;
      tls_stream->lowest_layer().shutdown(asio::socket_base::shutdown_send, ignored);
    };
    asio::co_spawn(
        ioc,
        [&]() -> awaitable<void> {
          asio::ip::tcp::resolver resolver(ioc);
          auto [rec, results] = co_await resolver.async_resolve(e.host, e.port, asio::as_tuple(use_awaitable));
          if (rec) {
            failure = rec;
            co_return;
          }
          auto [cec, ep] =
              co_await asio::async_connect(tls_stream->lowest_layer(), results, asio::as_tuple(use_awaitable));
          if (cec) {
            failure = cec;
            co_return;
          }
          auto [hec] =
              co_await tls_stream->async_handshake(asio::ssl::stream_base::client, asio::as_tuple(use_awaitable));
          if (hec) {
            failure = hec;
            co_return;
          }
          co_await exchange(*tls_stream, e, call, answer, failure);
        },
        on_done);
#endif
  }

  auto arm = [&](std::chrono::steady_clock::duration after, bool is_timeout) {
    deadline.expires_after(after);
    deadline.async_wait([&, is_timeout](boost::system::error_code ec) {
      if (ec) return;
      timed_out = is_timeout;
      close_socket();
    });
  };
  if (call.timeout.count() > 0) arm(call.timeout, true);
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
  if (call.cancellation.stop_possible()) {
    on_stop.emplace(call.cancellation, std::function<void()>([&] {
                      asio::post(ioc, [&] {
                        answer.cancelled = true;
                        half_close();
                        arm(kCancelGrace, false);
                      });
                    }));
  }
  ioc.run();
  on_stop.reset();
  if (call.cancellation.stop_requested()) answer.cancelled = true;
  if (thrown) std::rethrow_exception(thrown);
  if (answer.status == 0) {
    if (answer.cancelled) throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
    if (timed_out) unreachable(e, "no answer within " + std::to_string(call.timeout.count()) + " ms");
    unreachable(e, failure ? failure.message() : std::string("no answer"));
  }
  return answer;
}

}  // namespace mayura::service
