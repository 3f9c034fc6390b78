#pragma once
// The suite by area; sandbox_conformance() puts them together.

#include <vector>

#include "mayura/testing/conformance.hpp"

namespace mayura::testing::conformance {

std::vector<ConformanceTest> exec_tests();      // results, output, env, cwd, stdin, streaming
std::vector<ConformanceTest> stop_tests();      // timeouts and cancellation
std::vector<ConformanceTest> file_tests();      // read, write, list, remove
std::vector<ConformanceTest> error_tests();     // reasons: NOT_FOUND, LIMIT_REACHED, INVALID_INPUT, CANCELLED
std::vector<ConformanceTest> disk_tests();      // disks, snapshots and fork (sandboxes of their own)
std::vector<ConformanceTest> lifetime_tests();  // GONE after release, pause and resume (each ends its sandbox)

}  // namespace mayura::testing::conformance
