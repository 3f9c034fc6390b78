#include "exec_stream.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <functional>
#include <stop_token>
#include <utility>
#include <variant>

namespace mayura::service {
namespace {

using namespace asio::experimental::awaitable_operators;

constexpr std::size_t kChannelDepth = 16;  // output chunks an exec may be ahead of its client

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

// A run's sandbox, released before its answer's last line goes: the
// client's next call, which may come at once, finds it gone and its
// volumes free, not still running. Released after the stream instead if
// the stream ended before that line (a client gone, a write failed).
struct RunEnd {
  const Routes::Run* run = nullptr;
  bool released = false;
};

template <class Stream>
awaitable<bool> stream_exec(Stream& stream, State& s, ExecChannel& channel, unsigned version, bool keep_alive,
                            RunEnd* run_end, const std::string& paced_as) {
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
      const auto wait = paced_as.empty() ? ClientPace::Clock::duration::zero() : s.output_pace.sent(paced_as, sent);
      if (wait > ClientPace::Clock::duration::zero()) {
        asio::steady_timer pause(co_await asio::this_coro::executor, wait);
        co_await pause.async_wait(asio::as_tuple(use_awaitable));
      }
      continue;
    }
    if (run_end) {
      State* state = &s;
      const Routes::Run* run = run_end->run;
      state->routes.run_ending();
      run_end->released = true;
      co_await offload(state->blocking, state->metrics.blocking_running, [state, run]() -> Reply {
        state->routes.end_run(*run);
        return {};
      });
    }
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
                               ExecRequest request, RunEnd* run_end, std::string paced_as) {
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
  auto outcome = co_await (stream_exec(stream, s, *channel, version, keep_alive, run_end, paced_as) ||
                           stop_when_gone(stream, *stop, gone));
  // However the stream ended (a write that failed or timed out included),
  // the command ends with it: a command that has ended already is not
  // touched by this.
  stop->request_stop();
  channel->close();  // an exec thread still sending is let go
  const bool more = outcome.index() == 0 && std::get<0>(outcome) && !gone;
  co_return more;
}

}  // namespace

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
  // (named first: GCC 12 destroys a co_await's temporaries twice)
  std::string paced_as = client.admin ? std::string() : client.name;
  const bool more = co_await stream_command(stream, s, req.version(), req.keep_alive(), std::move(sandbox),
                                            std::move(request), nullptr, std::move(paced_as));
  co_return more;
}

// The wait ends when one of the client's turns is given back (the wake
// cancels the timer, on this connection's strand) or at the timeout.
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
// and the release before the answer's last line (RunEnd).
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
  RunEnd run_end{&*run};
  std::string paced_as = client.admin ? std::string() : client.name;
  const bool more = co_await stream_command(stream, s, req.version(), req.keep_alive(), run->sandbox, run->request,
                                            &run_end, std::move(paced_as));
  if (!run_end.released) {
    s.routes.run_ending();
    co_await offload(s.blocking, s.metrics.blocking_running, [state, made]() -> Reply {
      state->routes.end_run(**made);
      return {};
    });
  }
  co_return more;
}

template awaitable<bool> serve_exec(UnixStream&, State&, const Request&, const std::string&, const Client&);
template awaitable<bool> serve_exec(TlsStream&, State&, const Request&, const std::string&, const Client&);
template awaitable<bool> serve_run(UnixStream&, State&, const Request&, const Client&);
template awaitable<bool> serve_run(TlsStream&, State&, const Request&, const Client&);

}  // namespace mayura::service
