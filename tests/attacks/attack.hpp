#pragma once
// What every attack test shares: the probe put into a sandbox, and its
// `name=RESULT` lines read back.

#include <map>
#include <string>
#include <vector>

#include "tests/integration/harness.hpp"

namespace mayura::testing {

// The probe's bytes (read once from the build tree).
const std::string& probe_bytes();

// Copies the probe to /workspace/probe, executable.
void install_probe(const Sandbox& sandbox);

// The probe's output as name -> result (the last line of a name wins).
std::map<std::string, std::string> parse_results(const std::string& out);

// Runs `/workspace/probe args...` and parses its output; expects exit 0.
std::map<std::string, std::string> probe(const Sandbox& sandbox, const std::vector<std::string>& args,
                                         const ExecOptions& options = {});

// The test process's resident memory (it holds the engine) from
// /proc/self/status, in MiB: now (VmRSS) and at its peak (VmHWM) since the
// last reset_peak_memory().
long memory_mib();
long peak_memory_mib();
void reset_peak_memory();

// The host's Sandboxes fixture, named for the attack suite.
using AttackTest = NativeTest;

}  // namespace mayura::testing
