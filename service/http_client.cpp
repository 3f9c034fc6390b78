#include "http_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <optional>
#include <utility>

#include "http_exchange.hpp"
#include "mayura/errors.hpp"

namespace mayura::service {
namespace {

using detail::CallStream;
namespace asio = boost::asio;
using asio::awaitable;
using asio::use_awaitable;

// After a stop, how long the service's answer (CANCELLED, once it has
// stopped what it ran) is waited for.
constexpr std::chrono::seconds kCancelGrace{15};

[[noreturn]] void unreachable(const Endpoint& e, const std::string& what) {
  throw SandboxError(Reason::INTERNAL, "mayurad at " + e.text + ": " + what);
}

// The daemon's end of a call that had started: it stopped or restarted
// (its sandboxes live on where it keeps them: liveRestore), and whether the
// call took effect is not known.
bool closed_under_way(const boost::system::error_code& failure) {
  namespace http = boost::beast::http;
  return failure == asio::error::eof || failure == asio::error::connection_reset ||
         failure == asio::error::broken_pipe || failure == http::error::end_of_stream ||
         failure == http::error::partial_message;
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

  auto on_done = [&](std::exception_ptr error) {
    thrown = std::move(error);
    deadline.cancel();
  };
  // Destroyed before `ioc`, which its stream is registered with.
  const CallStream stream = e.kind == Endpoint::Kind::unix_socket
                                ? detail::start_unix(ioc, e, failure, on_done,
                                                     [&e, &call, &answer, &failure](auto& socket) {
                                                       return detail::exchange(socket, e, call, answer, failure);
                                                     })
                                : detail::start_https_call(ioc, e, call, answer, failure, on_done);

  auto arm = [&](std::chrono::steady_clock::duration after, bool is_timeout) {
    deadline.expires_after(after);
    deadline.async_wait([&, is_timeout](boost::system::error_code ec) {
      if (ec) return;
      timed_out = is_timeout;
      stream.close();
    });
  };
  if (call.timeout.count() > 0) arm(call.timeout, true);
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
  if (call.cancellation.stop_possible()) {
    on_stop.emplace(call.cancellation, std::function<void()>([&] {
                      asio::post(ioc, [&] {
                        answer.cancelled = true;
                        stream.half_close();
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
    if (closed_under_way(failure))
      unreachable(e,
                  "the connection closed before the answer (mayurad stopped or restarted); whether the call "
                  "took effect is unknown");
    unreachable(e, failure ? failure.message() : std::string("no answer"));
  }
  return answer;
}

}  // namespace mayura::service
