#include "mayura/runtime.hpp"

#include <pthread.h>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_executor.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <vector>

#include "mayura/errors.hpp"

namespace mayura {
namespace {

// Which runtime the calling thread belongs to, if any.
thread_local const Runtime* current_runtime = nullptr;

// A blocking thread with nothing to do for this long ends; the next call
// that needs one starts it again.
constexpr auto kIdleBlockingThreadEnds = std::chrono::seconds(30);

void report(const char* where, const std::exception_ptr& error) noexcept {
  const char* what = "an exception that is not a std::exception";
  std::string message;
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    message = e.what();
    what = message.c_str();
  } catch (...) {
  }
  std::fprintf(stderr, "mayura: %s threw, and was let go: %s\n", where, what);
}

}  // namespace

struct Runtime::Reactor {
  boost::asio::io_context context;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{context.get_executor()};
  std::once_flag started;
  std::vector<OwnedThread> threads;
};

struct Runtime::Blocking {
  std::size_t max = 0;
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::function<void()>> queue;
  std::size_t idle = 0;  // threads waiting for a call, or about to take one
  bool stopping = false;
  std::uint64_t next_id = 0;
  std::map<std::uint64_t, OwnedThread> threads;
  std::vector<std::uint64_t> ended;  // threads whose function has returned, to be joined

  // Joins the threads that have ended (their owner's lock held, so the
  // threads are moved out and joined by the caller after it is let go).
  std::vector<OwnedThread> take_ended() {
    std::vector<OwnedThread> done;
    for (std::uint64_t id : ended) {
      auto it = threads.find(id);
      done.push_back(std::move(it->second));
      threads.erase(it);
    }
    ended.clear();
    return done;
  }

  void serve(const Runtime* owner, std::uint64_t id) {
    current_runtime = owner;
    std::unique_lock lock(mutex);
    for (;;) {
      if (!queue.empty()) {
        std::function<void()> call = std::move(queue.front());
        queue.pop_front();
        --idle;
        lock.unlock();
        try {
          call();
        } catch (...) {
          report("a blocking call on the runtime", std::current_exception());
        }
        // What the call holds goes before the lock is taken again: it may be
        // the runtime's last owner.
        call = nullptr;
        lock.lock();
        // A thread started past the bound (for a call that ends others)
        // takes no further call while the bound is passed: the bound holds
        // for the calls that wait their turn.
        if (threads.size() - ended.size() > max && !stopping) {
          ended.push_back(id);
          return;
        }
        ++idle;
        continue;
      }
      if (stopping) break;
      if (!wake.wait_for(lock, kIdleBlockingThreadEnds, [&] { return stopping || !queue.empty(); })) break;
    }
    --idle;
    if (!stopping) ended.push_back(id);
  }
};

Runtime::Runtime(Options options)
    : reactor_threads_(options.reactor_threads ? options.reactor_threads
                                               : std::max(2u, std::thread::hardware_concurrency())),
      reactor_(std::make_unique<Reactor>()),
      blocking_(std::make_unique<Blocking>()) {
  blocking_->max = std::max<std::size_t>(1, options.max_blocking);
}

std::shared_ptr<Runtime> Runtime::make(Options options) {
  return std::shared_ptr<Runtime>(new Runtime(options), [](Runtime* runtime) {
    if (!runtime->on_own_thread()) {
      delete runtime;
      return;
    }
    // The one reference moves into the posted handler, none is left here:
    // the runtime must not go on this thread, whenever that handler runs.
    boost::asio::post(boost::asio::system_executor(), [last = std::shared_ptr<Runtime>(runtime)] {});
  });
}

Runtime::~Runtime() {
  // The blocking calls first: one may be waiting on the reactor.
  std::map<std::uint64_t, OwnedThread> blocking;
  {
    std::lock_guard lock(blocking_->mutex);
    blocking_->stopping = true;
    blocking.swap(blocking_->threads);
    blocking_->ended.clear();
  }
  blocking_->wake.notify_all();
  blocking.clear();  // joins each, once the queue is drained
  reactor_->work.reset();
  reactor_->context.stop();
  reactor_->threads.clear();
}

boost::asio::any_io_executor Runtime::executor() {
  std::call_once(reactor_->started, [this] {
    // Only those still missing, should an earlier start have failed partway.
    while (reactor_->threads.size() < reactor_threads_) {
      reactor_->threads.emplace_back("mayura-reactor", [this] {
        current_runtime = this;
        for (;;) {
          try {
            reactor_->context.run();
            return;
          } catch (...) {
            report("a handler on the runtime's reactor", std::current_exception());
          }
        }
      });
    }
  });
  return reactor_->context.get_executor();
}

void Runtime::run_blocking(std::function<void()> call, Turn turn) {
  std::vector<OwnedThread> ended;
  {
    std::lock_guard lock(blocking_->mutex);
    Blocking& b = *blocking_;
    ended = b.take_ended();
    // A call that ends others goes first: the next free thread, or the one
    // started for it past the bound, takes it before any that waits.
    if (turn == Turn::now) {
      b.queue.push_front(std::move(call));
    } else {
      b.queue.push_back(std::move(call));
    }
    const std::size_t alive = b.threads.size();
    if (b.queue.size() <= b.idle || (turn == Turn::queue && alive >= b.max)) {
      b.wake.notify_one();
    } else {
      try {
        const std::uint64_t id = b.next_id++;
        const auto it = b.threads.try_emplace(id).first;
        try {
          it->second = OwnedThread("mayura-blocking", [this, id] { blocking_->serve(this, id); });
        } catch (...) {
          b.threads.erase(it);
          throw;
        }
        ++b.idle;  // counted once it exists, so that no call waits for a thread that never came
      } catch (const std::exception& e) {
        // A call that waits its turn waits for one of those that run; a
        // call that ends others must not (they may be waiting on it).
        if (turn == Turn::queue && alive > 0) return;
        if (turn == Turn::now) {
          b.queue.pop_front();
        } else {
          b.queue.pop_back();
        }
        throw SandboxError(Reason::LIMIT_REACHED, std::string("starting a blocking thread: ") + e.what());
      }
    }
  }
}

std::size_t Runtime::blocking_threads() const {
  std::lock_guard lock(blocking_->mutex);
  return blocking_->threads.size() - blocking_->ended.size();
}

bool Runtime::on_own_thread() const noexcept { return current_runtime == this; }

void OwnedThread::named(const std::string& name) noexcept {
  ::pthread_setname_np(::pthread_self(), name.substr(0, 15).c_str());
}

void OwnedThread::report_escape(const std::string& name) noexcept {
  report(("the thread " + name).c_str(), std::current_exception());
}

}  // namespace mayura
