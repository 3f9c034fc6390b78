// What every provider gets unless it does better.

#include "mayura/provider.hpp"

#include <type_traits>

#include "pacing.hpp"

namespace mayura {

namespace {

// Runs `work()` on a blocking thread of `runtime` and gives `done` its
// result or failure. The backend outlives the call: the caller's `done`
// holds it.
template <class Work, class Done>
void on_blocking_thread(Runtime& runtime, Work work, Done done) {
  runtime.run_blocking([work = std::move(work), done = std::move(done)]() mutable {
    using R = decltype(work());
    std::exception_ptr error;
    if constexpr (std::is_void_v<R>) {
      try {
        work();
      } catch (...) {
        error = std::current_exception();
      }
      done(error);
    } else {
      R result{};
      try {
        result = work();
      } catch (...) {
        error = std::current_exception();
      }
      done(error, std::move(result));
    }
  });
}

}  // namespace

void SandboxBackend::use_runtime(std::shared_ptr<Runtime> runtime) {
  std::lock_guard lock(runtime_mutex_);
  runtime_ = std::move(runtime);
}

std::shared_ptr<Runtime> SandboxBackend::runtime() {
  std::lock_guard lock(runtime_mutex_);
  if (!runtime_) runtime_ = Runtime::make();
  return runtime_;
}

void SandboxBackend::async_exec(const std::vector<std::string>& argv, const ExecOptions& options, ExecCompletion done) {
  on_blocking_thread(
      *runtime(), [this, argv, options = detail::without_pacing(options)] { return exec(argv, options); },
      std::move(done));
}

void SandboxBackend::async_read_file(const std::string& path, const ReadOptions& options, ReadCompletion done) {
  on_blocking_thread(
      *runtime(), [this, path, options] { return read_file(path, options); }, std::move(done));
}

void SandboxBackend::async_write_file(const std::string& path, std::string data, const FileOptions& options,
                                      DoneCompletion done) {
  on_blocking_thread(
      *runtime(), [this, path, data = std::move(data), options] { write_file(path, data, options); }, std::move(done));
}

void SandboxBackend::async_list(const std::string& path, const FileOptions& options, ListCompletion done) {
  on_blocking_thread(
      *runtime(), [this, path, options] { return list(path, options); }, std::move(done));
}

void SandboxBackend::async_remove(const std::string& path, const FileOptions& options, DoneCompletion done) {
  on_blocking_thread(
      *runtime(), [this, path, options] { remove(path, options); }, std::move(done));
}

}  // namespace mayura
