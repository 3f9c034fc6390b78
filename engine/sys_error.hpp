#pragma once
// Failures of the engine's kernel calls carry the step that failed and the
// errno, and become a SandboxError whose message names both.

#include <cerrno>
#include <cstring>
#include <string>

#include "mayura/errors.hpp"

namespace mayura {

[[noreturn]] inline void fail_step(const std::string& step, int error, Reason reason = Reason::INTERNAL) {
  throw SandboxError(reason, step + ": " + std::strerror(error));
}

// Throws with errno when `result` is negative; returns it otherwise.
template <class T>
T check_sys(T result, const std::string& step, Reason reason = Reason::INTERNAL) {
  if (result < 0) fail_step(step, errno, reason);
  return result;
}

}  // namespace mayura
