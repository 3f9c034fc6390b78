// What every provider gets unless it does better.

#include "mayura/provider.hpp"

#include <thread>
#include <type_traits>

#include "pacing.hpp"

namespace mayura {

namespace {

// Runs `work()` on a thread of its own and gives `done` its result or
// failure. The backend outlives the thread: the caller's `done` holds it.
template <class Work, class Done>
void on_thread(Work work, Done done) {
  std::thread([work = std::move(work), done = std::move(done)]() mutable {
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
  }).detach();
}

}  // namespace

void SandboxBackend::async_exec(const std::vector<std::string>& argv, const ExecOptions& options, ExecCompletion done) {
  on_thread([this, argv, options = detail::without_pacing(options)] { return exec(argv, options); }, std::move(done));
}

void SandboxBackend::async_read_file(const std::string& path, const ReadOptions& options, ReadCompletion done) {
  on_thread([this, path, options] { return read_file(path, options); }, std::move(done));
}

void SandboxBackend::async_write_file(const std::string& path, std::string data, const FileOptions& options,
                                      DoneCompletion done) {
  on_thread([this, path, data = std::move(data), options] { write_file(path, data, options); }, std::move(done));
}

void SandboxBackend::async_list(const std::string& path, const FileOptions& options, ListCompletion done) {
  on_thread([this, path, options] { return list(path, options); }, std::move(done));
}

void SandboxBackend::async_remove(const std::string& path, const FileOptions& options, DoneCompletion done) {
  on_thread([this, path, options] { remove(path, options); }, std::move(done));
}

}  // namespace mayura
