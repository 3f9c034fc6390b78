#pragma once
// Where the engine keeps volumes: one ext4 file per volume (made with
// libext2fs, its blocks reserved on the host, its size its quota), under a
// directory per tenant (tenant_dirs.hpp). A volume outlives sandboxes and
// engines until deleted. A sandbox that mounts one holds an exclusive lock
// on its file for as long as it lives: one sandbox at a time, and no
// deletion while it is in use.

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "mayura/base/unique_fd.hpp"
#include "mayura/types.hpp"

namespace mayura::native {

// A volume held for one sandbox: its lock, and its data directory's
// detached mount.
struct HeldVolume {
  std::string path;
  UniqueFd lock;     // the volume's file, locked: released as the sandbox ends
  UniqueFd mount;    // handed to the init (idmapped first)
  dev_t device = 0;  // its loop device's number, which its I/O bounds name
  // Set as its sandbox's end begins: a create asking for the volume then
  // waits for the lock instead of failing "in use".
  std::shared_ptr<std::atomic<bool>> ending = std::make_shared<std::atomic<bool>>(false);
  void ends() noexcept { ending->store(true); }
  // Once the sandbox's processes and mounts are gone: waits (bounded) for
  // the kernel to let go of the volume's loop device, then unlocks it, so
  // that the next sandbox never mounts it while this one's file system
  // still may write. Never throws.
  void let_go() noexcept;
};

class VolumeStore {
 public:
  // `uid` and `gid`: the owner of a new volume's data directory, as a
  // sandbox sees ids (the engine's sandbox user).
  VolumeStore(std::string dir, std::uint32_t uid, std::uint32_t gid) : dir_(std::move(dir)), uid_(uid), gid_(gid) {}

  // INVALID_INPUT if `owner` has one of that name; LIMIT_REACHED when the
  // host has no room. Made whole or not at all.
  Volume create(const std::string& owner, const std::string& name, std::int64_t size_mib) const;
  std::vector<Volume> list(const std::string& owner) const;
  // NOT_FOUND if there is none; INVALID_INPUT while a sandbox uses it (one
  // of this engine's whose end has begun is waited for, at most 10 s).
  void remove(const std::string& owner, const std::string& name);
  // Locks and mounts `owner`'s volume for a sandbox: NOT_FOUND if there is
  // none, INVALID_INPUT while another sandbox uses it (one of this
  // engine's whose end has begun is waited for, at most 10 s).
  HeldVolume hold(const std::string& owner, const std::string& name, bool read_only);
  // The volume at `path` that a sandbox an engine before this one made
  // still has mounted (live restore), locked again for it: INVALID_INPUT if
  // it is no volume of this store or another holds it, GONE if no loop
  // device holds it any more.
  HeldVolume take_back(const std::string& path);

 private:
  std::string path(const std::string& owner, const std::string& name) const;
  // Whether the volume at `path` is held by one of this engine's sandboxes
  // whose end has begun.
  bool held_by_an_ending_sandbox(const std::string& file) const;
  // The volume's file, locked; one of this engine's sandboxes whose end
  // has begun is waited for (at most 10 s).
  UniqueFd lock_waiting_for_an_ending_sandbox(const std::string& file, const std::string& name, int mode);
  mutable std::mutex mutex_;
  std::map<std::string, std::weak_ptr<std::atomic<bool>>> holders_;  // by path, under mutex_
  std::string dir_;
  std::uint32_t uid_;
  std::uint32_t gid_;
};

}  // namespace mayura::native
