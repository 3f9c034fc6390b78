#pragma once
// The engine's records of live sandboxes, in the state directory, shared by
// every engine that uses it:
//   engines/<id>   one per live engine, flocked by it for its whole life
//   slots/<N>      one per id slot in use: "engine <id>\n<cgroup path>\n",
//                  and, for a sandbox that outlives its engine, one more
//                  line, "kept <what a later engine needs to take it back>"
// A slot is claimed by linking a record, already written, to its name (so a
// record is never seen half made), and given back by unlinking it. A record
// whose engine's file is gone or unlocked was left by an engine that died:
// whatever it names (the sandbox's cgroup, and with it every process) is
// removed before the slot is used again, unless a later engine takes the
// sandbox back (live restore: EngineLock::take_back). A live sandbox holds
// no descriptor for its record: an engine holds one, for all its sandboxes.

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "cgroups.hpp"
#include "mayura/base/unique_fd.hpp"

namespace mayura::records {

// The lock file, in the state directory, that engines sharing it take
// around the host's nftables table for network all.
constexpr const char* kNetworkLock = "network.lock";

class SlotLease;

// This engine's life, as other engines see it: its file in engines/, locked
// while it lives. Made before any slot is claimed; goes after every lease.
class EngineLock {
 public:
  EngineLock() = default;
  // Makes the state directory (0700) if need be. Throws SandboxError.
  EngineLock(const std::string& state_dir, std::uint32_t slots);
  EngineLock(const EngineLock&) = delete;
  EngineLock& operator=(const EngineLock&) = delete;
  ~EngineLock() { release(); }
  const std::string& id() const { return id_; }
  void release() noexcept;

  // A free slot, recorded as this engine's, naming `cgroup_path` (before
  // the cgroup is made), after cleaning what a dead engine left in it.
  // Throws SandboxError(LIMIT_REACHED) when every slot is taken.
  SlotLease claim(const cgroups::Places& places, const std::string& cgroup_path);

  // A sandbox an engine that died left with a kept line, offered to
  // `take`: its slot is this engine's by then (its record names this
  // engine, so no other engine removes it meanwhile), and `take` owes the
  // lease either a sandbox taken back or an end that removes its cgroup.
  struct Left {
    std::uint32_t slot = 0;
    std::string cgroup;
    std::string kept;
  };
  void take_back(const std::function<void(const Left&, SlotLease)>& take);

 private:
  friend class SlotLease;
  void give_back(std::uint32_t slot) noexcept;
  std::string state_dir_;
  UniqueFd fd_;
  std::string path_;
  std::string id_;
  std::mutex mutex_;
  std::vector<bool> held_;  // the slots this engine's leases hold: never probed
};

class SlotLease {
 public:
  SlotLease() = default;
  SlotLease(SlotLease&& other) noexcept { *this = std::move(other); }
  SlotLease& operator=(SlotLease&& other) noexcept;
  ~SlotLease() { clear(); }

  std::uint32_t slot() const { return slot_; }
  // Writes `kept` (one line) into the record, in place of any before: what
  // a later engine needs to take the sandbox back should this one die.
  // A reader sees the record before or after, never half of it.
  void keep(const std::string& kept);
  // The sandbox is gone: give the slot back.
  void clear() noexcept;
  // Lets go of the slot and leaves its record: for a sandbox whose cgroup
  // could not be removed, which the next engine tries again (this one
  // never uses the slot again).
  void keep_record() noexcept { engine_ = nullptr; }

 private:
  friend class EngineLock;
  EngineLock* engine_ = nullptr;
  std::string path_;
  std::string cgroup_;
  std::uint32_t slot_ = 0;
};

// Makes the state directory (0700) and removes every sandbox that a dead
// engine left. Returns how many it removed.
int clean_orphans(const std::string& state_dir, const cgroups::Places& places);

// Removes the state directory if it holds no record and no engine.
void remove_state_if_unused(const std::string& state_dir) noexcept;

}  // namespace mayura::records
