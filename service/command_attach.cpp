#include "command_attach.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#include <deque>
#include <string>
#include <utility>

namespace mayura::service {
namespace {

namespace websocket = beast::websocket;

// The most output one message carries.
constexpr std::size_t kFrameBytes = std::size_t{64} << 10;
// The most a client's message holds: input, or a control.
constexpr std::size_t kMostMessage = std::size_t{1} << 20;
// Failures of a client's messages not yet sent back: a client that sends
// refused ones faster than it reads the answers is let go.
constexpr std::size_t kMostEventsQueued = 16;
// How long input the command has not read waits before it is offered again.
constexpr std::chrono::milliseconds kInputPause{20};
// A quiet attachment is pinged at half of this; one that answers nothing
// for this long is closed.
constexpr std::chrono::seconds kIdle{60};

// What one attachment's reader and writer share, on its strand.
struct Attachment {
  CommandAttach a;
  std::shared_ptr<CommandWake> wake;
  std::deque<std::string> events;  // text messages for the writer to send
  bool reader_done = false;
  bool stop_asked = false;
  // The writer's: where it reads on in each stream, and (without follow)
  // what was printed as it started. Here, not in its frame: GCC 12 cannot
  // keep an array in a coroutine's.
  std::uint64_t next[2] = {0, 0};
  std::uint64_t until[2] = {0, 0};
};

// What the writer reads of the command in one go: the info first, since
// once it says the command ended, all its output is in what is read after.
struct Reading {
  CommandInfo info;
  OutputSlice out;
  OutputSlice err;
  std::exception_ptr failed;
  const OutputSlice& of(int stream) const { return stream == 0 ? out : err; }
};
Reading read_command(const Attachment& at, std::size_t most) {
  Reading r;
  try {
    r.info = at.a.sandbox.command(at.a.command);
    r.out = at.a.sandbox.output(at.a.command, OutputStream::out, at.next[0], most);
    r.err = at.a.sandbox.output(at.a.command, OutputStream::err, at.next[1], most);
  } catch (...) {
    r.failed = std::current_exception();
  }
  return r;
}

json failure_json(State& s, const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const SandboxError& e) {
    return error_json(e.reason(), s.routes.told(e.what()));
  } catch (...) {
    return error_json(Reason::INTERNAL, "the daemon failed to serve the attachment");
  }
}

template <class Ws>
awaitable<bool> send(Ws& ws, std::string message, bool binary) {
  ws.binary(binary);
  auto [ec, n] = co_await ws.async_write(asio::buffer(message), asio::as_tuple(use_awaitable));
  co_return !ec;
}

// The last message, then the close.
template <class Ws>
awaitable<void> send_last(Ws& ws, std::string message, websocket::close_code code) {
  const bool sent = co_await send(ws, message, false);
  if (sent) co_await ws.async_close(code, asio::as_tuple(use_awaitable));
}

// Input, waited for while the command has not read what the engine holds
// of its input (LIMIT_REACHED): the client's next messages wait in its
// connection meanwhile, and so does the client, as a pipe's writer waits.
awaitable<void> write_paced(Attachment& at, std::string data) {
  asio::steady_timer pause(co_await asio::this_coro::executor);
  for (;;) {
    try {
      at.a.sandbox.write_input(at.a.command, data);
      co_return;
    } catch (const SandboxError& e) {
      if (e.reason() != Reason::LIMIT_REACHED) throw;
    }
    pause.expires_after(kInputPause);
    co_await pause.async_wait(asio::as_tuple(use_awaitable));
  }
}

// One message of the client's: input, or a control. A stop is made on the
// blocking pool (it waits for the command's end), once per attachment.
awaitable<void> take_message(State& s, Attachment& at, std::string data, bool binary) {
  std::exception_ptr failed;
  bool stop = false;
  try {
    const Sandbox& sandbox = at.a.sandbox;
    if (binary) {
      co_await write_paced(at, std::move(data));
    } else {
      const AttachControl c = attach_control_from(parse_body(data, "the attachment's message"));
      switch (c.kind) {
        case AttachControl::Kind::close_input: sandbox.close_input(at.a.command); break;
        case AttachControl::Kind::signal: sandbox.signal(at.a.command, c.signal); break;
        case AttachControl::Kind::resize: sandbox.resize(at.a.command, c.size); break;
        case AttachControl::Kind::stop: stop = !std::exchange(at.stop_asked, true); break;
      }
    }
  } catch (...) {
    failed = std::current_exception();
  }
  if (stop) {
    // Named, not a temporary of the co_await: GCC 12 freed the temporary
    // lambda's captures twice there (the daemon aborted on every stop).
    auto stop_command = [sandbox = at.a.sandbox, id = at.a.command] {
      sandbox.stop(id);
      return Reply{};
    };
    try {
      co_await offload(s.blocking, s.metrics.blocking_running, std::move(stop_command));
    } catch (...) {
      failed = std::current_exception();
    }
  }
  if (failed) at.events.push_back(dump(failure_json(s, failed)));
}

template <class Ws>
awaitable<void> read_messages(Ws& ws, State& s, Attachment& at) {
  beast::flat_buffer buffer;
  for (;;) {
    buffer.clear();
    auto [ec, n] = co_await ws.async_read(buffer, asio::as_tuple(use_awaitable));
    if (ec) break;
    co_await take_message(s, at, beast::buffers_to_string(buffer.data()), ws.got_binary());
    if (at.events.size() > kMostEventsQueued) break;
    if (!at.events.empty()) at.wake->wake();
  }
  at.reader_done = true;
  at.wake->wake();
}

std::string command_event(const CommandInfo& info) { return dump(json{{"command", command_info_json(info)}}); }

std::string output_message(OutputStream stream, const std::string& data) {
  std::string m;
  m.reserve(1 + data.size());
  m.push_back(static_cast<char>(stream == OutputStream::out ? kAttachStdout : kAttachStderr));
  m.append(data);
  return m;
}

// What is held from the offsets on, then the output as it comes, until the
// command has ended and all of it went (or, without follow, until what was
// held at the start went), or the client has gone; then the command's info
// and the close.
template <class Ws>
awaitable<void> write_output(Ws& ws, State& s, Attachment& at) {
  at.next[0] = at.a.stdout_from;
  at.next[1] = at.a.stderr_from;
  bool first = true;
  for (;;) {
    while (!at.events.empty()) {
      const bool sent = co_await send(ws, std::move(at.events.front()), false);
      at.events.pop_front();
      if (!sent) co_return;
    }
    if (at.reader_done) co_return;  // the client closed, or its connection failed
    const Reading r = read_command(at, kFrameBytes);
    if (r.failed) {
      co_await send_last(ws, dump(failure_json(s, r.failed)), websocket::close_code::internal_error);
      co_return;
    }
    if (first) {
      at.until[0] = r.info.stdout_bytes;
      at.until[1] = r.info.stderr_bytes;
      first = false;
    }
    bool sent_output = false;
    for (int i = 0; i < 2; ++i) {
      const OutputStream stream = i == 0 ? OutputStream::out : OutputStream::err;
      const OutputSlice& got = r.of(i);
      if (got.dropped > 0) {
        const bool sent = co_await send(ws, dump(dropped_event_json(stream, got.dropped)), false);
        if (!sent) co_return;
      }
      if (!got.data.empty()) {
        const bool sent = co_await send(ws, output_message(stream, got.data), true);
        if (!sent) co_return;
        sent_output = true;
      }
      at.next[i] = std::max(at.next[i], got.next);  // an offset past the end waits for its byte
    }
    if (sent_output) continue;
    const bool ended =
        r.info.state != CommandState::running && at.next[0] >= r.info.stdout_bytes && at.next[1] >= r.info.stderr_bytes;
    const bool caught_up = !at.a.follow && at.next[0] >= at.until[0] && at.next[1] >= at.until[1];
    if (ended || caught_up) {
      // (Made before the co_await: GCC 12 cannot keep an initializer list's
      // array across one.)
      std::string last = command_event(r.info);
      co_await send_last(ws, std::move(last), websocket::close_code::normal);
      co_return;
    }
    co_await at.wake->wait(std::chrono::steady_clock::time_point::max());
  }
}

}  // namespace

std::function<void()> CommandWake::on_change() {
  return [weak = weak_from_this()] {
    const auto self = weak.lock();
    if (!self || self->posted_.exchange(true)) return;
    asio::post(self->executor_, [weak] {
      if (const auto wake = weak.lock()) {
        wake->posted_ = false;
        wake->wake();
      }
    });
  };
}

void CommandWake::wake() {
  pending_ = true;
  timer_.cancel();
}

awaitable<void> CommandWake::wait(std::chrono::steady_clock::time_point deadline) {
  if (!pending_) {
    timer_.expires_at(deadline);
    co_await timer_.async_wait(asio::as_tuple(use_awaitable));
  }
  pending_ = false;
}

awaitable<Reply> wait_for_command(State& s, CommandWait wait) {
  const auto wake = std::make_shared<CommandWake>(co_await asio::this_coro::executor);
  CommandWatch watch;
  try {
    watch = wait.sandbox.watch(wait.command, wake->on_change());
  } catch (...) {
    co_return s.routes.command_wait_reply(wait);  // the command is gone: the reply says how
  }
  const auto deadline = std::chrono::steady_clock::now() + wait.timeout;
  while (!Routes::command_ended(wait) && std::chrono::steady_clock::now() < deadline) {
    co_await wake->wait(deadline);
  }
  co_return s.routes.command_wait_reply(wait);
}

template <class Stream>
awaitable<void> serve_attach(Stream& stream, State& s, const Request& req, CommandAttach attach) {
  websocket::stream<Stream&> ws(stream);
  beast::get_lowest_layer(stream).expires_never();  // the WebSocket's own timeouts from here
  websocket::stream_base::timeout timeouts{};
  timeouts.handshake_timeout = s.options.header_timeout;
  timeouts.idle_timeout = kIdle;
  timeouts.keep_alive_pings = true;
  ws.set_option(timeouts);
  ws.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(http::field::server, "mayurad"); }));
  ws.read_message_max(kMostMessage);
  ws.auto_fragment(false);  // a message is one frame: Beast would cut it at 4 KiB
  auto [aec] = co_await ws.async_accept(req, asio::as_tuple(use_awaitable));
  if (aec) co_return;

  const auto executor = co_await asio::this_coro::executor;
  Attachment at;
  at.a = attach;
  at.wake = std::make_shared<CommandWake>(executor);
  CommandWatch watch;
  std::exception_ptr failed;
  try {
    watch = at.a.sandbox.watch(at.a.command, at.wake->on_change());
  } catch (...) {
    failed = std::current_exception();
  }
  if (failed) {
    co_await send_last(ws, dump(failure_json(s, failed)), websocket::close_code::internal_error);
    co_return;
  }
  asio::co_spawn(executor, read_messages(ws, s, at), asio::detached);
  co_await write_output(ws, s, at);
  // The reader ends with the close's answer, or when the connection fails;
  // a client that never answers is cut off after the handshake's timeout.
  const auto deadline = std::chrono::steady_clock::now() + s.options.header_timeout;
  while (!at.reader_done && std::chrono::steady_clock::now() < deadline) co_await at.wake->wait(deadline);
  if (!at.reader_done) {
    boost::system::error_code ignored;
    socket_of(stream).close(ignored);
    while (!at.reader_done) co_await at.wake->wait(std::chrono::steady_clock::time_point::max());
  }
}

template awaitable<void> serve_attach(UnixStream&, State&, const Request&, CommandAttach);
template awaitable<void> serve_attach(TlsStream&, State&, const Request&, CommandAttach);

}  // namespace mayura::service
