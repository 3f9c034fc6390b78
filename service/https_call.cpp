// A call's https:// half, over OpenSSL: in the service's library, not in
// the light mayura-run's (https_refused.cpp).

#include <boost/asio/connect.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <memory>
#include <optional>
#include <utility>

#include "http_exchange.hpp"
#include "mayura/errors.hpp"

namespace mayura::service::detail {
namespace {

// The TLS context and the stream over it, kept together for the call.
struct TlsCall {
  asio::ssl::context context{asio::ssl::context::tls_client};
  std::optional<asio::ssl::stream<asio::ip::tcp::socket>> stream;
};

}  // namespace

CallStream start_https_call(asio::io_context& ioc, const Endpoint& e, const HttpCall& call, HttpAnswer& answer,
                            boost::system::error_code& failure, CallDone&& done) {
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
  asio::co_spawn(
      ioc,
      [tls, &ioc, &e, &call, &answer, &failure]() -> awaitable<void> {
        auto& tls_stream = *tls->stream;
        asio::ip::tcp::resolver resolver(ioc);
        auto [rec, results] = co_await resolver.async_resolve(e.host, e.port, asio::as_tuple(use_awaitable));
        if (rec) {
          failure = rec;
          co_return;
        }
        auto [cec, ep] =
            co_await asio::async_connect(tls_stream.lowest_layer(), results, asio::as_tuple(use_awaitable));
        if (cec) {
          failure = cec;
          co_return;
        }
        auto [hec] = co_await tls_stream.async_handshake(asio::ssl::stream_base::client, asio::as_tuple(use_awaitable));
        if (hec) {
          failure = hec;
          co_return;
        }
        co_await exchange(tls_stream, e, call, answer, failure);
      },
      std::move(done));
  return CallStream{[s = &stream] {
                      boost::system::error_code ignored;
                      s->lowest_layer().close(ignored);
                    },
                    [s = &stream] {
                      boost::system::error_code ignored;
                      s->lowest_layer().shutdown(asio::socket_base::shutdown_send, ignored);
                    },
                    tls};
}

}  // namespace mayura::service::detail
