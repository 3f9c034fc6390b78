#pragma once
// A background command followed without a thread: its watch (Sandbox::watch)
// wakes the connection's coroutine on its strand, which then reads what
// changed itself. A wait for its end (GET .../wait) and an attachment (GET
// .../attach, a WebSocket: wire.hpp says what crosses it) are both served so.

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>

#include "server_state.hpp"

namespace mayura::service {

// Wakes one coroutine of a connection, on its strand, when a command
// changes. Held by a shared_ptr: the watch's callback holds it weakly, so a
// change that comes as the coroutine ends finds nothing to wake.
class CommandWake : public std::enable_shared_from_this<CommandWake> {
 public:
  explicit CommandWake(const asio::any_io_executor& executor) : executor_(executor), timer_(executor) {}

  // For Sandbox::watch: from any thread, under the command's lock. A change
  // posts one wake-up; more before it runs post nothing more.
  std::function<void()> on_change();
  // On the strand: wakes the wait under way, or the next one at once.
  void wake();
  // Returns once woken since the last wait ended, or at `deadline`.
  awaitable<void> wait(std::chrono::steady_clock::time_point deadline);

 private:
  asio::any_io_executor executor_;
  asio::steady_timer timer_;
  bool pending_ = false;
  std::atomic<bool> posted_{false};
};

// A command's wait (Serving::command_wait): the reply once it has ended, or
// at the wait's timeout.
awaitable<Reply> wait_for_command(State& s, CommandWait wait);

// A command's attachment (Serving::attach), once the request is known to be
// one: the WebSocket accepted, then served until the command has ended (or,
// without follow, until it has caught up), the client has gone, or the
// connection failed. The connection is done after it.
template <class Stream>
awaitable<void> serve_attach(Stream& stream, State& s, const Request& req, CommandAttach attach);

}  // namespace mayura::service
