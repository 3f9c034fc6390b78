#pragma once
// The inside of one WebSocket session (ws_call.cpp): the upgrade and the
// messages both ways over whichever stream the endpoint needs, and the
// https:// half's start, which lives with the HTTP call's in its own file
// (https_call.cpp, or https_refused.cpp in the light client).

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/websocket.hpp>
#include <memory>
#include <string>

#include "http_exchange.hpp"
#include "ws_call.hpp"

namespace mayura::service::detail {

namespace websocket = boost::beast::websocket;

// Rings a session's writer from the sender's thread (posted) or its own.
// And tells the reader, through `finished`, that the writer has stopped.
struct WsBell {
  explicit WsBell(asio::io_context& ioc) : timer(ioc), finished(ioc) {}
  asio::steady_timer timer;
  asio::steady_timer finished;
  bool rung = false;
  bool done = false;  // the session is over: the writer stops
  bool writer_done = false;
  void ring() {
    rung = true;
    timer.cancel();
  }
};

// Sends what the caller's sender queues, in order, until the session ends.
template <class Ws>
awaitable<void> ws_write(Ws& ws, std::shared_ptr<WsSender> sender, std::shared_ptr<WsBell> bell) {
  struct Done {
    WsBell& bell;
    ~Done() {
      bell.writer_done = true;
      bell.finished.cancel();
    }
  } done{*bell};
  while (!bell->done) {
    for (auto& [data, binary] : sender->take()) {
      ws.binary(binary);
      auto [ec, n] = co_await ws.async_write(asio::buffer(data), asio::as_tuple(use_awaitable));
      if (ec || bell->done) co_return;
    }
    if (!bell->rung && !bell->done) {
      bell->timer.expires_at(asio::steady_timer::time_point::max());
      co_await bell->timer.async_wait(asio::as_tuple(use_awaitable));
    }
    bell->rung = false;
  }
}

// The upgrade on a connected stream, then each message to the call's
// callback until the service closes the session or the stream fails.
template <class Stream>
awaitable<void> ws_exchange(Stream& stream, const Endpoint& e, const WsCall& call, WsOutcome& outcome,
                            boost::system::error_code& failure) {
  websocket::stream<Stream&> ws(stream);
  ws.read_message_max(call.max_message_bytes);
  ws.auto_fragment(false);  // a message is one frame: Beast would cut it at 4 KiB
  ws.set_option(websocket::stream_base::decorator([&e](websocket::request_type& req) {
    req.set(http::field::user_agent, "mayura-remote");
    if (!e.token.empty()) req.set(http::field::authorization, "Bearer " + e.token);
  }));
  websocket::response_type answer;
  const std::string host = e.kind == Endpoint::Kind::https ? e.host : std::string("localhost");
  auto [hec] = co_await ws.async_handshake(answer, host, call.target, asio::as_tuple(use_awaitable));
  if (hec) {
    if (answer.result_int() != 0 && answer.result_int() != 101) {
      outcome.refused = answer.result_int();
      outcome.body = std::move(answer.body());
    } else {
      failure = hec;
    }
    co_return;
  }
  std::shared_ptr<WsBell> bell;
  if (call.sender) {
    auto& ioc = static_cast<asio::io_context&>(ws.get_executor().context());
    bell = std::make_shared<WsBell>(ioc);
    call.sender->open([&ioc, weak = std::weak_ptr<WsBell>(bell)] {
      asio::post(ioc, [weak] {
        if (const auto b = weak.lock()) b->ring();
      });
    });
    asio::co_spawn(ws.get_executor(), ws_write(ws, call.sender, bell), asio::detached);
  }
  boost::beast::flat_buffer buffer;
  std::exception_ptr thrown;
  for (;;) {
    buffer.clear();
    auto [rec, n] = co_await ws.async_read(buffer, asio::as_tuple(use_awaitable));
    if (rec == websocket::error::closed) {
      outcome.closed = true;
      break;
    }
    if (rec) {
      failure = rec;
      break;
    }
    try {
      call.on_message(boost::beast::buffers_to_string(buffer.data()), ws.got_binary());
    } catch (...) {
      thrown = std::current_exception();
      break;
    }
  }
  // The writer stops before `ws` goes: at once if it waits for messages,
  // and a write under way is cut short.
  if (bell) {
    bell->done = true;
    bell->ring();
    if (!bell->writer_done) {
      boost::system::error_code ignored;
      boost::beast::get_lowest_layer(ws).close(ignored);
    }
    while (!bell->writer_done) {
      bell->finished.expires_at(asio::steady_timer::time_point::max());
      co_await bell->finished.async_wait(asio::as_tuple(use_awaitable));
    }
  }
  if (thrown) std::rethrow_exception(thrown);
}

// Connects to an https:// endpoint on `ioc` and holds the session there
// once `ioc` runs. UNSUPPORTED in the light client's build.
CallStream start_https_ws(asio::io_context& ioc, const Endpoint& e, const WsCall& call, WsOutcome& outcome,
                          boost::system::error_code& failure, CallDone&& done);

}  // namespace mayura::service::detail
