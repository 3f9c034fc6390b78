#pragma once
// Carries out a Plan inside the sandbox's fresh mount namespace, then makes
// it the root (pivot_root, the old root detached) and makes the root
// read-only. Runs in the in-sandbox init, single-threaded, before any command.

#include <cstdint>

#include "mayura/rootfs/plan.hpp"

namespace mayura::rootfs {

struct BuildResult {
  bool ok = true;
  std::uint32_t step = 0;  // the failing op's index, or one of the kStep values
  int error = 0;           // errno
};

constexpr std::uint32_t kStepPrivate = 100000;
constexpr std::uint32_t kStepRoot = 100001;
constexpr std::uint32_t kStepPivot = 100002;
constexpr std::uint32_t kStepReadOnly = 100003;

BuildResult build(const Plan& plan);

}  // namespace mayura::rootfs
