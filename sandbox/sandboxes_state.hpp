#pragma once
// The limits layer's state, shared by its parts (sandboxes.cpp, and the
// desktop's calls in sandbox_desktop.cpp): what a Sandboxes holds for all
// its sandboxes, what each Sandbox holds, and how a provider's failures
// reach the caller.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include "background_commands.hpp"
#include "mayura/errors.hpp"
#include "mayura/sandboxes.hpp"

namespace mayura::detail {

using Clock = std::chrono::steady_clock;

struct SandboxesState {
  std::shared_ptr<SandboxProvider> provider;
  SandboxesOptions options;
  Features features;
  std::string workdir;
  boost::asio::any_io_executor executor;

  std::mutex mutex;
  bool closed = false;
  std::size_t reserved = 0;  // creates under way
  std::vector<std::weak_ptr<SandboxState>> live;
  // Asking every sandbox whether it is alive costs a call each: a create
  // does it only near the limit, or once the list has doubled since.
  std::size_t prune_at = 64;
  // Calls started on a provider (start_on) that have not yet completed: the
  // provider holds their completions, and with them the caller's work on its
  // executor. close() waits for them, so that a caller may destroy that
  // executor's context once close() has returned. Apart from this state: a
  // provider may keep what a call left behind a while after it completed,
  // and that must not keep this state, and with it the provider, alive.
  struct Calls {
    std::mutex mutex;
    std::condition_variable ended;
    std::size_t under_way = 0;
  };
  std::shared_ptr<Calls> calls = std::make_shared<Calls>();

  std::size_t count_live_locked();
};

struct SandboxState {
  std::shared_ptr<SandboxesState> owner;
  std::string id;
  std::map<std::string, std::string> labels;
  std::vector<int> ports;
  std::string workdir;
  std::optional<DesktopSize> desktop;
  Clock::time_point deadline;
  CreateOptions created;          // as it was created: what a fork makes again
  BackgroundCommands background;  // Sandbox::start's

  mutable std::mutex mutex;                 // guards backend against release while a call starts
  std::shared_ptr<SandboxBackend> backend;  // null once released

  std::shared_ptr<SandboxBackend> current() const {
    std::lock_guard lock(mutex);
    return backend;
  }
  std::shared_ptr<SandboxBackend> use();
  // use(), for a call that needs the sandbox's processes: a paused sandbox
  // resumed first.
  std::shared_ptr<SandboxBackend> use_running();
  // Pauses or resumes, once (a pause of a paused sandbox does nothing).
  void set_paused(bool paused);

  mutable std::mutex pause_mutex;  // held while a pause or resume is under way
  std::atomic<bool> paused{false};
  void end() noexcept;
  ~SandboxState() { end(); }
};

// A provider may throw anything; the caller sees only SandboxError, and only
// our words.
template <class Fn>
auto guarded(const char* what, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const SandboxError&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw SandboxError(Reason::INTERNAL, std::string(what) + " failed: out of memory");
  } catch (...) {
    throw SandboxError(Reason::INTERNAL, std::string(what) + " failed in the provider");
  }
}

inline void throw_if_cancelled(const std::stop_token& token) {
  if (token.stop_requested()) throw SandboxError(Reason::CANCELLED, "the operation was cancelled");
}

}  // namespace mayura::detail
