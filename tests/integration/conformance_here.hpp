#pragma once
// What the conformance suite's entries must say of the engine on this host.

#include <gtest/gtest.h>

#include <string>

#include "harness.hpp"
#include "mayura/testing/conformance.hpp"

namespace mayura::testing {

// Expects the conformance entry `name`'s verdict on the engine here: passed,
// or not applicable where this host cannot give the feature (disk I/O
// bounds need cgroup2: hybrid and v1 hosts refuse them).
inline void expect_conformance(const std::string& name, const std::string& verdict) {
  if (name == "disk_io_bounded_or_refused" && test_layout().rfind("v2-", 0) != 0) {
    EXPECT_TRUE(conformance_not_applicable(verdict)) << name << ": " << verdict;
  } else {
    EXPECT_EQ(verdict, kConformancePassed) << name;
  }
}

}  // namespace mayura::testing
