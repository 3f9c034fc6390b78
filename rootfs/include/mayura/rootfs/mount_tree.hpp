#pragma once
// Carries out a Plan inside the sandbox's fresh mount namespace, then makes
// it the root (pivot_root, the old root detached) and makes the root
// read-only. Runs in the in-sandbox init, single-threaded, before any command.

#include <cstdint>

#include <vector>

#include "mayura/rootfs/plan.hpp"
#include "mayura/base/unique_fd.hpp"

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

// Clones (detached, private, with the op's flags) the host tree of every
// bind op: trees[i] for op i, empty for other ops and for an optional source
// that is not there. Done before the process becomes root of its user
// namespace, so an image under a directory only host root may enter works.
BuildResult clone_sources(const Plan& plan, std::vector<UniqueFd>& trees);

// Builds the root from the plan, the cloned trees and the detached mounts
// the engine handed over (`handed`: an image_layers op's layers, bottom
// first, one per line of its data; then one for each handed op, in plan
// order); and enters it.
BuildResult build(const Plan& plan, std::vector<UniqueFd>& sources, std::vector<UniqueFd>& handed);

// The mount attributes (MOUNT_ATTR_*) a bind op's clone gets.
std::uint64_t bind_attributes(std::uint32_t op_flags);

}  // namespace mayura::rootfs
