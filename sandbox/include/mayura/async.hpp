#pragma once
// The asynchronous form of every operation: a call that can only block runs
// on the provider's runtime's blocking threads (which grow with the calls in
// flight, as a sandbox call may block for minutes), one that can wait
// without a thread starts there and completes when it ends; the completion
// goes to the token's executor.
// Per-operation cancellation (asio::cancellation_slot) requests a stop on the
// std::stop_token the blocking call watches, which is how the seed's `signal`
// maps onto Asio.

#include <exception>
#include <functional>
#include <optional>
#include <memory>
#include <stop_token>
#include <type_traits>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>

#include "mayura/runtime.hpp"

namespace mayura::detail {

template <class R>
struct completion_signature {
  using type = void(std::exception_ptr, R);
};
template <>
struct completion_signature<void> {
  using type = void(std::exception_ptr);
};

// Runs `fn(std::stop_token)` on one of `runtime`'s blocking threads (taking
// the `turn` given) and completes `token` with its result or the exception
// it threw. The runtime is held until the call starts, for a token that
// starts it later (asio::deferred).
template <class Token, class Fn>
auto async_run(std::shared_ptr<Runtime> runtime, const boost::asio::any_io_executor& fallback, Token&& token, Fn fn,
               Runtime::Turn turn = Runtime::Turn::queue) {
  using R = std::invoke_result_t<Fn, std::stop_token>;
  using Sig = typename completion_signature<R>::type;
  namespace asio = boost::asio;
  return asio::async_initiate<Token, Sig>(
      [runtime = std::move(runtime), fallback, turn](auto handler, Fn work) {
        auto stop = std::make_shared<std::stop_source>();
        auto slot = asio::get_associated_cancellation_slot(handler);
        if (slot.is_connected()) {
          slot.assign([stop](asio::cancellation_type) { stop->request_stop(); });
        }
        auto done_executor = asio::get_associated_executor(handler, fallback);
        using Handler = decltype(handler);
        // The runtime takes copyable calls; the handler and the work may not be.
        struct Call {
          Handler handler;
          std::optional<Fn> work;
          asio::executor_work_guard<decltype(done_executor)> guard;
        };
        auto call =
            std::make_shared<Call>(Call{std::move(handler), std::move(work), asio::make_work_guard(done_executor)});
        runtime->run_blocking(
            [call, stop] {
              std::exception_ptr error;
              std::optional<std::conditional_t<std::is_void_v<R>, char, R>> result;
              try {
                if constexpr (std::is_void_v<R>) {
                  (*call->work)(stop->get_token());
                } else {
                  result.emplace((*call->work)(stop->get_token()));
                }
              } catch (...) {
                error = std::current_exception();
              }
              // The work goes (with the Sandbox handle it holds, and through it
              // the provider) before the caller hears of the end: a caller that
              // then closes its Sandboxes and drops its handles must find the
              // provider gone, not held by a call that is about to end.
              call->work.reset();
              auto ex = call->guard.get_executor();
              // The slot is cleared on the handler's executor, where emit() runs.
              asio::dispatch(ex, [handler = std::move(call->handler), error, result = std::move(result)]() mutable {
                auto done = asio::get_associated_cancellation_slot(handler);
                if (done.is_connected()) done.clear();
                if constexpr (std::is_void_v<R>) {
                  std::move(handler)(error);
                } else {
                  std::move(handler)(error, result ? std::move(*result) : R{});
                }
              });
              call->guard.reset();
            },
            turn);
      },
      token, std::move(fn));
}

// Starts `start(std::stop_token, done)`, which calls `done(error, result)`
// (`done(error)` when R is void) once on any thread, without a thread of its
// own; the completion goes to the token's executor (or `fallback`), as
// async_run's does.
template <class R, class Token, class Start>
auto async_start(const boost::asio::any_io_executor& fallback, Token&& token, Start start) {
  namespace asio = boost::asio;
  using Sig = typename completion_signature<R>::type;
  return asio::async_initiate<Token, Sig>(
      [fallback](auto handler, Start begin) {
        auto stop = std::make_shared<std::stop_source>();
        auto slot = asio::get_associated_cancellation_slot(handler);
        if (slot.is_connected()) {
          slot.assign([stop](asio::cancellation_type) { stop->request_stop(); });
        }
        auto done_executor = asio::get_associated_executor(handler, fallback);
        using Handler = decltype(handler);
        // std::function wants copies: the handler and its work guard are shared.
        struct Pending {
          Handler handler;
          asio::executor_work_guard<decltype(done_executor)> guard;
        };
        auto pending = std::make_shared<Pending>(Pending{std::move(handler), asio::make_work_guard(done_executor)});
        auto complete = [pending](auto... args) {
          auto ex = pending->guard.get_executor();
          asio::dispatch(ex, [pending, args...]() mutable {
            auto done = asio::get_associated_cancellation_slot(pending->handler);
            if (done.is_connected()) done.clear();
            std::move(pending->handler)(std::move(args)...);
            pending->guard.reset();
          });
        };
        if constexpr (std::is_void_v<R>) {
          begin(stop->get_token(), std::function<void(std::exception_ptr)>(
                                       [complete, stop](std::exception_ptr error) { complete(error); }));
        } else {
          begin(stop->get_token(),
                std::function<void(std::exception_ptr, R)>(
                    [complete, stop](std::exception_ptr error, R result) { complete(error, std::move(result)); }));
        }
      },
      token, std::move(start));
}

// A stop token that fires when either of two does.
class JoinedStop {
 public:
  JoinedStop(std::stop_token a, std::stop_token b)
      : on_a_(std::move(a), Fire{&source_}), on_b_(std::move(b), Fire{&source_}) {}
  std::stop_token token() const noexcept { return source_.get_token(); }

 private:
  struct Fire {
    std::stop_source* source;
    void operator()() const noexcept { source->request_stop(); }
  };
  std::stop_source source_;
  std::stop_callback<Fire> on_a_;
  std::stop_callback<Fire> on_b_;
};

}  // namespace mayura::detail
