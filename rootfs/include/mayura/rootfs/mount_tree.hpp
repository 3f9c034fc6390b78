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

// The host trees a plan binds are cloned by the engine's child before it
// becomes the sandbox's root user (so an image in a directory only host root
// may enter still works), and reach the init as fds: the i-th bind op's tree
// is fd `first_source_fd + i`, or closed if an optional source was missing.
BuildResult build(const Plan& plan, int first_source_fd);

// The mount attributes (MOUNT_ATTR_*) a bind op's clone gets.
std::uint64_t bind_attributes(std::uint32_t op_flags);

}  // namespace mayura::rootfs
