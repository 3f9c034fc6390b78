#pragma once
// A provider that makes no sandbox: it records what reached it and answers
// with whatever the test set, so the limits layer can be tested alone.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>
#include <functional>

#include "mayura/sandbox.hpp"

namespace mayura::testing {

struct FakeState {
  std::mutex mutex;
  std::condition_variable changed;  // a command arrived
  int creates = 0;
  int releases = 0;
  std::vector<std::vector<std::string>> commands;
  ExecResult next_result{0, "out", "err", false, 1, false};
  std::string file_data = "data";
  std::vector<FileEntry> listing;
  bool alive = true;
  bool throw_foreign = false;  // throw a non-SandboxError from exec
  bool block_until_cancelled = false;
  int blocked_then_cancelled = 0;  // execs that blocked and saw their cancellation
  std::vector<DesktopAction> desktop_actions;
  // A screenshot's answer: a PNG's signature is all the limits layer checks.
  std::string screenshot = std::string("\x89PNG\r\n\x1a\n", 8) + "pixels";
  std::string cursor = "5 6\n";
  // Async reads held until release, then completed GONE from a thread of
  // the fake's a moment later, as a provider that ends its sandboxes off the
  // caller's path does.
  bool hold_reads_until_release = false;
  // Async reads completed at once, with a copy of each completion kept, as
  // a provider's operation may outlive its completion a while.
  bool keep_completed_reads = false;
  std::vector<std::function<void(std::exception_ptr, std::string)>> kept_reads;
  std::vector<std::function<void(std::exception_ptr, std::string)>> held_reads;
  // Async execs completed at once with next_result, their options kept, as
  // the native engine keeps a completed exec's options until its last timer
  // has run.
  bool keep_completed_exec_options = false;
  std::vector<ExecOptions> kept_exec_options;
  std::thread completer;

  ~FakeState() {
    if (completer.joinable()) completer.join();
  }
  std::size_t reads_held() {
    std::lock_guard lock(mutex);
    return held_reads.size();
  }

  // Waits until `count` commands have reached the backend; false if they
  // have not within `bound` (a backstop, not a measure).
  bool wait_for_commands(std::size_t count, std::chrono::seconds bound = std::chrono::seconds(30)) {
    std::unique_lock lock(mutex);
    return changed.wait_for(lock, bound, [&] { return commands.size() >= count; });
  }
};

class FakeBackend final : public SandboxBackend {
 public:
  explicit FakeBackend(std::shared_ptr<FakeState> s) : s_(std::move(s)) {}
  ExecResult exec(const std::vector<std::string>& argv, const ExecOptions& options) override {
    {
      std::lock_guard lock(s_->mutex);
      s_->commands.push_back(argv);
      s_->changed.notify_all();
      if (s_->throw_foreign) throw std::runtime_error("provider internals: secret token 1234");
    }
    if (s_->block_until_cancelled) {
      while (!options.cancellation.stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      {
        std::lock_guard lock(s_->mutex);
        ++s_->blocked_then_cancelled;
      }
      throw SandboxError(Reason::CANCELLED, "cancelled");
    }
    std::lock_guard lock(s_->mutex);
    return s_->next_result;
  }
  std::string read_file(const std::string&, const ReadOptions&) override { return s_->file_data; }
  void write_file(const std::string&, std::string_view data, const FileOptions&) override {
    s_->file_data = std::string(data);
  }
  std::vector<FileEntry> list(const std::string&, const FileOptions&) override { return s_->listing; }
  void remove(const std::string&, const FileOptions&) override {}
  std::string url(int port) override { return "http://127.0.0.1:" + std::to_string(port); }
  void async_read_file(const std::string& path, const ReadOptions& options, ReadCompletion done) override {
    {
      std::lock_guard lock(s_->mutex);
      if (s_->hold_reads_until_release) {
        s_->held_reads.push_back(std::move(done));
        return;
      }
      if (s_->keep_completed_reads) s_->kept_reads.push_back(done);
    }
    if (s_->keep_completed_reads) return done(nullptr, s_->file_data);
    SandboxBackend::async_read_file(path, options, std::move(done));
  }
  void async_exec(const std::vector<std::string>& argv, const ExecOptions& options, ExecCompletion done) override {
    std::unique_lock lock(s_->mutex);
    if (!s_->keep_completed_exec_options) {
      lock.unlock();
      return SandboxBackend::async_exec(argv, options, std::move(done));
    }
    s_->kept_exec_options.push_back(options);
    ExecResult result = s_->next_result;
    lock.unlock();
    done(nullptr, std::move(result));
  }
  void release() noexcept override {
    std::lock_guard lock(s_->mutex);
    ++s_->releases;
    if (!s_->held_reads.empty() && !s_->completer.joinable()) {
      FakeState* state = s_.get();  // joined by the state's destructor
      s_->completer = std::thread([state] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        std::vector<ReadCompletion> reads;
        {
          std::lock_guard held(state->mutex);
          reads.swap(state->held_reads);
        }
        for (auto& done : reads) done(std::make_exception_ptr(SandboxError(Reason::GONE, "released")), {});
      });
    }
  }
  bool alive() const noexcept override { return s_->alive; }
  std::string desktop(const DesktopAction& action, std::stop_token) override {
    std::lock_guard lock(s_->mutex);
    s_->desktop_actions.push_back(action);
    if (action.kind == DesktopAction::Kind::screenshot) return s_->screenshot;
    if (action.kind == DesktopAction::Kind::cursor) return s_->cursor;
    return "";
  }

 private:
  std::shared_ptr<FakeState> s_;
};

class FakeProvider final : public SandboxProvider {
 public:
  explicit FakeProvider(Features f = default_features()) : features_(std::move(f)) {}
  static Features default_features() {
    Features f;
    f.stdin = true;
    f.ports = true;
    f.network = {NetworkKind::none, NetworkKind::all, NetworkKind::allowlist};
    return f;
  }
  std::string id() const override { return "fake"; }
  Features features() const override { return features_; }
  std::string workdir() const override { return "/work"; }
  std::int64_t max_lifetime_ms() const override { return 3'600'000; }
  std::unique_ptr<SandboxBackend> create(const CreateOptions&, std::stop_token) override {
    std::lock_guard lock(state->mutex);
    ++state->creates;
    return std::make_unique<FakeBackend>(state);
  }
  std::shared_ptr<FakeState> state = std::make_shared<FakeState>();

 private:
  Features features_;
};

}  // namespace mayura::testing
