// Per-run sandboxes: the first tool call of a run creates its sandbox (one
// create however many calls race), later calls share it, and the run's end
// releases it. A run that has ended stays known for a while, so a late call
// gets GONE instead of a new sandbox nobody would release.

#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>

#include "mayura/tools.hpp"

namespace mayura {
namespace {

// Ended runs remembered (a late call of one of them gets GONE).
constexpr std::size_t kEndedRemembered = 65536;

}  // namespace

struct SandboxPerRun::State {
  State(Sandboxes s, std::function<CreateOptions(const RunInfo&)> o) : sandboxes(std::move(s)), options(std::move(o)) {}

  Sandbox get(const RunContext& run) {
    if (run.run_id.empty()) throw SandboxError(Reason::INVALID_INPUT, "a per-run sandbox needs the run's id");
    std::shared_future<Sandbox> pending;
    bool creator = false;
    std::promise<Sandbox> promise;
    {
      std::lock_guard lock(mutex);
      if (closed) throw SandboxError(Reason::GONE, "the per-run sandboxes were closed");
      if (ended_set.count(run.run_id)) throw SandboxError(Reason::GONE, "the run has ended; its sandbox was released");
      auto it = runs.find(run.run_id);
      if (it == runs.end()) {
        pending = promise.get_future().share();
        runs.emplace(run.run_id, pending);
        creator = true;
      } else {
        pending = it->second;
      }
    }
    if (creator) create(run, promise);
    return pending.get();  // the creator's error, for every call that waited on it
  }

  void create(const RunContext& run, std::promise<Sandbox>& promise) {
    try {
      Sandbox made = sandboxes.create(options(RunInfo{run.run_id}), run.cancellation);
      {
        // Checked and handed out under one lock: a release either comes
        // before (and this sandbox goes at once) or finds it ready.
        std::lock_guard lock(mutex);
        if (!closed && !ended_set.count(run.run_id)) {
          promise.set_value(std::move(made));
          return;
        }
      }
      made.release();  // the run ended while its sandbox was being made
      throw SandboxError(Reason::GONE, "the run ended while its sandbox was being made");
    } catch (...) {
      {
        // A failed create is not kept: the next call of the run tries again.
        std::lock_guard lock(mutex);
        runs.erase(run.run_id);
      }
      promise.set_exception(std::current_exception());
    }
  }

  void release(const std::string& run_id) noexcept {
    std::shared_future<Sandbox> pending;
    {
      std::lock_guard lock(mutex);
      try {
        if (!ended_set.count(run_id)) {
          ended_set.insert(run_id);
          ended.push_back(run_id);
          if (ended.size() > kEndedRemembered) {
            ended_set.erase(ended.front());
            ended.pop_front();
          }
        }
      } catch (...) {
        // Out of memory: the run is not remembered as ended, but its
        // sandbox is still released below.
      }
      const auto it = runs.find(run_id);
      if (it == runs.end()) return;
      pending = it->second;
      runs.erase(it);
    }
    try {
      // A create under way finishes first; it sees the run ended and
      // releases what it made itself.
      if (pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
      pending.get().release();
    } catch (...) {
      // The create failed: nothing to release.
    }
  }

  std::size_t size() const {
    std::lock_guard lock(mutex);
    return runs.size();
  }

  void release_all() noexcept {
    std::map<std::string, std::shared_future<Sandbox>> held;
    {
      std::lock_guard lock(mutex);
      closed = true;  // a tool call after this makes nothing
      held.swap(runs);
    }
    for (auto& [id, pending] : held) {
      try {
        if (pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) pending.get().release();
      } catch (...) {
        // The create failed: nothing to release.
      }
    }
  }

  Sandboxes sandboxes;
  std::function<CreateOptions(const RunInfo&)> options;
  mutable std::mutex mutex;
  std::map<std::string, std::shared_future<Sandbox>> runs;
  bool closed = false;
  std::set<std::string> ended_set;
  std::deque<std::string> ended;
};

SandboxPerRun::~SandboxPerRun() { state_->release_all(); }

SandboxSource SandboxPerRun::source() const {
  return [state = state_](const RunContext& run) { return state->get(run); };
}

void SandboxPerRun::release(const std::string& run_id) noexcept { state_->release(run_id); }

std::size_t SandboxPerRun::size() const { return state_->size(); }

std::function<void(const std::string&)> SandboxPerRun::on_finally() const {
  return [state = state_](const std::string& run_id) { state->release(run_id); };
}

std::shared_ptr<SandboxPerRun> sandbox_per_run(Sandboxes sandboxes,
                                               std::function<CreateOptions(const RunInfo&)> options) {
  if (!options) throw SandboxError(Reason::INVALID_INPUT, "sandbox_per_run needs a function giving the create options");
  return std::shared_ptr<SandboxPerRun>(
      new SandboxPerRun(std::make_shared<SandboxPerRun::State>(std::move(sandboxes), std::move(options))));
}

}  // namespace mayura
