#include "ws_call.hpp"

#include <optional>

#include "mayura/errors.hpp"
#include "ws_exchange.hpp"

namespace mayura::service {
namespace {

namespace asio = boost::asio;

}  // namespace

bool WsSender::send(std::string data, bool binary) {
  std::lock_guard lock(mutex_);
  if (ended_) return true;  // dropped, as a control's calls after the end are
  if (binary) {
    if (queued_bytes_ > 0 && queued_bytes_ + data.size() > kMaxQueuedBytes) return false;
    queued_bytes_ += data.size();
  }
  queue_.emplace_back(std::move(data), binary);
  if (ring_) ring_();
  return true;
}

void WsSender::open(std::function<void()> ring) {
  std::lock_guard lock(mutex_);
  ring_ = std::move(ring);
  if (!queue_.empty()) ring_();
}

std::deque<std::pair<std::string, bool>> WsSender::take() {
  std::lock_guard lock(mutex_);
  queued_bytes_ = 0;
  return std::exchange(queue_, {});
}

void WsSender::end() {
  std::lock_guard lock(mutex_);
  ended_ = true;
  ring_ = nullptr;
  queue_.clear();
}

WsOutcome ws_call(const Endpoint& e, const WsCall& call) {
  asio::io_context ioc;
  WsOutcome outcome;
  boost::system::error_code failure;
  std::exception_ptr thrown;
  asio::steady_timer deadline(ioc);
  // The sender rings this io_context only while it lives.
  struct EndSender {
    const std::shared_ptr<WsSender>& sender;
    ~EndSender() {
      if (sender) sender->end();
    }
  } end_sender{call.sender};
  auto on_done = [&](std::exception_ptr error) {
    thrown = std::move(error);
    deadline.cancel();
  };
  const detail::CallStream stream =
      e.kind == Endpoint::Kind::unix_socket
          ? detail::start_unix(ioc, e, failure, on_done,
                               [&e, &call, &outcome, &failure](auto& socket) {
                                 return detail::ws_exchange(socket, e, call, outcome, failure);
                               })
          : detail::start_https_ws(ioc, e, call, outcome, failure, on_done);
  if (call.deadline != std::chrono::steady_clock::time_point::max()) {
    deadline.expires_at(call.deadline);
    deadline.async_wait([&](boost::system::error_code ec) {
      if (ec) return;
      outcome.timed_out = true;
      stream.close();
    });
  }
  std::optional<std::stop_callback<std::function<void()>>> on_stop;
  if (call.cancellation.stop_possible()) {
    on_stop.emplace(call.cancellation, std::function<void()>([&] {
                      asio::post(ioc, [&] {
                        outcome.cancelled = true;
                        stream.close();
                      });
                    }));
  }
  ioc.run();
  on_stop.reset();
  if (call.sender) call.sender->end();
  if (call.cancellation.stop_requested()) outcome.cancelled = true;
  if (thrown) std::rethrow_exception(thrown);
  if (outcome.refused || outcome.closed || outcome.cancelled || outcome.timed_out) return outcome;
  throw SandboxError(Reason::INTERNAL, "mayurad at " + e.text + ": " +
                                           (failure ? failure.message() : std::string("the session ended")) +
                                           " before the service closed it (mayurad stopped or restarted?)");
}

}  // namespace mayura::service
