#pragma once
// The reason of the SandboxError a call throws; a test failure if it throws
// none.

#include <gtest/gtest.h>

#include <string>

#include "mayura/errors.hpp"

namespace mayura::testing {

template <class Fn>
Reason reason_of(Fn&& fn, std::string* message = nullptr) {
  try {
    fn();
  } catch (const SandboxError& e) {
    if (message) *message = e.what();
    return e.reason();
  }
  ADD_FAILURE() << "expected a SandboxError";
  return Reason::INTERNAL;
}

}  // namespace mayura::testing
