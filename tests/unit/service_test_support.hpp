#pragma once
// What the service's unit tests share: bytes by value, a call that must
// fail naming its words, and a value that has crossed the wire.
//
// The service's headers are included by their path: engine/ (on the unit
// tests' include path) has a wire.hpp of its own.

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <utility>

#include "service/wire.hpp"
#include "tests/support/reason_of.hpp"

namespace mayura::testing {

using nlohmann::json;

inline std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(static_cast<char>(v));
  return out;
}

// The call fails with `reason`, and its message holds every one of `words`.
template <class Fn>
void expect_refused(Fn&& fn, Reason reason, std::initializer_list<std::string> words) {
  std::string message;
  const Reason got = reason_of(std::forward<Fn>(fn), &message);
  EXPECT_EQ(got, reason) << "reason " << reason_name(got) << ", message: " << message;
  for (const auto& w : words) EXPECT_NE(message.find(w), std::string::npos) << "'" << w << "' not in: " << message;
}

// What crosses the wire is text: the value, dumped and parsed back as a body.
inline json over_the_wire(const json& value) { return service::parse_body(service::dump(value), "the body"); }

}  // namespace mayura::testing
