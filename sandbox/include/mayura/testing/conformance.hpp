#pragma once
// The contract's conformance suite: named tests that run against any sandbox
// through the Sandbox handle only, so that a provider's author checks a
// provider with the very tests the native one passes. It needs no test
// framework: each test returns its verdict as text, and any framework (or a
// plain loop) turns that into a test of its own.
//
//   for (const auto& test : mayura::testing::sandbox_conformance()) {
//     auto sandbox = sandboxes.create({.lifetime_ms = 600'000});
//     std::string verdict = test.run({sandbox});
//     sandbox.release();
//     // "passed", "not applicable: ...", or what differed
//   }
//
// What the suite asks of the sandbox it is given:
// - a POSIX shell at /bin/sh and the usual tools on PATH (awk, cat, env,
//   grep, head, ln, mkdir, od, sleep, tail, touch, tr, true, false, wc;
//   setsid where there is one), and /proc, where the suite looks for what
//   a stopped command left running;
// - a writable workdir; each test works in a directory of its own under it
//   and removes it, so tests share one sandbox and may run at once, except
//   those marked ends_sandbox;
// - the Sandboxes' limits at least max_output_bytes 1 MiB, max_read_bytes and
//   max_write_bytes 8 MiB, and a lifetime of a few minutes left.

#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mayura/sandboxes.hpp"

namespace mayura::testing {

struct ConformanceContext {
  Sandbox sandbox;
  // Where it came from: the tests of features that make sandboxes of their
  // own (disks, snapshots, fork, volumes; at most four alive at once, each
  // with a disk of 32 MiB, and a volume of 16 MiB, deleted before it ends)
  // need it, and are not applicable without it.
  std::optional<Sandboxes> sandboxes = {};
};

// A test's verdict when it found what the contract says.
inline constexpr std::string_view kConformancePassed = "passed";
// How a verdict starts when the sandbox's provider does not claim a feature
// the test is about (features()), so nothing of the feature could be tried;
// the rest of the verdict says why, and what was checked instead (the
// refusal the contract asks for). Never "passed", so that a runner reports
// it as what it is (recorded, or failed; a skip would hide it).
inline constexpr std::string_view kConformanceNotApplicable = "not applicable: ";

struct ConformanceTest {
  // Unique; letters, digits and underscores only, so that any framework can
  // use it as a test name ("exec_exit_codes").
  std::string name;
  // The test releases the sandbox: run it last, or give it one of its own.
  bool ends_sandbox = false;
  // "passed", a verdict starting kConformanceNotApplicable, or a text saying
  // what differed. Never throws.
  std::function<std::string(const ConformanceContext&)> run;
};

// Every test, those that end their sandbox last.
const std::vector<ConformanceTest>& sandbox_conformance();

// Whether a verdict is "not applicable: ...".
bool conformance_not_applicable(std::string_view verdict);

// Writes the test's name: how a framework that prints its parameters (as
// GoogleTest does) shows a test of the suite.
std::ostream& operator<<(std::ostream& out, const ConformanceTest& test);

}  // namespace mayura::testing
