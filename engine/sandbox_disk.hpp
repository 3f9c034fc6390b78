#pragma once
// A sandbox's disk: its working directory on a file system of its own, an
// ext4 made in a file under the engine's disk directory, attached to a loop
// device and mounted by the engine (the sandbox's root could do neither).
// Its size is its quota, which the kernel enforces: past it, a write inside
// fails ENOSPC, and the file's blocks were reserved on the host beforehand,
// so nothing the sandbox writes can fill the host's disk. The file is removed
// when the disk goes; the loop device lets go of it when the last mount of
// the file system goes with the sandbox's mount namespace.

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "mayura/base/unique_fd.hpp"

namespace mayura::native {

// Removes the disks in `dir` that no sandbox uses: those no loop device is
// bound to, made more than `grace` ago (a disk being made has no loop
// device yet). An engine that died left them; a live engine's disks are
// bound. Never throws.
void remove_orphan_disks(const std::string& dir, std::chrono::seconds grace = std::chrono::seconds(60)) noexcept;

class SandboxDisk {
 public:
  SandboxDisk() = default;
  // Makes `dir`/`name`.ext4 of `mib` MiB (its top directory owned by `uid`
  // and `gid` as the sandbox sees them), attaches it and mounts it. Throws
  // SandboxError naming the step: LIMIT_REACHED when the host has no room
  // for it, UNSUPPORTED when the host has no loop devices.
  SandboxDisk(const std::string& dir, const std::string& name, std::uint64_t mib, std::uint32_t uid, std::uint32_t gid);
  SandboxDisk(SandboxDisk&& other) noexcept : path_(std::exchange(other.path_, {})), mount_(std::move(other.mount_)) {}
  SandboxDisk& operator=(SandboxDisk&& other) noexcept;
  SandboxDisk(const SandboxDisk&) = delete;
  SandboxDisk& operator=(const SandboxDisk&) = delete;
  ~SandboxDisk() { remove(); }

  explicit operator bool() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  // The file system's detached mount, once: the launch idmaps it with the
  // sandbox's user namespace and hands it to the init.
  UniqueFd take_mount() { return std::move(mount_); }

 private:
  void remove() noexcept;
  std::string path_;
  UniqueFd mount_;
};

}  // namespace mayura::native
