#pragma once
// A WebSocket session with a service (a command's attachment, wire.hpp),
// over a Unix socket or TLS: the upgrade, then messages both ways until
// either end closes. Like http_call, it runs on an io_context of its own in
// the caller's thread, and nothing of it outlives the call.

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>

#include "http_client.hpp"

namespace mayura::service {

// Sends a session's messages from any thread, in the order sent: queued
// until the session is open, dropped once it has ended.
class WsSender {
 public:
  // The most binary bytes queued and not yet taken by the session: past
  // it, a binary message (input) is refused, and its sender waits and
  // sends again, as a pipe's writer waits for its reader. Text messages
  // (controls) always go.
  static constexpr std::size_t kMaxQueuedBytes = std::size_t{1} << 20;

  // False, and nothing queued, for a binary message past the bound.
  bool send(std::string data, bool binary);

  // The session's side: `ring` (called under the sender's lock, so it must
  // only post) tells it that messages wait; take() hands them over; end()
  // drops what comes after.
  void open(std::function<void()> ring);
  std::deque<std::pair<std::string, bool>> take();
  void end();

 private:
  std::mutex mutex_;
  std::deque<std::pair<std::string, bool>> queue_;
  std::function<void()> ring_;
  std::size_t queued_bytes_ = 0;
  bool ended_ = false;
};

struct WsCall {
  std::string target;
  // The session is closed at the deadline, or at a stop.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::stop_token cancellation;
  // Each message as it comes, on the caller's thread. What it throws ends
  // the session, and the call throws it.
  std::function<void(std::string_view data, bool binary)> on_message;
  std::shared_ptr<WsSender> sender;  // optional: what the caller sends
  std::size_t max_message_bytes = std::size_t{4} << 20;
};

struct WsOutcome {
  unsigned refused = 0;  // the upgrade's refusal: its status, and its body
  std::string body;
  bool closed = false;  // the service closed the session
  bool cancelled = false;
  bool timed_out = false;
};

// INTERNAL naming the endpoint when it cannot be reached, or the session
// broke before the service closed it.
WsOutcome ws_call(const Endpoint& endpoint, const WsCall& call);

}  // namespace mayura::service
