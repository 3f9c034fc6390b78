#pragma once
// Failures of the engine's kernel calls carry the step that failed and the
// errno, and become a SandboxError whose message names both.

#include <cerrno>
#include <cstring>
#include <string>

#include "mayura/errors.hpp"

namespace mayura {

// The host limit an errno says was reached, or "" if it names none.
inline std::string host_limit_named_by(int error) {
  if (error == EMFILE) return "the engine's open-file limit (RLIMIT_NOFILE)";
  if (error == ENFILE) return "the host's open-file limit (fs.file-max)";
  if (error == ENOMEM) return "the host's memory (or the engine's memory cgroup's bound)";
  return "";
}

// An INTERNAL failure that a host limit caused is LIMIT_REACHED, naming it.
[[noreturn]] inline void fail_step(const std::string& step, int error, Reason reason = Reason::INTERNAL) {
  if (const std::string limit = host_limit_named_by(error); reason == Reason::INTERNAL && !limit.empty()) {
    throw SandboxError(Reason::LIMIT_REACHED, limit + " is reached: " + step + ": " + std::strerror(error));
  }
  throw SandboxError(reason, step + ": " + std::strerror(error));
}

// Throws with errno when `result` is negative; returns it otherwise.
template <class T>
T check_sys(T result, const std::string& step, Reason reason = Reason::INTERNAL) {
  if (result < 0) fail_step(step, errno, reason);
  return result;
}

}  // namespace mayura
