// What every provider gets unless it does better.

#include "mayura/provider.hpp"

#include <thread>

#include "pacing.hpp"

namespace mayura {

void SandboxBackend::async_exec(const std::vector<std::string>& argv, const ExecOptions& options, ExecCompletion done) {
  // The backend outlives this thread: the caller's `done` holds it.
  std::thread([this, argv, options = detail::without_pacing(options), done = std::move(done)] {
    ExecResult result;
    std::exception_ptr error;
    try {
      result = exec(argv, options);
    } catch (...) {
      error = std::current_exception();
    }
    done(error, std::move(result));
  }).detach();
}

}  // namespace mayura
