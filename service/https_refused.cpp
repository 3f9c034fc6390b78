// The light mayura-run's https:// half: none. It hands https:// over to
// mayura-run-local before any call, so only a caller of its own build gets
// here; it then links no OpenSSL.

#include "http_exchange.hpp"
#include "ws_exchange.hpp"
#include "mayura/errors.hpp"

namespace mayura::service::detail {

CallStream start_https_call(asio::io_context&, const Endpoint& e, const HttpCall&, HttpAnswer&,
                            boost::system::error_code&, CallDone&&) {
  throw SandboxError(Reason::UNSUPPORTED, "this build reaches mayurad over unix sockets only, not " + e.text);
}

CallStream start_https_ws(asio::io_context&, const Endpoint& e, const WsCall&, WsOutcome&, boost::system::error_code&,
                          CallDone&&) {
  throw SandboxError(Reason::UNSUPPORTED, "this build reaches mayurad over unix sockets only, not " + e.text);
}

}  // namespace mayura::service::detail
