#pragma once
// A sandbox's resources, as a create, an operator's ceiling or default, and
// the HTTP API bound them: the one set of limits every layer checks (the
// contract's limits layer, the native engine, mayurad's settings and its
// wire), with the same words.

#include <cstdint>
#include <optional>

namespace mayura {

constexpr double kMaxCpus = 1024;
constexpr std::int64_t kMinMemoryMib = 16;  // less cannot run a shell and the sandbox's own helpers
constexpr std::int64_t kMaxMemoryMib = std::int64_t{1} << 30;
constexpr std::int64_t kMaxPids = std::int64_t{1} << 22;  // the kernel's own bound on pid_max

// A create's cpus (above 0, at most kMaxCpus), memory_mib (kMinMemoryMib to
// kMaxMemoryMib) and pids (1 to kMaxPids), each where given. Throws
// SandboxError(INVALID_INPUT) naming the first out of its range.
void check_resources(const std::optional<double>& cpus, const std::optional<std::int64_t>& memory_mib,
                     const std::optional<std::int64_t>& pids);

}  // namespace mayura
