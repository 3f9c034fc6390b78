#pragma once
// The threads of the library, and who owns each. Every thread the library
// starts is either one of a Runtime's (its reactor, its blocking calls) or an
// OwnedThread that a named object joins when it goes. None is detached, none
// is started per call, and an exception that reaches one of their loops is
// reported on standard error, never dropped without a word.
//
// A provider owns one Runtime (SandboxProvider::runtime()). Its reactor runs
// what waits without a thread (commands, file calls); its blocking threads
// run the calls that can only block (a create, a release, a desktop action),
// growing with the calls in flight up to a bound, past which calls queue;
// a call that ends others (a release, a lifetime's end) never waits for a
// turn, so calls that wait on an end cannot hold it off.
// The runtime lives as long as its provider and every sandbox of it, and
// destroying it joins every one of its threads.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

namespace mayura {

class Runtime {
 public:
  struct Options {
    // Reactor threads; 0: as many as the host has cores, at least two.
    std::size_t reactor_threads = 0;
    // The most blocking calls that run at once; later ones wait their turn.
    std::size_t max_blocking = 256;
  };
  // The last owner may let go on one of the runtime's own threads (a
  // completion that drops the last handle), which cannot join itself: the
  // runtime is then destroyed on Asio's system executor, which joins it.
  static std::shared_ptr<Runtime> make(Options options);
  static std::shared_ptr<Runtime> make() { return make(Options{}); }
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // The reactor (its threads start at the first call).
  boost::asio::any_io_executor executor();
  std::size_t reactor_threads() const { return reactor_threads_; }

  // Whether a blocking call may wait for a free thread past the bound.
  enum class Turn {
    queue,  // the usual: past the bound, wait for a thread to be free
    now,    // a call that ends others: a thread at once, past the bound
  };
  // Runs `call` on a blocking thread. `call` reports its own failures: an
  // exception that escapes it is written to standard error, naming the
  // runtime. Throws SandboxError(LIMIT_REACHED) when no thread could be
  // started for it (the host's thread or memory limits) and none is free to
  // take it (for Turn::now: none free at once), and then the call never
  // runs.
  void run_blocking(std::function<void()> call, Turn turn = Turn::queue);
  // Blocking threads alive now (for tests and metrics).
  std::size_t blocking_threads() const;

  // True on one of this runtime's threads.
  bool on_own_thread() const noexcept;

 private:
  struct Reactor;
  struct Blocking;
  explicit Runtime(Options options);
  std::size_t reactor_threads_;
  std::unique_ptr<Reactor> reactor_;
  std::unique_ptr<Blocking> blocking_;
};

// A thread with a name (as `ps -L` and `top -H` show it, 15 bytes at most)
// whose owner joins it: destroying or reassigning one asks it to stop (the
// std::stop_token its function may take) and joins it. An exception that
// escapes the function is written to standard error with the thread's name,
// and then ends the process, as for any thread: a loop that must go on
// catches its own.
class OwnedThread {
 public:
  OwnedThread() = default;
  template <class Fn>
  OwnedThread(std::string name, Fn&& fn)
      : thread_([name = std::move(name), fn = std::forward<Fn>(fn)](std::stop_token stop) mutable {
          named(name);
          try {
            if constexpr (std::is_invocable_v<Fn&, std::stop_token>) {
              fn(std::move(stop));
            } else {
              fn();
            }
          } catch (...) {
            report_escape(name);
            throw;
          }
        }) {}

  bool joinable() const noexcept { return thread_.joinable(); }
  void request_stop() noexcept { thread_.request_stop(); }
  void join() { thread_.join(); }

 private:
  static void named(const std::string& name) noexcept;
  static void report_escape(const std::string& name) noexcept;
  std::jthread thread_;
};

}  // namespace mayura
