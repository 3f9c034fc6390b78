// A call's https:// half, over OpenSSL: in the service's library, not in
// the light mayura-run's (https_refused.cpp).

#include <boost/asio/connect.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <memory>
#include <optional>
#include <utility>

#include "http_exchange.hpp"
#include "ws_exchange.hpp"
#include "mayura/errors.hpp"

namespace mayura::service::detail {
namespace {

// The TLS context and the stream over it, kept together for the call.
struct TlsCall {
  asio::ssl::context context{asio::ssl::context::tls_client};
  std::optional<asio::ssl::stream<asio::ip::tcp::socket>> stream;
};

// The TLS stream to `e`, made ready on `ioc`: verified against the CA, with
// its host's name for SNI.
std::shared_ptr<TlsCall> tls_for(asio::io_context& ioc, const Endpoint& e) {
  auto tls = std::make_shared<TlsCall>();
  tls->context.set_options(asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
  boost::system::error_code ec;
  if (e.ca_file.empty()) tls->context.set_default_verify_paths(ec);
  else tls->context.load_verify_file(e.ca_file, ec);
  if (ec) throw SandboxError(Reason::INVALID_CONFIG, "reading the CA for " + e.text + ": " + ec.message());
  tls->context.set_verify_mode(asio::ssl::verify_peer);
  auto& stream = tls->stream.emplace(ioc, tls->context);
  stream.set_verify_callback(asio::ssl::host_name_verification(e.host));
  // SNI (SSL_set_tlsext_host_name, without the macro's C cast)
  SSL_ctrl(stream.native_handle(), SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
           const_cast<char*>(e.host.c_str()));
  return tls;
}

// Resolves, connects and makes the handshake; false (and `failure`) if any
// step fails.
awaitable<bool> connect_tls(asio::io_context& ioc, TlsCall& tls, const Endpoint& e,
                            boost::system::error_code& failure) {
  auto& tls_stream = *tls.stream;
  asio::ip::tcp::resolver resolver(ioc);
  auto [rec, results] = co_await resolver.async_resolve(e.host, e.port, asio::as_tuple(use_awaitable));
  if (rec) {
    failure = rec;
    co_return false;
  }
  auto [cec, ep] = co_await asio::async_connect(tls_stream.lowest_layer(), results, asio::as_tuple(use_awaitable));
  if (cec) {
    failure = cec;
    co_return false;
  }
  auto [hec] = co_await tls_stream.async_handshake(asio::ssl::stream_base::client, asio::as_tuple(use_awaitable));
  if (hec) {
    failure = hec;
    co_return false;
  }
  co_return true;
}

// Connects to `e` on `ioc` and, once `ioc` runs, holds `session(stream)`
// over TLS there.
template <class Session>
CallStream start_https(asio::io_context& ioc, const Endpoint& e, boost::system::error_code& failure, CallDone&& done,
                       Session session) {
  auto tls = tls_for(ioc, e);
  asio::co_spawn(
      ioc,
      [tls, &ioc, &e, &failure, session = std::move(session)]() -> awaitable<void> {
        const bool connected = co_await connect_tls(ioc, *tls, e, failure);
        if (connected) co_await session(*tls->stream);
      },
      std::move(done));
  auto* s = &*tls->stream;
  return CallStream{[s] {
                      boost::system::error_code ignored;
                      s->lowest_layer().close(ignored);
                    },
                    [s] {
                      boost::system::error_code ignored;
                      s->lowest_layer().shutdown(asio::socket_base::shutdown_send, ignored);
                    },
                    tls};
}

}  // namespace

CallStream start_https_call(asio::io_context& ioc, const Endpoint& e, const HttpCall& call, HttpAnswer& answer,
                            boost::system::error_code& failure, CallDone&& done) {
  return start_https(ioc, e, failure, std::move(done), [&e, &call, &answer, &failure](auto& stream) {
    return exchange(stream, e, call, answer, failure);
  });
}

CallStream start_https_ws(asio::io_context& ioc, const Endpoint& e, const WsCall& call, WsOutcome& outcome,
                          boost::system::error_code& failure, CallDone&& done) {
  return start_https(ioc, e, failure, std::move(done), [&e, &call, &outcome, &failure](auto& stream) {
    return ws_exchange(stream, e, call, outcome, failure);
  });
}

}  // namespace mayura::service::detail
