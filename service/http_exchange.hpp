#pragma once
// The inside of one HTTP call (http_client.cpp): the request written and the
// answer read over whichever stream the endpoint needs, and the https://
// half's start, which lives in a file of its own so that the light
// mayura-run links the rest without OpenSSL (https_call.cpp in the service's
// library, https_refused.cpp in the light client's).

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "http_client.hpp"

namespace mayura::service::detail {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::awaitable;
using asio::use_awaitable;

// A call's stream, as the call ends it: closed at its timeout, its sending
// side closed at a stop (the service then stops what it ran and answers).
struct CallStream {
  std::function<void()> close;
  std::function<void()> half_close;
  std::shared_ptr<void> owner;  // the stream and what it needs, for the call's length
};

// Where a call's coroutine ends: with what it threw, if anything.
using CallDone = std::function<void(std::exception_ptr)>;

// Writes the call's request to `stream` and reads the answer into `answer`;
// a failure of the connection goes to `failure`.
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

// Connects to the endpoint's unix socket on `ioc` and, once `ioc` runs,
// holds `session(socket)` there (an HTTP call's exchange, a WebSocket's).
template <class Session>
CallStream start_unix(asio::io_context& ioc, const Endpoint& e, boost::system::error_code& failure, CallDone done,
                      Session session) {
  auto socket = std::make_shared<asio::local::stream_protocol::socket>(ioc);
  asio::co_spawn(
      ioc,
      [socket, &e, &failure, session = std::move(session)]() -> awaitable<void> {
        auto [ec] = co_await socket->async_connect(asio::local::stream_protocol::endpoint(e.path),
                                                   asio::as_tuple(use_awaitable));
        if (ec) {
          failure = ec;
          co_return;
        }
        co_await session(*socket);
      },
      std::move(done));
  return CallStream{[s = socket.get()] {
                      boost::system::error_code ignored;
                      s->close(ignored);
                    },
                    [s = socket.get()] {
                      boost::system::error_code ignored;
                      s->shutdown(asio::socket_base::shutdown_send, ignored);
                    },
                    socket};
}

// Connects to an https:// endpoint on `ioc` and makes the call there once
// `ioc` runs. UNSUPPORTED in the light client's build, which hands https://
// over to mayura-run-local before any call.
CallStream start_https_call(asio::io_context& ioc, const Endpoint& e, const HttpCall& call, HttpAnswer& answer,
                            boost::system::error_code& failure, CallDone&& done);

}  // namespace mayura::service::detail
