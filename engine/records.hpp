#pragma once
// The engine's records of live sandboxes, one lock file per id slot under
// <state_dir>/slots. A live engine holds the flock of each slot it uses and
// removes the file when the sandbox is gone; a file that is there but
// unlocked was left by an engine that died, and whatever it names (the
// sandbox's cgroup, and with it every process) is removed before the slot is
// used again. A lock counts only if the file is still the one at the path
// (the classic lock-file check), so removing files never lets two engines
// hold one slot.

#include <cstdint>
#include <string>

#include "cgroups.hpp"
#include "fd.hpp"

namespace mayura::records {

// The lock file, in the state directory, that engines sharing it take
// around the host's nftables table for network all.
constexpr const char* kNetworkLock = "network.lock";

class SlotLease {
 public:
  SlotLease() = default;
  SlotLease(SlotLease&&) noexcept = default;
  SlotLease& operator=(SlotLease&&) noexcept = default;
  ~SlotLease() { clear(); }

  // A free slot (cleaning it first if a dead engine left it). Throws
  // SandboxError(LIMIT_REACHED) when every slot is taken.
  static SlotLease acquire(const std::string& state_dir, const cgroups::Places& places, std::uint32_t slots);

  std::uint32_t slot() const { return slot_; }
  // Says which cgroup is this slot's, before the cgroup is made.
  void record(const std::string& cgroup_path);
  // The sandbox is gone: empty the record and give the slot back.
  void clear() noexcept;

 private:
  UniqueFd fd_;
  std::string path_;
  std::uint32_t slot_ = 0;
};

// Makes the state directory (0700) and removes every sandbox that a dead
// engine left. Returns how many it removed.
int clean_orphans(const std::string& state_dir, const cgroups::Places& places);

// Removes the state directory if it holds no record (of any engine).
void remove_state_if_unused(const std::string& state_dir) noexcept;

}  // namespace mayura::records
